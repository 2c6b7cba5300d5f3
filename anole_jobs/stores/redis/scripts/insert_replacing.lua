-- insert_replacing: ONE job with a unique key that replaces the job holding it (see
-- `Store.insert_replacing`). ARGV[2] is ONE JSON array of strings: the wake-up channel, the
-- sender id, the replaced job's error entry as JSON without its attempt (the script adds it),
-- then the job's NEW_JOB_FIELDS values. A holder that is waiting or running becomes cancelled
-- (its worker's later writes fail their fence) and lets the key go; then the job goes in.
-- Returns {new id, id of the job it cancelled or 0}.
local v = cjson.decode(ARGV[2])
local channel, sender, entry = v[1], v[2], v[3]
local created, ukey = v[11], v[14]
local ended = 0
local held_by = holder(ukey)
if held_by then
  local j = load(held_by)
  if LIVE[j.state] then
    leave(j)
    set(j, 'state', 'cancelled')
    set(j, 'finished', created)
    enter(j)  -- lets the key go
    append_error(j, string.sub(entry, 1, -2) .. ',"attempt":' .. tonumber(j.attempt) .. '}')
    save(j)
    ended = tonumber(j.id)
  end
end
-- The job's fairness value, weight and sequence follow its fields when it has a flow.
local flow = nil
local after = 4 + NEW_JOB_FIELDS
if v[after] ~= nil then flow = {v[after], v[after + 1], v[after + 2]} end
local n, inserted = insert_one(v, 4, nil, flow)
if inserted == 1 and v[6] == 'available' then
  redis.call('PUBLISH', channel,
             cjson.encode({from = sender, queues = {v[5]}, top = {[v[5]] = tonumber(v[9])}}))
end
return done({n, inserted, ended})
