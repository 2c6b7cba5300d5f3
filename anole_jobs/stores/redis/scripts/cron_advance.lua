-- cron_advance: ARGV[2] name, [3] tick key, [4] '1' when a job follows in ARGV[5..] (the
-- NEW_JOB_FIELDS of insert). Atomically: when the tick is later than the entry's last one,
-- record it and insert the job. Returns {id, inserted}, {} (recorded, no job) or nil.
local name, tick = ARGV[2], ARGV[3]
local current = redis.call('HGET', K_cron(), name)
local last_id = ''
if current then
  local bar = string.find(current, '|', 1, true)
  if string.sub(current, 1, bar - 1) >= tick then return false end
  last_id = string.sub(current, bar + 1)
end
local out = {}
if ARGV[4] == '1' then
  -- The three values after the job's, when given: its fairness value, weight and sequence
  -- (as insert's).
  local f = 5 + NEW_JOB_FIELDS
  local flow = ARGV[f] and {ARGV[f], ARGV[f + 1], ARGV[f + 2]} or nil
  local id, inserted = insert_one(ARGV, 5, nil, flow)
  last_id = idstr(id)
  out = {id, inserted}
end
redis.call('HSET', K_cron(), name, tick .. '|' .. last_id)
return done(out)
