-- prune: ARGV[2] limit, then (state, cutoff key) pairs. Deletes jobs of each state whose
-- finished_at is before the cutoff (strictly), at most `limit` in all. Returns how many.
local left = tonumber(ARGV[2])
local pruned = 0
for i = 3, #ARGV, 2 do
  if left <= 0 then break end
  local doomed = redis.call('ZRANGEBYLEX', K_fin(ARGV[i]), '-', '(' .. ARGV[i + 1], 'LIMIT', 0, left)
  for _, member in ipairs(doomed) do
    local j = load(member_id(member))
    if j then
      destroy(j)
      pruned = pruned + 1
    else
      zrem(K_fin(ARGV[i]), member)  -- the job hash is gone (evicted?): drop its index entry
    end
  end
  left = left - #doomed
end
return done(pruned)
