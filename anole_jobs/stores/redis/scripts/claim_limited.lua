-- claim_limited: the claim of claim.lua within the queue's limits, atomically (one script).
-- ARGV[2] queue, [3] limit, [4] now key, [5] lease key, [6] lease iso, [7] worker,
-- [8] now as epoch seconds (a string), [9] unused, [10] the settings' global_concurrency ('' none), [11] and
-- [12] their rate count and period in seconds ('' none), [13] the partition fields as a JSON
-- array, [14] '*' for every kind or '+' followed by the handled kinds in ARGV[15..].
-- Returns {held '1'/'0', reopens (epoch seconds, '' none), record...}.
local queue, limit = ARGV[2], tonumber(ARGV[3])
local now, lease, lease_iso, worker = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local t = ARGV[8]
local gc, rc, rs = limits_of(queue, tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]))
local fields = cjson.decode(ARGV[13])
if redis.call('HEXISTS', K_paused(), queue) == 1 then return {'0', ''} end
local present = redis.call('SMEMBERS', K_ak(queue))
local kinds = present
if ARGV[14] ~= '*' then
  local wanted = {}
  for i = 15, #ARGV do wanted[ARGV[i]] = true end
  kinds = {}
  for _, kind in ipairs(present) do
    if wanted[kind] then kinds[#kinds + 1] = kind end
  end
end

local running = (gc and running_of(queue, fields)) or {}
local win = window(queue, rc, rs, t)
local held, reopens, full = '0', nil, {}
local out = {'0', ''}
local taken = 0

local function room(part)
  local r = limit - taken
  if gc then r = math.min(r, gc - (running[part] or 0)) end
  if rc then r = math.min(r, rc - win.count(part)) end
  return r
end

local function hold(part)
  held, full[part] = '1', true
  if rc and win.count(part) >= rc and (not gc or (running[part] or 0) < gc) then
    local at = win.reopens(part)
    if reopens == nil or at < reopens then reopens = at end
  end
end

local CHUNK = math.min(limit, 500)
local SCAN_MAX = 5000
local cursors = {}
local function refill(c)
  local flat = redis.call('ZRANGE', c.key, c.offset, c.offset + CHUNK - 1, 'WITHSCORES')
  c.offset = c.offset + CHUNK
  c.items, c.pos = {}, 1
  for i = 1, #flat, 2 do c.items[#c.items + 1] = {member = flat[i], score = tonumber(flat[i + 1])} end
  c.done = #flat < 2 * CHUNK
end
for _, kind in ipairs(kinds) do
  local c = {key = K_av(queue, kind), kind = kind, offset = 0}
  refill(c)
  cursors[#cursors + 1] = c
end

local function claim_one(j, part)
  leave(j)
  set(j, 'state', 'running')
  set(j, 'attempt', string.format('%d', tonumber(j.attempt) + 1))
  set(j, 'token', string.format('%d', tonumber(j.token) + 1))
  set(j, 'attempted', now)
  set(j, 'lease', lease)
  set(j, 'lease_iso', lease_iso)
  set(j, 'worker', worker)
  enter(j)
  out[#out + 1] = encode_record(j)
  save(j)
  taken = taken + 1
  if gc then
    running[part] = (running[part] or 0) + 1
    redis.call('HSET', K_lr(queue), j.id, '1')
  end
  if rc then win.add(part, j.id) end
end

local scanned = 0
while taken < limit and scanned < SCAN_MAX do
  local best_cursor, best = nil, nil
  for _, c in ipairs(cursors) do
    if c.pos > #c.items and not c.done then refill(c) end
    local head = c.items[c.pos]
    if head and (best == nil or head.score < best.score
        or (head.score == best.score and head.member < best.member)) then
      best_cursor, best = c, head
    end
  end
  if best == nil then break end
  best_cursor.pos = best_cursor.pos + 1
  scanned = scanned + 1
  local j = load_all(member_id(best.member))
  if j == nil then
    zrem(best_cursor.key, best.member)
    pending.available[best_cursor.key] = {queue, best_cursor.kind}
  else
    local part = partition_of(fields, j.args)
    if not full[part] then
      if room(part) <= 0 then hold(part) else claim_one(j, part) end
    end
  end
end
out[1] = held
if reopens then out[2] = string.format('%.17g', reopens) end
return done(out)
