-- workflow: ARGV[2] workflow id. Returns nil for an unknown workflow, else {name, created key,
-- cancelled ('1'/'0'), then per step its record and its dependencies (comma-separated ids)}.
local wf = redis.call('HMGET', K_wf(ARGV[2]), 'name', 'created', 'cancelled')
if not wf[1] then return false end
local out = {wf[1], wf[2], wf[3]}
for _, member in ipairs(redis.call('ZRANGEBYLEX', K_wfjobs(ARGV[2]), '-', '+')) do
  local id = member_id(member)
  if redis.call('EXISTS', K_job(id)) == 1 then
    out[#out + 1] = record_of(id)
    out[#out + 1] = redis.call('HGET', K_job(id), 'deps') or ''
  end
end
return out
