-- Delete the audit entries recorded before a time. ARGV: prefix, time score (exclusive)
return redis.call('ZREMRANGEBYSCORE', K_audit(), '-inf', '(' .. ARGV[2])
