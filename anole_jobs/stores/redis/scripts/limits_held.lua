-- limits_held: how many available jobs of a queue its limits hold back now.
-- ARGV[2] queue, [3] now as epoch seconds, [4] unused, [5] the settings' global_concurrency, [6] and [7] their rate count and period
-- ('' none), [8] the partition fields as a JSON array. Returns the count.
local queue, t = ARGV[2], ARGV[3]
local gc, rc, rs = limits_of(queue, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
if not gc and not rc then return 0 end
local fields = cjson.decode(ARGV[8])
local running = (gc and running_of(queue, fields)) or {}
local win = window(queue, rc, rs, t)
local available = {}
for _, kind in ipairs(redis.call('SMEMBERS', K_ak(queue))) do
  for _, member in ipairs(redis.call('ZRANGE', K_av(queue, kind), 0, -1)) do
    local args = redis.call('HGET', K_job(member_id(member)), 'args')
    if args then
      local part = partition_of(fields, args)
      available[part] = (available[part] or 0) + 1
    end
  end
end
local held = 0
for part, n in pairs(available) do
  local r = n
  if gc then r = math.min(r, gc - (running[part] or 0)) end
  if rc then r = math.min(r, rc - win.count(part)) end
  held = held + n - math.max(r, 0)
end
return held
