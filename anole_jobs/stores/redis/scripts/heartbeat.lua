-- heartbeat: ARGV[2] lease key, [3] lease iso, then (id, attempt, token) triples.
-- Extends each fenced run's lease; returns 1/0 per run (0: the run was lost).
local lease, lease_iso = ARGV[2], ARGV[3]
local out = {}
for i = 4, #ARGV, 3 do
  local j = load(ARGV[i])
  if fenced(j, ARGV[i + 1], ARGV[i + 2]) then
    local p = pid(j.id)
    zrem(K_running(), j.lease .. p)  -- flushed before the ZADD, so an unchanged lease stays
    zadd(K_running(), 0, lease .. p)
    set(j, 'lease', lease)
    set(j, 'lease_iso', lease_iso)
    save(j)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return done(out)
