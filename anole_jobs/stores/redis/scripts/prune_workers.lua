-- Delete the records whose expiry is at or before now, in one atomic step (a record a
-- heartbeat renewed meanwhile has a later score and stays). ARGV: prefix, now score
local ids = redis.call('ZRANGEBYSCORE', K_worker_expiry(), '-inf', ARGV[2])
for _, id in ipairs(ids) do
  redis.call('HDEL', K_workers(), id)
  redis.call('HDEL', K_worker_controls(), id)
  redis.call('ZREM', K_worker_expiry(), id)
end
return #ids
