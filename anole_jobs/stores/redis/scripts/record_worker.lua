-- Create or replace one worker's record and its expiry (worker presence).
-- ARGV: prefix, worker id, record JSON, expiry score (seconds since the Unix epoch)
redis.call('HSET', K_workers(), ARGV[2], ARGV[3])
redis.call('ZADD', K_worker_expiry(), ARGV[4], ARGV[2])
return 1
