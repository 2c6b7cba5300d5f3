-- record_logs: ARGV[2] id, ARGV[3] attempt, ARGV[4] token, ARGV[5] a JSON array of log lines,
-- ARGV[6] how many lines the job keeps. Appends the lines of the running attempt to the job's
-- log (its newest ARGV[6] kept), fenced like finish, except that a job cancelled during this
-- run (same attempt and token) still takes them: the run's last lines, which its refused end
-- could not carry. Returns 1, or 0 when the run is no longer current.
local j = load(ARGV[2])
local ended_by_cancel = j ~= nil and j.state == 'cancelled'
  and tonumber(j.attempt) == tonumber(ARGV[3]) and tonumber(j.token) == tonumber(ARGV[4])
if not (fenced(j, ARGV[3], ARGV[4]) or ended_by_cancel) then return 0 end
append_logs(j, ARGV[5], tonumber(ARGV[6]))
save(j)
return 1
