-- list: ARGV[2] cursor (ids below it; '' = from the newest), [3] limit, [4] scan budget,
-- [5] state, [6] queue, [7] kind, [8] workflow id (each '' when not filtered; queue and kind
-- names are never empty), [9] lowest id (a search's window; '' = none). Walks the smallest
-- matching id index newest first, checks the other filters on the
-- job hash, and stops after `limit` matches or `budget` index entries, so one call never blocks
-- Redis for long; the caller continues from the returned cursor.
-- Returns {next cursor ('' = exhausted), job record, ...}.
local cursor, limit, budget = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local want = {state = ARGV[5], queue = ARGV[6], kind = ARGV[7], wf = ARGV[8] or ''}
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

local out = {''}
local found, scanned = 0, 0
local top = cursor == '' and '+' or '(' .. pid(cursor)
local bottom = (ARGV[9] or '') == '' and '-' or '[' .. pid(ARGV[9])
while found < limit and scanned < budget do
  local chunk = math.min(limit - found, budget - scanned)
  local members = redis.call('ZREVRANGEBYLEX', index, top, bottom, 'LIMIT', 0, chunk)
  for _, member in ipairs(members) do
    local id = member_id(member)
    local h = redis.call('HMGET', K_job(id), 'state', 'queue', 'kind', 'wf')
    if h[1] and (want.state == '' or h[1] == want.state) and (want.queue == '' or h[2] == want.queue)
        and (want.kind == '' or h[3] == want.kind) and (want.wf == '' or h[4] == want.wf) then
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
