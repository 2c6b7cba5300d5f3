-- finish: ARGV[2] = n, then n results of 8 values: id, attempt, token, state, at key,
-- scheduled_at key ('' = keep), error entry JSON ('' = none), give back attempt ('1'/'0').
-- Each write is fenced (R22); returns 1/0 per result.
local out = {}
for k = 0, tonumber(ARGV[2]) - 1 do
  local i = 3 + k * 8
  local j = load(ARGV[i])
  if fenced(j, ARGV[i + 1], ARGV[i + 2]) then
    local state, at, sched, entry = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
    leave(j)
    set(j, 'state', state)
    if entry ~= '' then append_error(j, entry) end
    if ARGV[i + 7] == '1' then set(j, 'attempt', string.format('%d', tonumber(j.attempt) - 1)) end
    if FINAL[state] then set(j, 'finished', at) end
    if sched ~= '' then set(j, 'sched', sched) end
    enter(j)
    save(j)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return done(out)
