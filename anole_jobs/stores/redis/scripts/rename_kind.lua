-- rename_kind: ARGV[2] id, ARGV[3] attempt, ARGV[4] token, ARGV[5] the kind's name. Records
-- the kind of a running job its worker claimed under an alias of that kind (docs/deploys.md),
-- fenced like finish; returns 1, or 0 when the run is no longer current.
local j = load(ARGV[2])
if not fenced(j, ARGV[3], ARGV[4]) then return 0 end
local p = pid(j.id)
redis.call('ZREM', K_kind(j.kind), p)
redis.call('ZADD', K_kind(ARGV[5]), 0, p)
set(j, 'kind', ARGV[5])
save(j)
return 1
