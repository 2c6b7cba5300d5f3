-- list: ARGV[2] cursor (ids below it; '' = from the newest), [3] limit, [4] scan budget,
-- [5] state, [6] queue, [7] kind (each '' when not filtered; queue and kind names are never
-- empty), [8] lowest id (a search's window; '' = none), and a search's narrowing terms (each
-- '' when not given): [9] kind prefix, [10] text the last error ("<type>: <message>",
-- lower-cased) contains, lower-case ASCII, [11] a JSON object of top-level argument values
-- (numbers and strings) the job's arguments equal. The caller tests the survivors exactly.
-- [12] a workflow id ('' when not filtered).
-- Walks the smallest matching id index newest first, checks the other filters on the job
-- hash, and stops after `limit` matches or `budget` index entries, so one call never blocks
-- Redis for long; the caller continues from the returned cursor.
-- Returns {next cursor ('' = exhausted), job record, ...}.
local cursor, limit, budget = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local want = {state = ARGV[5], queue = ARGV[6], kind = ARGV[7], wf = ARGV[12] or ''}
local prefix, error_text, args_text = ARGV[9] or '', ARGV[10] or '', ARGV[11] or ''
local wanted_args = args_text ~= '' and cjson.decode(args_text) or nil
local index = K_all()
local candidates = {}
if want.state ~= '' then candidates[#candidates + 1] = K_st(want.state) end
if want.queue ~= '' then candidates[#candidates + 1] = K_queue(want.queue) end
if want.kind ~= '' then candidates[#candidates + 1] = K_kind(want.kind) end
if want.wf ~= '' then candidates[#candidates + 1] = K_wfjobs(want.wf) end
local smallest = nil
for _, key in ipairs(candidates) do
  local size = redis.call('ZCARD', key)
  if smallest == nil or size < smallest then index, smallest = key, size end
end

local function searched(h)
  if prefix ~= '' and string.sub(h[3], 1, #prefix) ~= prefix then return false end
  if error_text ~= '' then
    local errors = cjson.decode(h[4] or '[]')
    local last = errors[#errors]
    if type(last) ~= 'table' then return false end
    local text = tostring(last.type or '') .. ': ' .. tostring(last.message or '')
    if not string.find(string.lower(text), error_text, 1, true) then return false end
  end
  if wanted_args ~= nil then
    local args = cjson.decode(h[5] or '{}')
    for key, value in pairs(wanted_args) do
      if type(args) ~= 'table' or args[key] ~= value then return false end
    end
  end
  return true
end

local out = {''}
local found, scanned = 0, 0
local top = cursor == '' and '+' or '(' .. pid(cursor)
local bottom = (ARGV[8] or '') == '' and '-' or '[' .. pid(ARGV[8])
while found < limit and scanned < budget do
  local chunk = math.min(limit - found, budget - scanned)
  local members = redis.call('ZREVRANGEBYLEX', index, top, bottom, 'LIMIT', 0, chunk)
  for _, member in ipairs(members) do
    local id = member_id(member)
    local h = redis.call('HMGET', K_job(id), 'state', 'queue', 'kind', 'errors', 'args', 'wf')
    if h[1] and (want.state == '' or h[1] == want.state) and (want.queue == '' or h[2] == want.queue)
        and (want.kind == '' or h[3] == want.kind) and (want.wf == '' or h[6] == want.wf)
        and searched(h) then
      out[#out + 1] = record_of(id)
      found = found + 1
    end
    top = '(' .. member
  end
  scanned = scanned + #members
  if #members < chunk then return out end
end
out[1] = member_id(string.sub(top, 2))
return out
