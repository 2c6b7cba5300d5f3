-- insert_workflow: ARGV[2] workflow id, [3] its name, [4] its created key, [5] now key,
-- [6] '1' for the workflow's last call, [7] n, [8] the n steps as ONE JSON array of strings,
-- NEW_JOB_FIELDS job values then 6 step values per step: name, its Python repr, dependencies
-- within this call (comma-separated 0-based indexes), dependency ids from earlier calls
-- (comma-separated), ignore_failed ('1'/'0'), delay from readiness in microseconds ('' =
-- none); [9] the wake-up channel. Steps are inserted pending; the last call makes every step
-- with no dependency left due. Returns ONE string of the step ids, comma-separated.
local wf, n = ARGV[2], tonumber(ARGV[7])
redis.call('HSETNX', K_wf(wf), 'name', ARGV[3])
redis.call('HSETNX', K_wf(wf), 'created', ARGV[4])
redis.call('HSETNX', K_wf(wf), 'cancelled', '0')
local batch = cjson.decode(ARGV[8])
-- ARGV[10], when given: per step {fairness value or '', weight, sequence or ''} (as insert's).
local flows = ARGV[10] and cjson.decode(ARGV[10]) or nil
local width = NEW_JOB_FIELDS + 6
local next_id = 0
if n > 0 then next_id = take_ids(n) end
local ids = {}
for k = 0, n - 1 do
  local first = 1 + k * width
  local id = idstr(next_id + k * ID_STRIDE)
  batch[first + 2] = 'pending'
  batch[first + 9] = '0'  -- a step has no unique key
  insert_one(batch, first, id, flows and flows[k + 1])
  ids[k + 1] = id
  local s = first + NEW_JOB_FIELDS
  local deps = {}
  for i in string.gmatch(batch[s + 2], '[^,]+') do deps[#deps + 1] = ids[tonumber(i) + 1] end
  for dep in string.gmatch(batch[s + 3], '[^,]+') do deps[#deps + 1] = dep end
  local fields = {'wf', wf, 'step', batch[s], 'srepr', batch[s + 1], 'deps',
                  table.concat(deps, ','), 'waiting', string.format('%d', #deps)}
  if batch[s + 4] == '1' then
    fields[#fields + 1] = 'ignore'
    fields[#fields + 1] = '1'
  end
  if batch[s + 5] ~= '' then
    fields[#fields + 1] = 'rdelay'
    fields[#fields + 1] = batch[s + 5]
  end
  redis.call('HSET', K_job(id), unpack(fields))
  for _, dep in ipairs(deps) do redis.call('RPUSH', K_dn(dep), id) end
  zadd(K_wfjobs(wf), 0, pid(id))
end
if ARGV[6] == '1' then
  flush()  -- the step index is read below
  local now = ARGV[5]
  for _, member in ipairs(redis.call('ZRANGEBYLEX', K_wfjobs(wf), '-', '+')) do
    local c = load(member_id(member))
    if c and c.state == 'pending' and redis.call('HGET', K_job(c.id), 'waiting') == '0' then
      wf_ready(c, now)
    end
  end
  wf_publish(ARGV[9], '')
end
return done(table.concat(ids, ','))
