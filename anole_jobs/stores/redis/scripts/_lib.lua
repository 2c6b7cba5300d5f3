-- Shared helpers, prepended (after the key prelude of keys.py) to every script.
--
-- A job is loaded into a table `j` with its index-relevant fields; `leave(j)` takes it out of
-- every index of its current state, the script changes fields with `set`, `enter(j)` puts it
-- in the indexes of its new state and `save(j)` writes the changed fields. Keeping all index
-- bookkeeping here is what keeps the sorted sets, the counts and the unique keys consistent.

local CORE = {'state', 'queue', 'kind', 'priority', 'sched', 'lease', 'finished', 'attempt',
              'token', 'max', 'ukey', 'uscope', 'wf', 'ver', 'fo', 'sq'}

-- The set of available jobs a job is in: one per (queue, claim key), the claim key being its
-- kind for version 1 (no 'ver' field) and "kind@N" above (docs/deploys.md), so that a claim
-- that names only the versions its worker runs never meets a job of another version.
local function akind(j)
  if j.ver and j.ver ~= '1' then return j.kind .. '@' .. j.ver end
  return j.kind
end
local LIVE = {pending = true, scheduled = true, available = true, running = true, retrying = true}
local FINAL = {completed = true, dead = true, cancelled = true}

local function load(id)
  id = idstr(id)
  local values = redis.call('HMGET', K_job(id), unpack(CORE))
  if not values[1] then return nil end
  local j = {id = id, dirty = {}}
  for i, field in ipairs(CORE) do j[field] = values[i] end
  return j
end

-- The whole hash (claim returns the record): fields absent from the hash are nil.
local function load_all(id)
  id = idstr(id)
  local flat = redis.call('HGETALL', K_job(id))
  if #flat == 0 then return nil end
  local j = {id = id, dirty = {}}
  for i = 1, #flat, 2 do j[flat[i]] = flat[i + 1] end
  return j
end

-- A `load_all` job (with the changes made since) as the JSON array of its RECORD_FIELDS.
local function encode_record(j)
  local values = {}
  for i, field in ipairs(RECORD_FIELDS) do values[i] = j[field] or cjson.null end
  return cjson.encode(values)
end

-- The stored job `id` as the JSON array of its RECORD_FIELDS.
local function record_of(id)
  local values = redis.call('HMGET', K_job(id), unpack(RECORD_FIELDS))
  for i = 1, #RECORD_FIELDS do
    if not values[i] then values[i] = cjson.null end
  end
  return cjson.encode(values)
end

local function set(j, field, value)
  j[field] = value
  j.dirty[field] = true
end

