-- rewrite_payload: ARGV[2] id, ARGV[3] args JSON ('' keeps them), ARGV[4] result JSON text
-- ('' keeps it). Replaces a job's stored args and/or result whatever its state (jobs reencrypt,
-- docs/encryption.md); returns 1, or 0 when there is no such job.
local j = load(ARGV[2])
if not j then return 0 end
if ARGV[3] ~= '' then redis.call('HSET', K_job(j.id), 'args', ARGV[3]) end
if ARGV[4] ~= '' then redis.call('HSET', K_job(j.id), 'result', ARGV[4]) end
return 1
