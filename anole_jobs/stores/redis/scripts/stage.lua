-- stage: ARGV[2] now key, [3] limit. Scheduled and retrying jobs due at now (scheduled_at <=
-- now) become available, oldest first. Members are `sched .. pid`, all digits, so every member
-- whose time is <= now sorts before now .. ':' (':' follows '9'). Returns how many.
local due = redis.call('ZRANGEBYLEX', K_waiting(), '-', '(' .. ARGV[2] .. ':',
                       'LIMIT', 0, tonumber(ARGV[3]))
local staged = 0
for _, member in ipairs(due) do
  local j = load(member_id(member))
  if j then
    leave(j)
    set(j, 'state', 'available')
    enter(j)
    save(j)
    staged = staged + 1
  else
    zrem(K_waiting(), member)  -- the job hash is gone (evicted?): drop its index entry
  end
end
return done(staged)
