-- insert: ARGV[2] wake-up channel, [3] sender id, [4] n, [5] the n jobs as ONE JSON array of
-- strings, NEW_JOB_FIELDS per job (one round trip per batch; one argument instead of 12 per
-- job, because packing thousands of arguments cost the client more than the script took).
-- Unique keys are resolved here, atomically: concurrent inserts of one key insert exactly
-- one (the caller removed duplicates within the batch). The wake-up for the queues that got
-- an available job is published from here too, so an enqueue stays one round trip (store.py
-- wakes this process's own waiters), with the highest priority of each queue's new jobs
-- (`top`, which a worker holding lower jobs claimed ahead claims at once). Returns ONE string "id1,inserted1,id2,inserted2,...":
-- parsing a reply of 2n integers cost the client more than the whole script.
local channel, sender, n = ARGV[2], ARGV[3], tonumber(ARGV[4])
local batch = cjson.decode(ARGV[5])
-- ARGV[6], when given: per job {fairness value or '', weight, sequence or ''} (flow jobs).
local flows = ARGV[6] and cjson.decode(ARGV[6]) or nil
-- First the unique holders, then one INCRBY for the ids of every job that goes in.
local held, fresh = {}, 0
for k = 0, n - 1 do
  local first = 1 + k * NEW_JOB_FIELDS
  if batch[first + 9] == '1' then held[k] = holder(batch[first + 10]) end
  if not held[k] then fresh = fresh + 1 end
end
local next_id = 0
if fresh > 0 then next_id = take_ids(fresh) end
local out, woken, queues, top = {}, {}, {}, {}
for k = 0, n - 1 do
  local first = 1 + k * NEW_JOB_FIELDS
  if held[k] then
    out[#out + 1] = held[k]
    out[#out + 1] = '0'
  else
    local id = idstr(next_id)
    next_id = next_id + ID_STRIDE
    insert_one(batch, first, id, flows and flows[k + 1])
    out[#out + 1] = id
    out[#out + 1] = '1'
    local queue = batch[first + 1]
    if batch[first + 2] == 'available' then
      local priority = tonumber(batch[first + 5])
      if not woken[queue] then
        woken[queue] = true
        queues[#queues + 1] = queue
        top[queue] = priority
      elseif priority > top[queue] then
        top[queue] = priority
      end
    end
  end
end
if #queues > 0 then
  table.sort(queues)
  redis.call('PUBLISH', channel, cjson.encode({from = sender, queues = queues, top = top}))
end
return done(table.concat(out, ','))
