-- record_step: ARGV[2] id, [3] attempt, [4] token, [5] the step as JSON ([name, value, at]).
-- Appends the step to the job's `steps` (a JSON array, kept as text: no decoding, so values
-- come back exactly as written), fenced like finish; returns 1, or 0 when the run is no
-- longer current.
local j = load(ARGV[2])
if not fenced(j, ARGV[3], ARGV[4]) then return 0 end
local key = K_job(j.id)
local steps = redis.call('HGET', key, 'steps')
if steps then
  steps = string.sub(steps, 1, -2) .. ',' .. ARGV[5] .. ']'
else
  steps = '[' .. ARGV[5] .. ']'
end
redis.call('HSET', key, 'steps', steps)
return 1
