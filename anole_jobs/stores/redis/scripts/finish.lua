-- finish: ARGV[2] = n, [3] the n results as ONE JSON array of strings, 14 per result: id,
-- attempt, token, state, at key, scheduled_at key ('' = keep), error entry JSON ('' = none),
-- give back attempt ('1'/'0'), result JSON ('' = none; kept only by a 'completed' write),
-- the handler's start as a time key ('' = keep the claim's `attempted`), and the job's
-- timeline: the attempt's outcome ('' = no entry), its last progress JSON ('' = keep), its
-- log lines as a JSON array ('' = none) and how many lines the job keeps.
-- [4] the channel of finished jobs, [5] the sender id, [6] the wake-up channel (for the
-- workflow steps a finish makes available). One argument instead of 10 per result:
-- packing them cost the client more than the script took (as for insert). Each write is
-- fenced (the job still running, with the same attempt and claim token); returns 1/0 per
-- result. The ids of the jobs it ended are published once, and only while someone listens
-- (result waiters), so a batch with no waiter costs nothing more.
local out, ended = {}, {}
local v = cjson.decode(ARGV[3])
for k = 0, tonumber(ARGV[2]) - 1 do
  local i = 1 + k * 14
  local j = load(v[i])
  if fenced(j, v[i + 1], v[i + 2]) then
    local state, at, sched, entry = v[i + 3], v[i + 4], v[i + 5], v[i + 6]
    leave(j)
    if v[i + 10] ~= '' then
      end_attempt(j, v[i + 10], at, v[i + 9] ~= '' and v[i + 9] or nil)
    end
    if v[i + 11] ~= '' then set(j, 'progress', v[i + 11]) end
    if v[i + 12] ~= '' then append_logs(j, v[i + 12], tonumber(v[i + 13])) end
    set(j, 'state', state)
    if entry ~= '' then append_error(j, entry) end
    if v[i + 7] == '1' then set(j, 'attempt', string.format('%d', tonumber(j.attempt) - 1)) end
    if FINAL[state] then
      set(j, 'finished', at)
      ended[#ended + 1] = j.id
    end
    if state == 'completed' and v[i + 8] ~= '' then set(j, 'result', v[i + 8]) end
    if sched ~= '' then set(j, 'sched', sched) end
    if v[i + 9] ~= '' then set(j, 'attempted', v[i + 9]) end
    enter(j)
    stat_ended(j, state, at, entry ~= '' and v[i + 7] ~= '1')
    save(j)
    if j.wf and FINAL[state] then wf_settle(j, at) end  -- a workflow step: its dependents
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
-- (On a cluster NUMSUB counts only this node's subscribers: publish whenever a job ended.)
if #ended > 0 and (CLUSTER or redis.call('PUBSUB', 'NUMSUB', ARGV[4])[2] > 0) then
  redis.call('PUBLISH', ARGV[4], cjson.encode({from = ARGV[5], queues = ended}))
end
wf_publish(ARGV[6], ARGV[4])
return done(out)
