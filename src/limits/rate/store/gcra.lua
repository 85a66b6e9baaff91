-- GCRA over several limits at once, atomically: every limit is checked
-- before any is charged, so a refused call is charged nothing (the same rule
-- as the in-memory limits). A limit may grant a lease of several units at
-- once (the replica spends the rest locally): as many as it asks for and the
-- limit allows now, at least one.
--
-- KEYS[i]: one limit's key (its theoretical arrival time, microseconds on
--          the store's clock). All keys share one hash tag (one slot).
-- ARGV[3i-2]: the limit's emission interval in microseconds (period/amount).
-- ARGV[3i-1]: the limit's burst.
-- ARGV[3i]:   the units asked for (the lease, at least 1).
--
-- Returns {0, g1, ..., gn} when the call is let through (gi: the units
-- granted by limit i), else {i, wait}: the first limit (1-based, in KEYS
-- order) that has not one unit, and the microseconds until it has. Time is
-- the store's (TIME), so replicas with skewed clocks agree. A key expires
-- when its limit is full again: an idle caller costs nothing.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next_tats = {}
local granted = {0}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[3 * i - 2])
  local burst = tonumber(ARGV[3 * i - 1])
  local want = tonumber(ARGV[3 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or 0) or 0
  if tat < now then
    tat = now
  end
  -- Units that fit now: n with tat + n * interval - burst * interval <= now.
  local fit = math.floor((now + burst * interval - tat) / interval)
  if fit < 1 then
    return {i, tat + interval - burst * interval - now}
  end
  local n = math.min(want, fit)
  next_tats[i] = tat + n * interval
  granted[i + 1] = n
end
for i = 1, #KEYS do
  -- '%.0f': a Lua number as an integer string (tostring would round it).
  local ttl_ms = math.ceil((next_tats[i] - now) / 1000)
  redis.call('SET', KEYS[i], string.format('%.0f', next_tats[i]), 'PX', string.format('%.0f', ttl_ms))
end
return granted
