-- insert_single: ONE job, as `jobs.enqueue` writes it. ARGV[2] is ONE JSON array of strings:
-- the wake-up channel, the sender id and the job's NEW_JOB_FIELDS values (each argument more
-- cost the client more than decoding them here). It writes exactly what `insert_one` and
-- `enter` in _lib.lua write for a new job (a contract test compares the two), straight away:
-- for one job the buffering of `flush()` saves no command, and building its tables cost more
-- than the writes. Batches, workflows and cron go through insert.lua.
-- Returns the new job's id, or minus the id of the job already holding its unique key.
local v = cjson.decode(ARGV[2])
local channel, sender = v[1], v[2]
local kind, queue, state, args, meta = v[3], v[4], v[5], v[6], v[7]
local priority, max, created, sched = v[8], v[9], v[10], v[11]
local has_ukey, ukey, uscope = v[12] == '1', v[13], v[14]
local ver = v[15]  -- the kind's version: kept only above 1 (docs/deploys.md)
local akind = kind
if ver ~= '1' then akind = kind .. '@' .. ver end
local available = state == 'available'
if not (available or state == 'scheduled' or state == 'retrying') then
  return redis.error_reply('anole_jobs: a job cannot be inserted in state ' .. tostring(state))
end
if has_ukey then
  local held_by = holder(ukey)
  if held_by then return -tonumber(held_by) end
end
local n = take_ids(1)  -- one node: INCR of the counter; a cluster: the id the caller reserved
local id, p = idstr(n), pid(n)
if has_ukey then
  redis.call('HSET', K_job(id), 'id', id, 'kind', kind, 'queue', queue, 'state', state,
             'args', args, 'meta', meta, 'priority', priority, 'attempt', '0', 'max', max,
             'errors', '[]', 'created', created, 'sched', sched, 'token', '0', 'uscope', uscope,
             'ukey', ukey)
  redis.call('SET', K_u(ukey), id)
else
  redis.call('HSET', K_job(id), 'id', id, 'kind', kind, 'queue', queue, 'state', state,
             'args', args, 'meta', meta, 'priority', priority, 'attempt', '0', 'max', max,
             'errors', '[]', 'created', created, 'sched', sched, 'token', '0', 'uscope', uscope)
end
if ver ~= '1' then redis.call('HSET', K_job(id), 'ver', ver) end
-- `enter` for the states a job is inserted in, then the listing indexes and the count.
if available then
  redis.call('ZADD', K_av(queue, akind), -tonumber(priority), sched .. p)
  redis.call('SADD', K_ak(queue), akind)
else
  redis.call('ZADD', K_waiting(), 0, sched .. p)
end
redis.call('ZADD', K_st(state), 0, p)
redis.call('ZADD', K_all(), 0, p)
redis.call('ZADD', K_queue(queue), 0, p)
redis.call('ZADD', K_kind(kind), 0, p)
if redis.call('HINCRBY', K_counts(), state .. ':' .. queue, 1) <= 0 then
  redis.call('HDEL', K_counts(), state .. ':' .. queue)  -- as flush() does
end
if available then
  -- As insert.lua: the wake-up says the queue's top priority, so a worker holding lower
  -- priorities claims this one at once.
  redis.call('PUBLISH', channel,
             cjson.encode({from = sender, queues = {queue}, top = {[queue] = tonumber(priority)}}))
end
return n
