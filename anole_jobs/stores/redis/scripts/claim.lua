-- claim: ARGV[2] queue, [3] limit, [4] now key, [5] lease key, [6] lease iso, [7] worker,
-- [8] '*' for every kind or '+' followed by the handled kinds in ARGV[9..]. A paused queue
-- (its name in the `paused` hash) yields nothing.
--
-- Available jobs live in one sorted set per (queue, kind), so kinds this worker does not
-- handle are never scanned: the cost is O(handled kinds present + limit * log n) however many
-- unhandled jobs wait. The heads of those sets are merged by (score, member) = (-priority,
-- scheduled_at, id), the order of memory.py. Removals are deferred to `done`, so the ranks
-- read here stay valid while the sets are walked in chunks. Returns one record (see `encode_record`) per job.
local queue, limit = ARGV[2], tonumber(ARGV[3])
local now, lease, lease_iso, worker = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
-- A paused queue yields nothing, decided here so that it is atomic with the claim.
if redis.call('HEXISTS', K_paused(), queue) == 1 then return {} end
local present = redis.call('SMEMBERS', K_ak(queue))
local kinds = present
if ARGV[8] ~= '*' then
  local wanted = {}
  for i = 9, #ARGV do wanted[ARGV[i]] = true end
  kinds = {}
  for _, kind in ipairs(present) do
    if wanted[kind] then kinds[#kinds + 1] = kind end
  end
end

local out = {}
local CHUNK = math.min(limit, 500)
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

local function claim_one(j)
  leave(j)
  set(j, 'state', 'running')
  set(j, 'attempt', string.format('%d', tonumber(j.attempt) + 1))
  set(j, 'token', string.format('%d', tonumber(j.token) + 1))
  set(j, 'attempted', now)
  set(j, 'lease', lease)
  set(j, 'lease_iso', lease_iso)
  set(j, 'worker', worker)
  stat_add(j.queue, now, 'started', 1)
  enter(j)
  out[#out + 1] = encode_record(j)
  save(j)
end

while #out < limit do
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
  local j = load_all(member_id(best.member))
  if j == nil then
    -- An index entry whose job hash is gone (only an eviction or a hand edit does that):
    -- drop it rather than fail every claim of this queue.
    zrem(best_cursor.key, best.member)
    pending.available[best_cursor.key] = {queue, best_cursor.kind}
  else
    claim_one(j)
  end
end
return done(out)
