-- record_progress: ARGV[2] id, ARGV[3] attempt, ARGV[4] token, ARGV[5] progress JSON. Stores
-- the running job's last progress report, fenced like finish; returns 1, or 0 when the run is
-- no longer current.
local j = load(ARGV[2])
if not fenced(j, ARGV[3], ARGV[4]) then return 0 end
set(j, 'progress', ARGV[5])
save(j)
return 1
