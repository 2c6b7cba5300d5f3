-- wake_signalled: ARGV[2] id, [3] now key. A `scheduled` job parked for a signal it already
-- holds (one sent while it was still running) becomes available now. Returns its queue when
-- it did, else ''.
local j = load(ARGV[2])
if not j or j.state ~= 'scheduled' then return '' end
local key = K_job(j.id)
local name = redis.call('HGET', key, 'awaiting')
if not name or redis.call('HEXISTS', key, 'sig:' .. name) == 0 then return '' end
leave(j)
set(j, 'state', 'available')
set(j, 'sched', ARGV[3])
enter(j)
save(j)
return done(j.queue)
