-- What claim.lua and claim_limited.lua share (prepended to both, after _lib.lua): the kinds a
-- worker handles, the walk over the heads of the queue's available sets in claim order, and
-- the claim of one job. Available jobs live in one sorted set per (queue, kind); the heads of
-- those sets are merged by (score, member) = (-priority, scheduled_at, id), the order of
-- memory.py. Removals are deferred to `done`, so the ranks read here stay valid while the sets
-- are walked in chunks.

-- The kinds of `queue` with available jobs that this worker handles: ARGV[first] is '*' for
-- every kind, or '+' followed by the handled kinds in ARGV[first + 1 ..].
local function handled_kinds(queue, first)
  local present = redis.call('SMEMBERS', K_ak(queue))
  if ARGV[first] == '*' then return present end
  local wanted = {}
  for i = first + 1, #ARGV do wanted[ARGV[i]] = true end
  local kinds = {}
  for _, kind in ipairs(present) do
    if wanted[kind] then kinds[#kinds + 1] = kind end
  end
  return kinds
end

-- A function that returns the next available job of `queue` in claim order (its loaded hash),
-- or nil when there is none; read `chunk` index entries at a time per kind. An index entry
-- whose job hash is gone (only an eviction or a hand edit does that) is dropped rather than
-- failing every claim of the queue.
local function available_jobs(queue, kinds, chunk)
  local cursors = {}
  local function refill(c)
    local flat = redis.call('ZRANGE', c.key, c.offset, c.offset + chunk - 1, 'WITHSCORES')
    c.offset = c.offset + chunk
    c.items, c.pos = {}, 1
    for i = 1, #flat, 2 do
      c.items[#c.items + 1] = {member = flat[i], score = tonumber(flat[i + 1])}
    end
    c.done = #flat < 2 * chunk
  end
  for _, kind in ipairs(kinds) do
    local c = {key = K_av(queue, kind), kind = kind, offset = 0}
    refill(c)
    cursors[#cursors + 1] = c
  end
  return function()
    while true do
      local best_cursor, best = nil, nil
      for _, c in ipairs(cursors) do
        if c.pos > #c.items and not c.done then refill(c) end
        local head = c.items[c.pos]
        if head and (best == nil or head.score < best.score
            or (head.score == best.score and head.member < best.member)) then
          best_cursor, best = c, head
        end
      end
      if best == nil then return nil end
      best_cursor.pos = best_cursor.pos + 1
      local j = load_all(member_id(best.member))
      if j == nil then
        zrem(best_cursor.key, best.member)
        pending.available[best_cursor.key] = {queue, best_cursor.kind}
      elseif not (j.sq and sequence_held(j)) then
        return j
      end
      -- (a job of a sequence waits while an earlier one has not ended: it stays available)
    end
  end
end

-- Claim job `j` for `worker` at time key `now` (lease until `lease`), count it as started,
-- and return its record (see `encode_record`).
local function claim_job(j, now, lease, lease_iso, worker)
  leave(j)
  set(j, 'state', 'running')
  set(j, 'attempt', string.format('%d', tonumber(j.attempt) + 1))
  set(j, 'token', string.format('%d', tonumber(j.token) + 1))
  set(j, 'attempted', now)
  set(j, 'lease', lease)
  set(j, 'lease_iso', lease_iso)
  set(j, 'worker', worker)
  if j.fo then fair_claimed(j) end
  stat_add(j.queue, now, 'started', 1)
  enter(j)
  local record = encode_record(j)
  save(j)
  return record
end
