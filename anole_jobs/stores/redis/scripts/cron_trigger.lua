-- cron_trigger: ARGV[2] name, ARGV[3..] the NEW_JOB_FIELDS of insert (entry `name` run by
-- hand). Atomically: insert the job and, when it went in, record it as the entry's last job;
-- the entry's last tick stays as it is (none for an entry the leader has not seen yet: the
-- value is then '|<id>'). Returns {id, inserted}.
local name = ARGV[2]
-- The three values after the job's, when given: its fairness value, weight and sequence (as
-- insert's).
local f = 3 + NEW_JOB_FIELDS
local flow = ARGV[f] and {ARGV[f], ARGV[f + 1], ARGV[f + 2]} or nil
local id, inserted = insert_one(ARGV, 3, nil, flow)
if inserted == 1 then
  local current = redis.call('HGET', K_cron(), name)
  local tick = ''
  if current then
    local bar = string.find(current, '|', 1, true)
    tick = string.sub(current, 1, bar - 1)
  end
  redis.call('HSET', K_cron(), name, tick .. '|' .. idstr(id))
end
return done({id, inserted})
