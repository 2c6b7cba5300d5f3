-- await_signal: ARGV[2] id, [3] attempt, [4] token, [5] the signal name the job is parked
-- for ('' for none), [6] its deadline's time key ('' for none). Fenced like finish: sets the
-- `awaiting` field and keeps the first deadline of the name (`wait:<name>`); returns 1, or 0
-- when the run is no longer current.
local j = load(ARGV[2])
if not fenced(j, ARGV[3], ARGV[4]) then return 0 end
local key = K_job(j.id)
if ARGV[5] == '' then
  redis.call('HDEL', key, 'awaiting')
else
  redis.call('HSET', key, 'awaiting', ARGV[5])
  if ARGV[6] ~= '' then redis.call('HSETNX', key, 'wait:' .. ARGV[5], ARGV[6]) end
end
return 1
