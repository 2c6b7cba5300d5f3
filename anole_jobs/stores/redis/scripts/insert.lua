-- insert: ARGV[2] wake-up channel, [3] sender id, [4] n, then n jobs of NEW_JOB_FIELDS values
-- each (one round trip per batch). Unique keys are resolved here, atomically: concurrent
-- inserts of one key insert exactly one. The wake-up for the queues that got an available job
-- is published from here too, so an enqueue stays one round trip (store.py wakes this
-- process's own waiters). Returns {id1, inserted1, id2, inserted2, ...}.
local channel, sender, n = ARGV[2], ARGV[3], tonumber(ARGV[4])
local out, woken, queues = {}, {}, {}
for k = 0, n - 1 do
  local first = 5 + k * NEW_JOB_FIELDS
  local id, inserted = insert_one(first)
  out[#out + 1] = id
  out[#out + 1] = inserted
  local queue = ARGV[first + 1]
  if inserted == 1 and ARGV[first + 2] == 'available' and not woken[queue] then
    woken[queue] = true
    queues[#queues + 1] = queue
  end
end
if #queues > 0 then
  table.sort(queues)
  redis.call('PUBLISH', channel, cjson.encode({from = sender, queues = queues}))
end
return done(out)
