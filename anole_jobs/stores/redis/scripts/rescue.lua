-- rescue: ARGV[2] now key, [3] now iso, [4] limit, [5] wake-up channel, [6] finished channel
-- (for the workflow steps a kill settles). Every running job whose lease ended before
-- now goes back to available (scheduled now), or dead on its last attempt, with a LeaseExpired
-- error. Only jobs still running are in the running set, so a job that finished meanwhile is
-- never touched. Returns {id, kind, queue, new state} per rescued job, flattened.
local now, now_iso = ARGV[2], ARGV[3]
-- lease < now exactly: a member with lease == now is longer than `now`, so it sorts after it.
local lapsed = redis.call('ZRANGEBYLEX', K_running(), '-', '(' .. now, 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for _, member in ipairs(lapsed) do
  local j = load(member_id(member))
  if j and j.state == 'running' then
    local lease_iso = redis.call('HGET', K_job(j.id), 'lease_iso') or '?'
    leave(j)
    end_attempt(j, 'rescued', now)
    append_error(j, cjson.encode({
      at = now_iso,
      attempt = tonumber(j.attempt),
      type = 'LeaseExpired',
      message = 'the lease ended at ' .. lease_iso .. ' before the run reported',
      traceback = '',
    }))
    if tonumber(j.attempt) >= tonumber(j.max) then
      set(j, 'state', 'dead')
      set(j, 'finished', now)
    else
      set(j, 'state', 'available')
      set(j, 'sched', now)
    end
    enter(j)
    stat_ended(j, j.state, now, true)
    save(j)
    if j.wf and j.state == 'dead' then wf_settle(j, now) end
    for _, value in ipairs({tonumber(j.id), j.kind, j.queue, j.state}) do out[#out + 1] = value end
  else
    zrem(K_running(), member)  -- a stale entry (the job hash evicted?): drop it
  end
end
wf_publish(ARGV[5], ARGV[6])
return done(out)
