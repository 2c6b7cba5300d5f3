-- Record an operator's request to one listed worker; a "stop" recorded already is kept over
-- a later "quiet". ARGV: prefix, worker id, request JSON, its action, now score.
-- Returns 1 when the worker is listed (written or kept), 0 when not.
local expiry = redis.call('ZSCORE', K_worker_expiry(), ARGV[2])
if not expiry or tonumber(expiry) <= tonumber(ARGV[5]) then return 0 end
if ARGV[4] ~= 'stop' then
  local old = redis.call('HGET', K_worker_controls(), ARGV[2])
  if old and string.find(old, '{"action":"stop"', 1, true) == 1 then return 1 end
end
redis.call('HSET', K_worker_controls(), ARGV[2], ARGV[3])
return 1
