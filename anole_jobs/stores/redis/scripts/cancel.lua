-- cancel: ARGV[2] id, [3] now key, [4] wake-up channel, [5] finished channel. A waiting or running job becomes cancelled (a running
-- worker's later writes then fail their fence); a finished job is left as it is.
-- Returns the job's record, or nil if there is none.
local j = load(ARGV[2])
if not j then return false end
if LIVE[j.state] then
  leave(j)
  if j.state == 'running' then end_attempt(j, 'cancelled', ARGV[3]) end
  set(j, 'state', 'cancelled')
  set(j, 'finished', ARGV[3])
  enter(j)
  save(j)
  if j.wf then  -- a workflow step: settle its dependents
    redis.call('HDEL', K_job(j.id), 'cby')
    wf_settle(j, ARGV[3])
    wf_publish(ARGV[4], ARGV[5])
  end
end
return done(record_of(j.id))
