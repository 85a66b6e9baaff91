-- GCRA over several limits at once, atomically: every limit is checked
-- before any is charged, so a refused call is charged nothing (the same rule
-- as the in-memory limits).
--
-- KEYS[i]: one limit's key (its theoretical arrival time, microseconds on
--          the store's clock). All keys share one hash tag (one slot).
-- ARGV[2i-1]: the limit's emission interval in microseconds (period/amount).
-- ARGV[2i]:   the limit's burst.
--
-- Returns {0, 0} when the call is let through, else {i, wait}: the first
-- limit (1-based, in KEYS order) that refused it and the microseconds until
-- it would let one through. Time is the store's (TIME), so replicas with
-- skewed clocks agree. A key expires when its limit is full again: an idle
-- caller costs nothing.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next_tats = {}
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or 0) or 0
  if tat < now then
    tat = now
  end
  local next_tat = tat + interval
  local allowed_at = next_tat - burst * interval
  if now < allowed_at then
    return {i, allowed_at - now}
  end
  next_tats[i] = next_tat
end
for i = 1, #KEYS do
  -- '%.0f': a Lua number as an integer string (tostring would round it).
  local ttl_ms = math.ceil((next_tats[i] - now) / 1000)
  redis.call('SET', KEYS[i], string.format('%.0f', next_tats[i]), 'PX', string.format('%.0f', ttl_ms))
end
return {0, 0}