local function save(j)
  local hset, hdel = {}, {}
  for field in pairs(j.dirty) do
    if j[field] then
      hset[#hset + 1] = field
      hset[#hset + 1] = j[field]
    else
      hdel[#hdel + 1] = field
    end
  end
  if #hset > 0 then redis.call('HSET', K_job(j.id), unpack(hset)) end
  if #hdel > 0 then redis.call('HDEL', K_job(j.id), unpack(hdel)) end
  j.dirty = {}
end

-- Index writes are buffered and applied by `flush()` once per key at the end of a script: a
-- batch of n jobs then costs one ZADD/ZREM/HINCRBY per touched key instead of n. Scripts read
-- the indexes they walk before changing anything, so the deferral is never observable.
-- Every script that changes state returns through `done(reply)`, which flushes.
local pending = {zadd = {}, zrem = {}, counts = {}, available = {}}
local pending_keys = {zadd = {}, zrem = {}}

local function push(kind, key, a, b)
  local list = pending[kind][key]
  if not list then
    list = {}
    pending[kind][key] = list
    pending_keys[kind][#pending_keys[kind] + 1] = key
  end
  list[#list + 1] = a
  if b then list[#list + 1] = b end
end

local function zadd(key, score, member) push('zadd', key, score, member) end
local function zrem(key, member) push('zrem', key, member) end

local function count(state, queue, delta)
  local field = state .. ':' .. queue
  pending.counts[field] = (pending.counts[field] or 0) + delta
end

-- Run `command key items...` in chunks: Lua 5.1 cannot unpack more than a few thousand values.
local function chunked(command, key, items, step)
  for first = 1, #items, step do
    redis.call(command, key, unpack(items, first, math.min(first + step - 1, #items)))
  end
end

-- Run statistics (anole_jobs.stores.stats): counters per (queue, minute), buffered like the
-- counts and written by flush() once per key, which then expires STATS_KEEP after its last
-- write. `tkey` is a time key (microseconds since 0001-01-01, as a string).
local stats = {}
local function tkey_seconds(tkey) return tonumber(string.sub(tkey, 1, -7)) end
local function stat_add(queue, tkey, field, n)
  local minute = math.floor((tkey_seconds(tkey) - EPOCH_SECONDS) / 60)
  local key = K_stat(minute, queue)
  local entry = stats[key]
  if not entry then
    entry = {minute = minute, queue = queue, fields = {}, max = -1}
    stats[key] = entry
  end
  entry.fields[field] = (entry.fields[field] or 0) + n
  return entry
end

-- A run of job `j` that ended in `state` at time key `at`: completed (with its run time from
-- the claim), dead, or retried: `failed` says an error was appended and the attempt kept.
local function stat_ended(j, state, at, failed)
  if state == 'completed' then
    local started = redis.call('HGET', K_job(j.id), 'attempted')
    local ms = 0
    if started then
      local us = (tkey_seconds(at) - tkey_seconds(started)) * 1000000
        + tonumber(string.sub(at, -6)) - tonumber(string.sub(started, -6))
      ms = math.max(0, math.ceil(us / 1000))
    end
    local entry = stat_add(j.queue, at, 'completed', 1)
    entry.fields.total_ms = (entry.fields.total_ms or 0) + ms
    local bucket = #STAT_BOUNDS
    for i, bound in ipairs(STAT_BOUNDS) do
      if ms <= bound then
        bucket = i - 1
        break
      end
    end
    entry.fields['h' .. bucket] = (entry.fields['h' .. bucket] or 0) + 1
    if ms > entry.max then entry.max = ms end
  elseif state == 'dead' then
    stat_add(j.queue, at, 'dead', 1)
  elseif failed then
    stat_add(j.queue, at, 'retried', 1)
  end
end

-- Each minute's counters also go to its hour's hash (a day then reads 24 hashes per queue).
local function flush_stats()
  for key, entry in pairs(stats) do
    local hour = math.floor(entry.minute / 60)
    local hour_key = K_stath(hour, entry.queue)
    for _, target in ipairs({key, hour_key}) do
      for field, n in pairs(entry.fields) do redis.call('HINCRBY', target, field, n) end
      if entry.max >= 0 then
        local old = tonumber(redis.call('HGET', target, 'max_ms') or '-1')
        if entry.max > old then redis.call('HSET', target, 'max_ms', entry.max) end
      end
      redis.call('EXPIRE', target, STATS_KEEP_SECONDS)
    end
    redis.call('ZADD', K_statm(), entry.minute, key)
    redis.call('ZADD', K_stathm(), hour, hour_key)
  end
  stats = {}
end

local function flush()
  flush_stats()
  for _, key in ipairs(pending_keys.zrem) do chunked('ZREM', key, pending.zrem[key], 1000) end
  for _, key in ipairs(pending_keys.zadd) do chunked('ZADD', key, pending.zadd[key], 1000) end
  for field, delta in pairs(pending.counts) do
    if delta ~= 0 and redis.call('HINCRBY', K_counts(), field, delta) <= 0 then
      redis.call('HDEL', K_counts(), field)
    end
  end
  -- A queue's set of kinds with available jobs follows its (queue, kind) sets. A set that
  -- just got a ZADD exists (where[3]): no need to ask.
  for key, where in pairs(pending.available) do
    if where[3] or redis.call('EXISTS', key) == 1 then
      redis.call('SADD', K_ak(where[1]), where[2])
    else
      redis.call('SREM', K_ak(where[1]), where[2])
    end
  end
  pending = {zadd = {}, zrem = {}, counts = {}, available = {}}
  pending_keys = {zadd = {}, zrem = {}}
end

local function done(reply)
  flush()
  return reply
end

-- Whether `j` (in its current state) keeps its unique key from other inserts.
local function holds_unique(j)
  return j.ukey and (j.uscope == 'any' or LIVE[j.state])
end

local function release_unique(j)
  if j.ukey and not holds_unique(j) and redis.call('GET', K_u(j.ukey)) == j.id then
    redis.call('DEL', K_u(j.ukey))
  end
end

-- The id of the job holding unique key `ukey`, or nil. A key whose holder is gone or no longer
-- holds it is dropped (as memory.py's `_holder` does), so a stale key never blocks an insert.
local function holder(ukey)
  local id = redis.call('GET', K_u(ukey))
  if not id then return nil end
  local h = redis.call('HMGET', K_job(id), 'state', 'ukey', 'uscope')
  if h[1] and h[2] == ukey and (h[3] == 'any' or LIVE[h[1]]) then return id end
  redis.call('DEL', K_u(ukey))
  return nil
end

local function leave(j)
  local p, s = pid(j.id), j.state
  if s == 'available' then
    local key = K_av(j.queue, akind(j))
    zrem(key, (j.fo or j.sched) .. p)
    pending.available[key] = pending.available[key] or {j.queue, akind(j)}
  elseif s == 'scheduled' or s == 'retrying' then
    zrem(K_waiting(), j.sched .. p)
  elseif s == 'running' then
    zrem(K_running(), j.lease .. p)
  elseif FINAL[s] then
    zrem(K_fin(s), j.finished .. p)
  end
  zrem(K_st(s), p)
  count(s, j.queue, -1)
end

local function enter(j)
  local p, s = pid(j.id), j.state
  if s == 'available' then
    local key = K_av(j.queue, akind(j))
    -- A job of a fair queue is ordered by its turn where others are by their time (both
    -- fixed-width digits; see `fair_turn`).
    zadd(key, -tonumber(j.priority), (j.fo or j.sched) .. p)
    pending.available[key] = {j.queue, akind(j), true}
  elseif s == 'scheduled' or s == 'retrying' then
    zadd(K_waiting(), 0, j.sched .. p)
  elseif s == 'running' then
    zadd(K_running(), 0, j.lease .. p)
  elseif FINAL[s] then
    zadd(K_fin(s), 0, j.finished .. p)
  elseif s == 'pending' then
    -- a workflow step waiting for its dependencies: in the state index only
  else
    error('anole_jobs: unknown job state ' .. tostring(s))
  end
  zadd(K_st(s), 0, p)
  count(s, j.queue, 1)
  release_unique(j)
  -- A job of a sequence that has not ended has its place in it (again, after a retry).
  if j.sq and LIVE[s] then redis.call('ZADD', K_seq(j.sq), tonumber(j.id), j.id) end
end

-- The id of the first job of sequence `key` that has not ended, or nil. Ended and deleted
-- jobs at its front leave it here, when a claim (or a question) looks.
local function sequence_head(key)
  local zkey = K_seq(key)
  while true do
    local first = redis.call('ZRANGE', zkey, 0, 0)
    if #first == 0 then return nil end
    local found = redis.call('HMGET', K_job(first[1]), 'state', 'sq')
    if found[1] and LIVE[found[1]] and found[2] == key then return first[1] end
    redis.call('ZREM', zkey, first[1])
  end
end

-- Whether an earlier job of `j`'s sequence has not ended (then `j` waits).
local function sequence_held(j)
  local first = redis.call('ZRANGE', K_seq(j.sq), 0, 0)
  if first[1] == j.id then return false end  -- it leads its sequence (the usual case)
  local head = sequence_head(j.sq)
  return head ~= nil and tonumber(head) < tonumber(j.id)
end

-- Fair flow: the turn of a new job of `queue` whose fairness value is `fk` (weight `weight`):
-- one 1/weight after the latest turn given to its value, and no earlier than the turn the
-- queue's claims reached ('~turn'); as a fixed-width key that sorts as a time key does.
local function fair_turn(queue, fk, weight)
  local h = K_fair(queue)
  local known = redis.call('HMGET', h, '~turn', fk)
  local base = tonumber(known[1]) or 0
  local last = tonumber(known[2])
  if last and last > base then base = last end
  local turn = base + 1 / weight
  redis.call('HSET', h, fk, string.format('%.17g', turn))
  return string.format('%018.0f', turn * 1000000)
end

-- A fair job was claimed: its queue's claims reached its turn.
local function fair_claimed(j)
  local turn = tonumber(j.fo) / 1000000
  local h = K_fair(j.queue)
  local known = tonumber(redis.call('HGET', h, '~turn'))
  if not known or turn > known then redis.call('HSET', h, '~turn', string.format('%.17g', turn)) end
end

local wf_forget  -- defined with the workflow helpers at the end

-- Remove every trace of a job (delete, prune).
local function destroy(j)
  if j.wf then wf_forget(j) end
  leave(j)
  local p = pid(j.id)
  zrem(K_all(), p)
  zrem(K_queue(j.queue), p)
  zrem(K_kind(j.kind), p)
  if j.ukey and redis.call('GET', K_u(j.ukey)) == j.id then redis.call('DEL', K_u(j.ukey)) end
  redis.call('DEL', K_job(j.id))
end

-- Append one JSON-encoded error entry to a job's JSON array of errors, by string: decoding
-- and re-encoding with cjson would rewrite numbers and escapes in older entries.
local function append_error(j, entry)
  local errors = redis.call('HGET', K_job(j.id), 'errors')
  if not errors or errors == '[]' then
    errors = '[' .. entry .. ']'
  else
    errors = string.sub(errors, 1, -2) .. ',' .. entry .. ']'
  end
  set(j, 'errors', errors)
end

-- The fence of every write after a claim: still running, same attempt, same token.
local function fenced(j, attempt, token)
  return j ~= nil and j.state == 'running' and tonumber(j.attempt) == tonumber(attempt)
    and tonumber(j.token) == tonumber(token)
end

-- `n` new job ids: the first, then every ID_STRIDE. On one node from the `next_id` counter; on
-- a cluster the caller reserved them from the cluster-wide counter (ids grow in enqueue order
-- across every slot) and handed the first over (ID_NEXT, see keys.py).
local function take_ids(n)
  if not CLUSTER then return redis.call('INCRBY', K_next_id(), n) - n + 1 end
  if not ID_NEXT then error('anole_jobs: a cluster insert needs ids reserved by its caller') end
  local first = ID_NEXT
  ID_NEXT = ID_NEXT + n * ID_STRIDE
  return first
end

-- Insert one job from the 12 values of `v` starting at `i` (`v` is ARGV, or a batch decoded
-- from JSON); returns (id, 1) or (holder id, 0). With `id` (a string), the caller has already
-- checked the unique key and taken the id (a batch takes all its ids with one INCRBY).
local NEW_JOB_FIELDS = 13
local function insert_one(v, i, id, flow)
  local kind, queue, state, args, meta = v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4]
  local priority, max, created, sched = v[i + 5], v[i + 6], v[i + 7], v[i + 8]
  local has_ukey, ukey, uscope = v[i + 9] == '1', v[i + 10], v[i + 11]
  local ver = v[i + 12]
  if ver == '1' then ver = false end
  if not id then
    if has_ukey then
      local held_by = holder(ukey)
      if held_by then return tonumber(held_by), 0 end
    end
    id = idstr(take_ids(1))
  end
  local fields = {'id', id, 'kind', kind, 'queue', queue, 'state', state, 'args', args,
                  'meta', meta, 'priority', priority, 'attempt', '0', 'max', max,
                  'errors', '[]', 'created', created, 'sched', sched, 'token', '0',
                  'uscope', uscope}
  if has_ukey then
    fields[#fields + 1] = 'ukey'
    fields[#fields + 1] = ukey
  end
  if ver then
    fields[#fields + 1] = 'ver'
    fields[#fields + 1] = ver
  end
  -- Fair flow and sequences: `flow` is {fairness value or '', its weight, sequence or ''}.
  local fo, sq = false, false
  if flow then
    if flow[1] ~= '' then
      fo = fair_turn(queue, flow[1], tonumber(flow[2]))
      fields[#fields + 1] = 'fk'
      fields[#fields + 1] = flow[1]
      fields[#fields + 1] = 'fo'
      fields[#fields + 1] = fo
    end
    if flow[3] ~= '' then
      sq = flow[3]
      fields[#fields + 1] = 'sq'
      fields[#fields + 1] = sq
    end
  end
  redis.call('HSET', K_job(id), unpack(fields))
  local j = {id = id, state = state, queue = queue, kind = kind, priority = priority,
             sched = sched, ukey = has_ukey and ukey or false, uscope = uscope, ver = ver,
             dirty = {}, fo = fo, sq = sq}
  enter(j)
  local p = pid(id)
  zadd(K_all(), 0, p)
  zadd(K_queue(queue), 0, p)
  zadd(K_kind(kind), 0, p)
  if has_ukey then redis.call('SET', K_u(ukey), id) end
  return tonumber(id), 1
end

-- Workflows (see "Workflows" in stores/base.py) ------------------------------------------------
-- A step's hash has wf, step, srepr, deps, waiting, ignore, rdelay, cby (keys.py); `P dn:<id>`
-- lists the steps that run after job <id>. Settling runs inside the script whose write ended a
-- step (finish, rescue, cancel), so the dependents change in the same atomic write. What it
-- made available and what it ended is published by `wf_publish` (sender '' so that every
-- process, this one too, hears it).
local WF_QUEUES, WF_ENDED = {}, {}

-- `a` (a time key) plus `micros` (a decimal string), as a time key: time keys are beyond a
-- double's exact integers, so the sum is done in two halves.
local function time_add(a, micros)
  local b = string.format('%018d', tonumber(micros))
  local lo = tonumber(string.sub(a, -9)) + tonumber(string.sub(b, -9))
  local hi = tonumber(string.sub(a, 1, -10)) + tonumber(string.sub(b, 1, -10))
  if lo >= 1000000000 then
    lo = lo - 1000000000
    hi = hi + 1
  end
  return string.format('%09d%09d', hi, lo)
end

-- A time key as Python's datetime.isoformat() writes the aware UTC time.
local function iso_of(key)
  local seconds, micros = tonumber(string.sub(key, 1, 12)), tonumber(string.sub(key, 13))
  local days = math.floor(seconds / 86400)
  local rest = seconds - days * 86400
  -- days since 0001-01-01 -> civil date (H. Hinnant's algorithm, from 0000-03-01)
  local z = days + 306
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  local text = string.format('%04d-%02d-%02dT%02d:%02d:%02d', y, m, d, math.floor(rest / 3600),
    math.floor(rest % 3600 / 60), rest % 60)
  if micros > 0 then text = text .. string.format('.%06d', micros) end
  return text .. '+00:00'
end

-- A pending step whose dependencies all ended: due now, or after its delay from now.
local function wf_ready(c, now)
  local rdelay = redis.call('HGET', K_job(c.id), 'rdelay')
  local sched = c.sched
  if rdelay then
    sched = time_add(now, rdelay)
  elseif sched < now then
    sched = now
  end
  leave(c)
  set(c, 'sched', sched)
  set(c, 'waiting', '0')
  if sched > now then
    set(c, 'state', 'scheduled')
  else
    set(c, 'state', 'available')
    WF_QUEUES[c.queue] = true
  end
  enter(c)
  save(c)
end

-- Step `ended` (a loaded job, saved in its final state) ended at `now` (a time key): release or
-- cancel its pending dependents, transitively.
local function wf_settle(ended, now)
  local todo = {ended}
  while #todo > 0 do
    local row = table.remove(todo)
    local failed = row.state ~= 'completed'
    local srepr = nil
    for _, cid in ipairs(redis.call('LRANGE', K_dn(row.id), 0, -1)) do
      local c = load(cid)
      if c and c.state == 'pending' then
        local h = redis.call('HMGET', K_job(c.id), 'ignore', 'waiting', 'attempt')
        if failed and h[1] ~= '1' then
          srepr = srepr or redis.call('HGET', K_job(row.id), 'srepr') or "''"
          leave(c)
          set(c, 'state', 'cancelled')
          set(c, 'finished', now)
          set(c, 'cby', row.id)
          append_error(c, cjson.encode({
            at = iso_of(now),
            attempt = tonumber(h[3]),
            type = 'DependencyFailed',
            message = 'its dependency ' .. srepr .. ' ended ' .. row.state,
            traceback = '',
          }))
          enter(c)
          save(c)
          WF_ENDED[#WF_ENDED + 1] = c.id
          todo[#todo + 1] = c
        else
          local waiting = tonumber(h[2] or '1') - 1
          if waiting <= 0 then
            wf_ready(c, now)
          else
            redis.call('HSET', K_job(c.id), 'waiting', string.format('%d', waiting))
          end
        end
      end
    end
  end
end

-- Step `retried` runs again: the dependents its ending cancelled wait for it again,
-- transitively, unless another dependency failed too.
local function wf_reopen(retried)
  local todo = {retried}
  while #todo > 0 do
    local rid = table.remove(todo)
    for _, cid in ipairs(redis.call('LRANGE', K_dn(rid), 0, -1)) do
      local c = load(cid)
      local h = c and redis.call('HMGET', K_job(cid), 'cby', 'ignore', 'deps')
      if c and c.state == 'cancelled' and h[1] == rid then
        local blocker, waiting = nil, 0
        for dep in string.gmatch(h[3] or '', '[^,]+') do
          local state = redis.call('HGET', K_job(dep), 'state')
          if (state == 'dead' or state == 'cancelled') and h[2] ~= '1' and not blocker then
            blocker = dep
          end
          if state and not FINAL[state] then waiting = waiting + 1 end
        end
        if blocker then
          redis.call('HSET', K_job(cid), 'cby', blocker)
        else
          leave(c)
          set(c, 'state', 'pending')
          set(c, 'finished', false)
          set(c, 'cby', false)
          set(c, 'waiting', string.format('%d', waiting))
          enter(c)
          save(c)
          todo[#todo + 1] = cid
        end
      end
    end
  end
end

-- A step's job is deleted (prune, delete): drop its dependents list, and its workflow with
-- its last step.
wf_forget = function(j)
  redis.call('DEL', K_dn(j.id))
  redis.call('ZREM', K_wfjobs(j.wf), pid(j.id))
  if redis.call('EXISTS', K_wfjobs(j.wf)) == 0 then redis.call('DEL', K_wf(j.wf)) end
end

-- Tell every process what settling did: the queues it made jobs available in, the jobs it
-- ended (`wake_channel`/`done_channel` as the store's).
local function wf_publish(wake_channel, done_channel)
  local queues = {}
  for queue in pairs(WF_QUEUES) do queues[#queues + 1] = queue end
  if #queues > 0 then
    table.sort(queues)
    redis.call('PUBLISH', wake_channel, cjson.encode({from = '', queues = queues}))
  end
  if #WF_ENDED > 0 then
    redis.call('PUBLISH', done_channel, cjson.encode({from = '', queues = WF_ENDED}))
  end
  WF_QUEUES, WF_ENDED = {}, {}
end

-- The job's timeline (anole_jobs/timeline.py): keep the running attempt of `j` in its
-- attempts (a JSON array), ended at time key `at` with `outcome`; its worker is the claim's,
-- its start the time key `started` (nil: the claim's). Call it before any change of
-- `j.attempt`. Past TIMELINE_ATTEMPTS_KEPT the oldest goes.
local TIMELINE_ATTEMPTS_KEPT = 500
local function end_attempt(j, outcome, at, started)
  local h = redis.call('HMGET', K_job(j.id), 'attempts', 'worker', 'attempted')
  started = started or h[3]
  local entry = cjson.encode({
    attempt = tonumber(j.attempt),
    worker = h[2] or cjson.null,
    started_at = started and iso_of(started) or cjson.null,
    finished_at = iso_of(at),
    outcome = outcome,
  })
  local list = h[1]
  if not list or list == '[]' then
    list = '[' .. entry .. ']'
  else
    list = string.sub(list, 1, -2) .. ',' .. entry .. ']'
    if #list > 40000 then  -- perhaps past the cap: count them
      local all = cjson.decode(list)
      if #all > TIMELINE_ATTEMPTS_KEPT then
        local kept = {}
        for i = #all - TIMELINE_ATTEMPTS_KEPT + 1, #all do kept[#kept + 1] = all[i] end
        list = cjson.encode(kept)
      end
    end
  end
  set(j, 'attempts', list)
end

-- Before a 'completed' job `j` runs again: its completing attempt, which only its hash says
-- (the finish leaves it out of the attempts: anole_jobs/timeline.py), goes into its
-- attempts, unless the finish of older code appended it there already.
local function keep_completed_attempt(j)
  local list = redis.call('HGET', K_job(j.id), 'attempts')
  if list and list ~= '[]' then
    local all = cjson.decode(list)
    local last = all[#all]
    if last and last.outcome == 'completed' and tonumber(last.attempt) == tonumber(j.attempt) then
      return
    end
  end
  end_attempt(j, 'completed', j.finished)
end

-- Append the log lines `lines` (a JSON array) to the job's log, keeping the newest `keep`.
local function append_logs(j, lines, keep)
  local old = redis.call('HGET', K_job(j.id), 'logs')
  local all = old and cjson.decode(old) or {}
  for _, line in ipairs(cjson.decode(lines)) do all[#all + 1] = line end
  local kept = {}
  for i = math.max(1, #all - keep + 1), #all do kept[#kept + 1] = all[i] end
  set(j, 'logs', cjson.encode(kept))
end
