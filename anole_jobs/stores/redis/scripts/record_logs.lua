-- record_logs: ARGV[2] id, ARGV[3] attempt, ARGV[4] token, ARGV[5] a JSON array of log lines,
-- ARGV[6] how many lines the job keeps. Appends the lines of the running attempt to the job's
-- log (its newest ARGV[6] kept), fenced like finish; returns 1, or 0 when the run is no longer
-- current.
local j = load(ARGV[2])
if not fenced(j, ARGV[3], ARGV[4]) then return 0 end
append_logs(j, ARGV[5], tonumber(ARGV[6]))
save(j)
return 1
