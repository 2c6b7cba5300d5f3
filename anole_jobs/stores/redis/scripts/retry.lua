-- retry: ARGV[2] id, [3] now key. Makes the job available now whatever its state; a running
-- worker's later writes then fail their fence. A job out of attempts gets one more. A finished
-- job whose live unique key another live job now holds is left as it is (reviving it would
-- make two live jobs with one key). Returns the job's record, or nil if there is none.
local j = load(ARGV[2])
if not j then return false end
-- A pending workflow step runs when its dependencies allow, not before.
if j.state == 'pending' then return record_of(j.id) end
local reopen = j.wf and (j.state == 'dead' or j.state == 'cancelled')
if j.ukey and not holds_unique(j) then
  local held_by = holder(j.ukey)
  if held_by and held_by ~= j.id then return record_of(j.id) end
  redis.call('SET', K_u(j.ukey), j.id)
end
leave(j)
if j.state == 'running' then
  end_attempt(j, 'restarted', ARGV[3])
elseif j.state == 'completed' then
  keep_completed_attempt(j)
end
if tonumber(j.attempt) >= tonumber(j.max) then
  set(j, 'max', string.format('%d', tonumber(j.attempt) + 1))
end
set(j, 'state', 'available')
set(j, 'sched', ARGV[3])
set(j, 'finished', false)
set(j, 'result', false)  -- it runs again: its result will be the next completion's
enter(j)
save(j)
if reopen then wf_reopen(j.id) end  -- what its ending cancelled waits for it again
return done(record_of(j.id))
