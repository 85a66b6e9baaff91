-- wrk script for bench/run.sh: POSTs the file named by BENCH_BODY as JSON
-- on every request, and prints one JSON line with the totals at the end
-- (requests, errors by kind, latency percentiles in microseconds).
local path = os.getenv("BENCH_BODY")
if path then
  local f = assert(io.open(path, "rb"))
  wrk.body = f:read("*a")
  f:close()
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
-- The TLS rows send a bearer token (BENCH_AUTH="Bearer …").
local auth = os.getenv("BENCH_AUTH")
if auth and auth ~= "" then
  wrk.headers["Authorization"] = auth
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"mode":"wrk","requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d,' ..
    '"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    latency.max, latency.mean))
end
