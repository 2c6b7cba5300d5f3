-- cancel_workflow: ARGV[2] workflow id, [3] now key. Marks the workflow cancelled and cancels
-- every step not ended. Returns nil for an unknown workflow, else {was it not cancelled before
-- (1/0), the ids of the steps it cancelled, ...}.
local before = redis.call('HGET', K_wf(ARGV[2]), 'cancelled')
if not before then return false end
redis.call('HSET', K_wf(ARGV[2]), 'cancelled', '1')
local out = {before == '1' and 0 or 1}
for _, member in ipairs(redis.call('ZRANGEBYLEX', K_wfjobs(ARGV[2]), '-', '+')) do
  local j = load(member_id(member))
  if j and LIVE[j.state] then
    leave(j)
    if j.state == 'running' then end_attempt(j, 'cancelled', ARGV[3]) end
    set(j, 'state', 'cancelled')
    set(j, 'finished', ARGV[3])
    enter(j)
    save(j)
    out[#out + 1] = tonumber(j.id)
  end
end
return done(out)
