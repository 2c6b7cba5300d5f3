-- dependency_results: ARGV[2] job id. Returns {step name, result JSON ('' = none), ...} of the
-- job's completed dependencies.
local deps = redis.call('HGET', K_job(ARGV[2]), 'deps')
local out = {}
for dep in string.gmatch(deps or '', '[^,]+') do
  local h = redis.call('HMGET', K_job(dep), 'state', 'step', 'result')
  if h[1] == 'completed' then
    out[#out + 1] = h[2]
    out[#out + 1] = h[3] or ''
  end
end
return out
