-- insert_debounced: ONE debounced job (see `Store.insert_debounced`). ARGV[2] is ONE JSON array
-- of strings: the wake-up channel, the sender id, the job's NEW_JOB_FIELDS values (its unique
-- key flag '0'; its state 'scheduled': a debounced job always waits its `wait`), then the
-- debounce key, the cap after the first enqueue in microseconds ('' for none) and how long the
-- key's pointer lives in milliseconds (the wait and a second: past it no enqueue can fold into
-- the job any more, so the pointer never outlives its use), then, for a job with a fair
-- queue's value or a sequence, its fairness value, weight and sequence ('' for none).
-- The pointer `u:<debounce key>` names the last job the key made; the job's hash says `dkey`.
-- It folds into that job while it is scheduled and not yet due; otherwise it inserts a new job.
-- Both paths write directly, as insert_single.lua does (a fold moves one member of the
-- `waiting` set and changes no count), so an enqueue that folds costs a handful of commands.
-- Returns the new job's id, or minus the id of the job it folded into.
local v = cjson.decode(ARGV[2])
local channel, sender = v[1], v[2]
local kind, queue, state, args, meta = v[3], v[4], v[5], v[6], v[7]
local priority, max, created, sched = v[8], v[9], v[10], v[11]
local uscope, ver = v[14], v[15]
local after = 3 + NEW_JOB_FIELDS  -- the values after the job's
local dkey, cap, ttl = v[after], v[after + 1], v[after + 2]
if state ~= 'scheduled' then
  return redis.error_reply('anole_jobs: a debounced job is inserted scheduled, not ' .. tostring(state))
end
local id = redis.call('GET', K_u(dkey))
if id then
  local h = redis.call('HMGET', K_job(id), 'state', 'sched', 'dkey', 'created')
  if h[1] == 'scheduled' and h[3] == dkey and h[2] > created then
    if cap ~= '' then
      local latest = time_add(h[4], cap)
      if latest < sched then sched = latest end
    end
    local p = pid(id)
    redis.call('ZREM', K_waiting(), h[2] .. p)
    redis.call('ZADD', K_waiting(), 0, sched .. p)
    redis.call('HSET', K_job(id), 'sched', sched, 'args', args, 'meta', meta, 'priority', priority)
    redis.call('PEXPIRE', K_u(dkey), ttl)
    return -tonumber(id)
  end
end
local n = take_ids(1)
local new, p = idstr(n), pid(n)
redis.call('HSET', K_job(new), 'id', new, 'kind', kind, 'queue', queue, 'state', state,
           'args', args, 'meta', meta, 'priority', priority, 'attempt', '0', 'max', max,
           'errors', '[]', 'created', created, 'sched', sched, 'token', '0', 'uscope', uscope,
           'dkey', dkey)
if ver ~= '1' then redis.call('HSET', K_job(new), 'ver', ver) end  -- its kind's version
-- Its turn in a fair queue and its place in its sequence, as insert.lua gives a new job
-- (a job it folds into keeps both). The flow values follow the key's three when given.
local fk, weight, sq = v[after + 3], v[after + 4], v[after + 5]
if fk and fk ~= '' then
  redis.call('HSET', K_job(new), 'fk', fk, 'fo', fair_turn(queue, fk, tonumber(weight)))
end
if sq and sq ~= '' then
  redis.call('HSET', K_job(new), 'sq', sq)
  redis.call('ZADD', K_seq(sq), tonumber(new), new)
end
redis.call('ZADD', K_waiting(), 0, sched .. p)
redis.call('ZADD', K_st(state), 0, p)
redis.call('ZADD', K_all(), 0, p)
redis.call('ZADD', K_queue(queue), 0, p)
redis.call('ZADD', K_kind(kind), 0, p)
if redis.call('HINCRBY', K_counts(), state .. ':' .. queue, 1) <= 0 then
  redis.call('HDEL', K_counts(), state .. ':' .. queue)
end
redis.call('SET', K_u(dkey), new, 'PX', ttl)
return n
