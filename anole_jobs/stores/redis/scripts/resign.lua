-- resign: ARGV[2] instance. Compare-and-delete: gives up leadership only if `instance` holds it.
local current = redis.call('GET', K_leader())
if current then
  local bar = string.find(current, '|[^|]*$')
  if string.sub(current, 1, bar - 1) == ARGV[2] then
    redis.call('DEL', K_leader())
    return 1
  end
end
return 0
