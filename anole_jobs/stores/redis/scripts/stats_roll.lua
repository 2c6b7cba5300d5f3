-- Roll the hours that ended up into their history hashes (see anole_jobs.stores.stats).
-- ARGV: prefix, the last hour that ended (hours since 1970 UTC), the history's expiry (seconds).
-- The jobs' scripts already keep each hour's minutes summed in its `stath:` hash, so an hour's
-- roll-up is a copy of that hash (one read, not sixty): from the last hour rolled (again: a run
-- that ended just before the hour's end may be counted a little after it) or, before any, the
-- oldest hour kept, through ARGV[2]. A copy is written only when it counts more moves than the
-- history holds, so a second roll-up, or one from another leader, changes nothing. One script:
-- no other roll-up runs half-way through it. Returns how many hashes it wrote.
local last, keep = tonumber(ARGV[2]), tonumber(ARGV[3])
local first
local top = redis.call('ZREVRANGE', K_sthistm(), 0, 0, 'WITHSCORES')
if #top > 0 then
  first = tonumber(top[2])
else
  local oldest = redis.call('ZRANGE', K_stathm(), 0, 0, 'WITHSCORES')
  if #oldest == 0 then return 0 end
  first = tonumber(oldest[2])
end
if first > last then return 0 end
local MOVES = {started = true, completed = true, retried = true, dead = true}
local skip = #K_stathm() + 1  -- "<prefix>stath:"
local written = 0
for _, key in ipairs(redis.call('ZRANGEBYSCORE', K_stathm(), first, last)) do
  local flat = redis.call('HGETALL', key)
  if #flat > 0 then  -- else it expired since it was indexed
    local rest = string.sub(key, skip + 1)
    local colon = string.find(rest, ':', 1, true)
    local hour = tonumber(string.sub(rest, 1, colon - 1))
    local target = K_sthist(hour, string.sub(rest, colon + 1))
    local counted, before = 0, 0
    for i = 1, #flat, 2 do
      if MOVES[flat[i]] then counted = counted + tonumber(flat[i + 1]) end
    end
    for _, n in ipairs(redis.call('HMGET', target, 'started', 'completed', 'retried', 'dead')) do
      before = before + (tonumber(n) or 0)
    end
    if counted > before then
      redis.call('DEL', target)
      redis.call('HSET', target, unpack(flat))
      redis.call('EXPIRE', target, keep)
      redis.call('ZADD', K_sthistm(), hour, target)
      written = written + 1
    end
  end
end
return written
