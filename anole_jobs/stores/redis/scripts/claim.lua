-- claim: ARGV[2] queue, [3] limit, [4] now key, [5] lease key, [6] lease iso, [7] worker,
-- [8] '*' for every kind or '+' followed by the handled kinds in ARGV[9..]. A paused queue
-- (its name in the `paused` hash) yields nothing.
--
-- Available jobs live in one sorted set per (queue, kind), so kinds this worker does not
-- handle are never scanned: the cost is O(handled kinds present + limit * log n) however many
-- unhandled jobs wait (the walk is `available_jobs` in _claim.lua). Returns one record (see
-- `encode_record`) per job.
local queue, limit = ARGV[2], tonumber(ARGV[3])
local now, lease, lease_iso, worker = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
-- A paused queue yields nothing, decided here so that it is atomic with the claim.
if redis.call('HEXISTS', K_paused(), queue) == 1 then return {} end
local next_job = available_jobs(queue, handled_kinds(queue, 8), math.min(limit, 500))
local out = {}
while #out < limit do
  local j = next_job()
  if j == nil then break end
  out[#out + 1] = claim_job(j, now, lease, lease_iso, worker)
end
return done(out)
