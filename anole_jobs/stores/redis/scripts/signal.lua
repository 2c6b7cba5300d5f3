-- signal: ARGV[2] id, [3] name, [4] payload JSON, [5] now key. Stores the signal as the
-- job's field `sig:<name>` unless it has one of that name or is finished; a `scheduled` job
-- parked for that name becomes available now in the same script. Returns {code, queue}:
-- code -1 unknown job, 0 nothing stored, 1 stored, 2 stored and the job woken.
local j = load(ARGV[2])
if not j then return {-1, ''} end
if FINAL[j.state] then return {0, j.queue} end
local key = K_job(j.id)
if redis.call('HSETNX', key, 'sig:' .. ARGV[3], ARGV[4]) == 0 then return {0, j.queue} end
if j.state == 'scheduled' and redis.call('HGET', key, 'awaiting') == ARGV[3] then
  leave(j)
  set(j, 'state', 'available')
  set(j, 'sched', ARGV[5])
  enter(j)
  save(j)
  return done({2, j.queue})
end
return {1, j.queue}
