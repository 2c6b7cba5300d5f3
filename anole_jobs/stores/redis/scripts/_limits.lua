-- Queue limits (docs/limits.md), shared by claim_limited.lua and limits_held.lua: not a
-- script of its own (the leading underscore), prepended by those two after _lib.lua.
--
-- `limits_of(queue, gc, rc, rs)` overlays the runtime limits (the `limits` hash) on the
-- settings' ones. A partition is the cjson text of the args fields' values (null when
-- missing). Running jobs are those a limited claim took (`lr:` hash), dropped once they no
-- longer run; the rate window of a partition is a sorted set of claim times (epoch seconds,
-- scores written from strings so no precision is lost).
--
-- The plan follows anole_jobs/limits.py's Planner; tests/contract/limit_scenarios.py runs one
-- table of scenarios against both (and PostgreSQL's claim function), so keep them in step.

local function limits_of(queue, gc, rc, rs)
  local runtime = redis.call('HGET', K_limits(), queue)
  if runtime then
    runtime = cjson.decode(runtime)
    if runtime.gc then gc = tonumber(runtime.gc) end
    if runtime.rc then rc, rs = tonumber(runtime.rc), tonumber(runtime.rs) end
  end
  return gc, rc, rs
end

local function partition_of(fields, args)
  if #fields == 0 then return '' end
  local decoded = cjson.decode(args)
  local values = {}
  for i, name in ipairs(fields) do
    local value = decoded[name]
    if value == nil then value = cjson.null end
    values[i] = value
  end
  if #fields == 1 then return cjson.encode(values[1]) end
  return cjson.encode(values)
end

-- {partition -> running jobs} of `queue`, forgetting jobs that no longer run.
local function running_of(queue, fields)
  local running, gone = {}, {}
  local ids = redis.call('HKEYS', K_lr(queue))
  for _, id in ipairs(ids) do
    local h = redis.call('HMGET', K_job(id), 'state', 'args', 'queue')
    if h[1] == 'running' and h[3] == queue then
      local part = partition_of(fields, h[2])
      running[part] = (running[part] or 0) + 1
    else
      gone[#gone + 1] = id
    end
  end
  for first = 1, #gone, 1000 do
    redis.call('HDEL', K_lr(queue), unpack(gone, first, math.min(first + 999, #gone)))
  end
  return running
end

-- The rate window of one queue: per partition, the claims whose times fall in (now - period,
-- ...], later ones too (claimers whose clocks read later before they took their turn).
-- Claims stay stored one period more, so a claimer whose clock read earlier (it waited for
-- its turn) still finds every claim of its own window.
local function window(queue, rc, rs, now)
  local counts, totals = {}, {}
  local since = '(' .. string.format('%.17g', tonumber(now) - (rs or 0))
  local w = {}
  function w.count(part)
    if not rc then return 0 end
    local n = counts[part]
    if n == nil then
      local key = K_lw(queue, part)
      redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.17g', tonumber(now) - 2 * rs))
      totals[part] = redis.call('ZCARD', key)
      n = redis.call('ZCOUNT', key, since, '+inf')
      counts[part] = n
    end
    return n
  end
  function w.add(part, claim)
    local key = K_lw(queue, part)
    local n = w.count(part)
    redis.call('ZADD', key, now, now .. ':' .. claim)
    redis.call('PEXPIRE', key, math.ceil(2 * rs * 1000) + 1000)
    counts[part] = n + 1
    totals[part] = totals[part] + 1
  end
  -- When the window lets one more claim of `part` in (epoch seconds): the claim `rc` places
  -- from the newest, plus the period.
  function w.reopens(part)
    w.count(part)
    local at = totals[part] - rc
    local entry = redis.call('ZRANGE', K_lw(queue, part), at, at, 'WITHSCORES')
    return tonumber(entry[2]) + rs
  end
  return w
end
