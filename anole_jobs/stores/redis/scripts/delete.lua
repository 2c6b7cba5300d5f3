-- delete: ARGV[2] id. Deletes the job whatever its state; returns 1, or 0 if there was none.
local j = load(ARGV[2])
if not j then return 0 end
destroy(j)
return done(1)
