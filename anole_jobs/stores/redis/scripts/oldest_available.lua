-- oldest_available: ARGV[2..] queue names. For each, the lowest scheduled time key among its
-- available jobs, or '' for none. A (queue, kind) set is ordered by priority, then scheduled
-- time: the first member of each priority level is that level's oldest, so the walk reads one
-- member per level (at most 201), never the whole set.
local out = {}
for i = 2, #ARGV do
  local queue, best = ARGV[i], ''
  for _, kind in ipairs(redis.call('SMEMBERS', K_ak(queue))) do
    local key = K_av(queue, kind)
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    while first[1] do
      local at = string.sub(first[1], 1, -ID_WIDTH - 1)
      if best == '' or at < best then best = at end
      first = redis.call('ZRANGEBYSCORE', key, '(' .. first[2], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    end
  end
  out[#out + 1] = best
end
return out
