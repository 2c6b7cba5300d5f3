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
local kinds = handled_kinds(queue, 14)

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

local SCAN_MAX = 5000
local next_job = available_jobs(queue, kinds, math.min(limit, 500))

local function claim_one(j, part)
  out[#out + 1] = claim_job(j, now, lease, lease_iso, worker)
  taken = taken + 1
  if gc then
    running[part] = (running[part] or 0) + 1
    redis.call('HSET', K_lr(queue), j.id, '1')
  end
  -- One entry per claim, not per job: a job given back and claimed again within the period
  -- (its token moved on) counts twice, as the other stores count it.
  if rc then win.add(part, j.id .. ':' .. j.token) end
end

local scanned = 0
while taken < limit and scanned < SCAN_MAX do
  local j = next_job()
  if j == nil then break end
  scanned = scanned + 1
  local part = partition_of(fields, j.args)
  if not full[part] then
    if room(part) <= 0 then hold(part) else claim_one(j, part) end
  end
end
out[1] = held
if reopens then out[2] = string.format('%.17g', reopens) end
return done(out)
