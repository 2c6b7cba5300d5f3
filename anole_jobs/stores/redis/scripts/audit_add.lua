-- Append one entry to the operators' audit log, keeping at most the newest ARGV[5].
-- ARGV: prefix, entry JSON (without its id), time score, id width, cap. Returns the new id.
local id = redis.call('INCR', K_audit_seq())
local member = string.format('%0' .. ARGV[4] .. 'd', id) .. ARGV[2]
redis.call('ZADD', K_audit(), ARGV[3], member)
redis.call('ZREMRANGEBYRANK', K_audit(), 0, -(tonumber(ARGV[5]) + 1))
return id
