-- fairness_state: ARGV[2] queue. {turn the claims reached, JSON {value: available jobs},
-- JSON {value: latest turn given}} of a queue with fairness.
local queue = ARGV[2]
local known = redis.call('HGETALL', K_fair(queue))
local turn, last = '0', {}
for i = 1, #known, 2 do
  if known[i] == '~turn' then turn = known[i + 1] else last[known[i]] = tonumber(known[i + 1]) end
end
local waiting = {}
for _, kind in ipairs(redis.call('SMEMBERS', K_ak(queue))) do
  for _, member in ipairs(redis.call('ZRANGE', K_av(queue, kind), 0, -1)) do
    local fk = redis.call('HGET', K_job(member_id(member)), 'fk')
    if fk then waiting[fk] = (waiting[fk] or 0) + 1 end
  end
end
local function encode(t) if next(t) == nil then return '{}' end return cjson.encode(t) end
return {turn, encode(waiting), encode(last)}
