-- Delete one worker's record (a runtime stopping cleanly). ARGV: prefix, worker id
redis.call('ZREM', K_worker_expiry(), ARGV[2])
redis.call('HDEL', K_worker_controls(), ARGV[2])
return redis.call('HDEL', K_workers(), ARGV[2])
