-- reserve (on a cluster only, in the global hash tag's slot): ARGV[2] n, ARGV[3..] queues to add
-- to the known queues. Reserves n job sequence numbers of the cluster-wide counter, so ids grow
-- in enqueue order across slots; returns the last.
for i = 3, #ARGV do redis.call('SADD', K_known_queues(), ARGV[i]) end
return redis.call('INCRBY', K_next_id(), tonumber(ARGV[2]))
