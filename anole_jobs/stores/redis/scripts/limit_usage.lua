-- limit_usage: what one partition of a queue uses of its limits (`Store.limit_usage`).
-- ARGV[2] queue, [3] now as epoch seconds, [4] unused, [5] the settings' global_concurrency,
-- [6] and [7] their rate count and period ('' none), [8] the partition fields as a JSON
-- array, [9] the partition. Returns {concurrency or '', rate count or '', rate period or '',
-- running, the claim times in the window...} (numbers as strings).
local queue, t, part = ARGV[2], tonumber(ARGV[3]), ARGV[9]
local gc, rc, rs = limits_of(queue, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
local out = {gc and tostring(gc) or '', rc and tostring(rc) or '', rs and string.format('%.17g', rs) or ''}
local running = 0
if gc then running = running_of(queue, cjson.decode(ARGV[8]))[part] or 0 end
out[4] = tostring(running)
if rc then
  local since = '(' .. string.format('%.17g', t - rs)
  local claims = redis.call('ZRANGEBYSCORE', K_lw(queue, part), since, '+inf', 'WITHSCORES')
  for i = 2, #claims, 2 do out[#out + 1] = claims[i] end
end
return out
