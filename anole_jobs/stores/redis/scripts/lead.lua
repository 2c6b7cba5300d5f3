-- lead: ARGV[2] instance, [3] now key, [4] expiry key (now + ttl), [5] ttl in ms.
-- SET NX PX takes a free leadership; otherwise compare-and-extend: the holder extends its own,
-- and anyone takes one whose expiry (on the configured clock, stored in the value) has passed.
-- PX only lets Redis drop the key of a leader that vanished; the stored expiry decides, so the
-- store agrees with a fake clock as memory.py does. Returns 1 when `instance` leads.
local instance, now, expiry, ttl = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local value = instance .. '|' .. expiry
if redis.call('SET', K_leader(), value, 'NX', 'PX', ttl) then return 1 end
local current = redis.call('GET', K_leader())
if current then
  local bar = string.find(current, '|[^|]*$')
  local holder_instance, held_until = string.sub(current, 1, bar - 1), string.sub(current, bar + 1)
  if holder_instance ~= instance and held_until > now then return 0 end
end
redis.call('SET', K_leader(), value, 'PX', ttl)
return 1
