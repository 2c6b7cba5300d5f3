-- finish: ARGV[2] = n, [3] the n results as ONE JSON array of strings, 8 per result: id,
-- attempt, token, state, at key, scheduled_at key ('' = keep), error entry JSON ('' = none),
-- give back attempt ('1'/'0'). One argument instead of 8 per result: packing them cost the
-- client more than the script took (as for insert). Each write is fenced (the job still
-- running, with the same attempt and claim token); returns 1/0 per result.
local out = {}
local v = cjson.decode(ARGV[3])
for k = 0, tonumber(ARGV[2]) - 1 do
  local i = 1 + k * 8
  local j = load(v[i])
  if fenced(j, v[i + 1], v[i + 2]) then
    local state, at, sched, entry = v[i + 3], v[i + 4], v[i + 5], v[i + 6]
    leave(j)
    set(j, 'state', state)
    if entry ~= '' then append_error(j, entry) end
    if v[i + 7] == '1' then set(j, 'attempt', string.format('%d', tonumber(j.attempt) - 1)) end
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
