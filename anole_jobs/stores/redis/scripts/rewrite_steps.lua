-- rewrite_steps: ARGV[2] id, ARGV[3] the job's steps as read ('' when it had none), ARGV[4]
-- the steps to store instead. Writes them only if the job's steps are still those read (a
-- step recorded meanwhile must not be lost: the caller reads again and retries); returns 1
-- when written, 0 when they changed meanwhile, -1 when there is no such job (jobs reencrypt).
local j = load(ARGV[2])
if not j then return -1 end
local key = K_job(j.id)
local steps = redis.call('HGET', key, 'steps') or ''
if steps ~= ARGV[3] then return 0 end
redis.call('HSET', key, 'steps', ARGV[4])
return 1
