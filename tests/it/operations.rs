//! Operations end to end: the Prometheus metrics after real traffic, the
//! access log of the real binary, graceful shutdown (readiness first, grace
//! for streams, a final -32056 event, exit 0) and configuration reloads
//! (in-process and through the binary: file watch and SIGHUP), all over
//! 127.0.0.1 with every wait bounded.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::client::{self, Proto, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use a2a_gateway::config::{self, Overrides};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");

/// Bound for one event or one exchange; generous, it only matters on failure.
const WAIT: Duration = Duration::from_secs(10);
/// Bound for a metric to reach its expected value.
const METRIC_WAIT: Duration = Duration::from_secs(10);
/// Bound for the binary to notice a changed file (checked every 2 s).
const RELOAD_WAIT: Duration = Duration::from_secs(15);

const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const OVERLOADED: i64 = -32071;
const UNAUTHENTICATED: i64 = -32030;
const SHUTTING_DOWN: i64 = -32056;

// ------------------------------------------------------------ requests

/// A 0.3 `message/send` whose text matches no skill (routing falls to the
/// default rule).
fn send(id: &str) -> String {
    message_call(id, "message/send")
}

fn stream(id: &str) -> String {
    message_call(id, "message/stream")
}

fn message_call(id: &str, method: &str) -> String {
    crate::support::calls::call_raw(&json!(id).to_string(), method, "hi there")
}

fn gated(events: usize) -> Mode {
    Mode::Stream {
        events,
        interval_ms: 0,
        gate_last: true,
    }
}

fn assert_ok(reply: &Reply, id: &str) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["id"], id, "{body}");
    assert!(body.get("result").is_some(), "{body}");
    body
}

fn assert_rpc_error(reply: &Reply, status: StatusCode, code: i64) -> Value {
    assert_eq!(reply.status, status, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"]["code"], code, "{body}");
    body
}

fn event_json(event: &str) -> Value {
    serde_json::from_str(event).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {event}"))
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The overrides `TestGateway::from_toml` uses, for reloads of its config.
fn test_overrides() -> Overrides {
    Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    }
}

// ------------------------------------------------- Prometheus text format

/// One sample line: `name{label="value",…} value`.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed `/metrics` answer.
struct Scrape {
    content_type: String,
    text: String,
    samples: Vec<Sample>,
}

impl Scrape {
    fn parse(content_type: String, text: String) -> Scrape {
        let samples = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| parse_sample(l).unwrap_or_else(|| panic!("unparsable sample line: {l}")))
            .collect();
        Scrape {
            content_type,
            text,
            samples,
        }
    }

    /// Samples named `name` carrying (at least) these labels.
    fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect()
    }

    /// The value of the one sample that matches; `None` when none does
    /// (a counter never incremented has no series). Panics on several.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found = self.matching(name, labels);
        assert!(
            found.len() <= 1,
            "{name} {labels:?} matches several series: {found:#?}"
        );
        found.first().map(|s| s.value)
    }

    /// Like `get`, but the series must exist.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or_else(|| {
            panic!(
                "no sample {name} {labels:?}; the family has:\n{}",
                self.family(name)
            )
        })
    }

    /// Every line of the text mentioning `name`, for failure messages.
    fn family(&self, name: &str) -> String {
        let lines: Vec<&str> = self.text.lines().filter(|l| l.contains(name)).collect();
        lines.join("\n")
    }
}

fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(after) = rest.strip_prefix('{') {
        let mut chars = after.char_indices().peekable();
        let end = loop {
            // Skip separators, stop at '}'.
            while chars.next_if(|&(_, c)| c == ',' || c == ' ').is_some() {}
            let (start, c) = *chars.peek()?;
            if c == '}' {
                break start + 1;
            }
            let eq = after[start..].find('=')? + start;
            let key = after[start..eq].to_string();
            while chars.next_if(|&(i, _)| i <= eq).is_some() {}
            if chars.next()?.1 != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    other => value.push(other),
                }
            }
            labels.insert(key, value);
        };
        rest = &after[end..];
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// `GET {admin}/metrics`, parsed.
async fn scrape(admin: &str) -> Scrape {
    let reply = client::get(&format!("{admin}/metrics"), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let content_type = reply.header("content-type").unwrap_or("").to_string();
    Scrape::parse(content_type, reply.text())
}

/// Scrapes until the sample (0 when absent) satisfies `ok`; panics with the
/// family's lines after `METRIC_WAIT`.
async fn wait_metric(
    admin: &str,
    name: &str,
    labels: &[(&str, &str)],
    ok: impl Fn(f64) -> bool,
) -> Scrape {
    let deadline = Instant::now() + METRIC_WAIT;
    loop {
        let scraped = scrape(admin).await;
        if ok(scraped.get(name, labels).unwrap_or(0.0)) {
            return scraped;
        }
        assert!(
            Instant::now() < deadline,
            "{name} {labels:?} did not reach the expected value within {METRIC_WAIT:?}; the family has:\n{}",
            scraped.family(name)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[test]
fn the_text_format_parser_reads_labels_values_and_infinity() {
    let text = "# HELP x y\n# TYPE x counter\nx_total{a=\"1\",b=\"q\\\"uote\"} 3\nplain 1.5\nh_bucket{le=\"+Inf\"} 7\n";
    let s = Scrape::parse(String::new(), text.into());
    assert_eq!(s.value("x_total", &[("a", "1")]), 3.0);
    assert_eq!(s.value("x_total", &[("b", "q\"uote")]), 3.0);
    assert_eq!(s.value("plain", &[]), 1.5);
    assert_eq!(s.value("h_bucket", &[("le", "+Inf")]), 7.0);
    assert_eq!(s.get("x_total", &[("a", "2")]), None);
}

// ------------------------------------------------------------- 1. metrics

#[tokio::test]
async fn metrics_after_real_traffic_have_exact_values() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &mock.url())], "").await;
    let admin = gw.admin_url();

    let mut sent_bytes = 0;
    for i in 0..3 {
        let id = format!("ok-{i}");
        let body = send(&id);
        sent_bytes += body.len();
        let reply = client::post_json(&gw.url(), body, &[]).await;
        assert_ok(&reply, &id);
    }
    let unknown = json!({"jsonrpc": "2.0", "id": "u", "method": "no/such", "params": {}});
    let reply = client::post_json(&gw.url(), unknown.to_string(), &[]).await;
    assert_rpc_error(&reply, StatusCode::OK, METHOD_NOT_FOUND);
    let invalid = json!({"jsonrpc": "2.0", "id": "p", "method": "message/send", "params": {}});
    let reply = client::post_json(&gw.url(), invalid.to_string(), &[]).await;
    assert_rpc_error(&reply, StatusCode::OK, INVALID_PARAMS);

    // Records are written when each answer is done with: wait for them.
    let requests = "a2a_gateway_requests_total";
    wait_metric(&admin, requests, &[("error", "invalid_params")], |v| {
        v >= 1.0
    })
    .await;
    let sends = [("family", "send"), ("error", "none")];
    let m = wait_metric(&admin, requests, &sends, |v| v >= 3.0).await;

    assert!(
        m.content_type.starts_with("text/plain"),
        "content-type: {}",
        m.content_type
    );
    assert_eq!(
        m.value(
            requests,
            &[
                ("version", "0.3"),
                ("family", "send"),
                ("skill", "none"),
                ("upstream", "a"),
                ("status", "200"),
                ("error", "none"),
            ]
        ),
        3.0,
        "{}",
        m.family(requests)
    );
    assert_eq!(
        m.value(
            requests,
            &[
                ("family", "unknown"),
                ("status", "200"),
                ("error", "method_not_found")
            ]
        ),
        1.0,
        "{}",
        m.family(requests)
    );
    assert_eq!(
        m.value(
            requests,
            &[
                ("family", "send"),
                ("upstream", "none"),
                ("status", "200"),
                ("error", "invalid_params")
            ]
        ),
        1.0,
        "{}",
        m.family(requests)
    );

    // The whole-request histogram: 3 sends that reached upstream "a".
    let bucket = "a2a_gateway_request_duration_seconds_bucket";
    let send_a = [("family", "send"), ("upstream", "a")];
    let inf = m.value(bucket, &[send_a[0], send_a[1], ("le", "+Inf")]);
    assert_eq!(inf, 3.0, "{}", m.family(bucket));
    assert_eq!(
        m.value("a2a_gateway_request_duration_seconds_count", &send_a),
        3.0
    );
    let finite: Vec<(f64, f64)> = m
        .matching(bucket, &send_a)
        .into_iter()
        .filter(|s| s.labels["le"] != "+Inf")
        .map(|s| (s.labels["le"].parse::<f64>().unwrap(), s.value))
        .collect();
    assert!(!finite.is_empty(), "{}", m.family(bucket));
    let mut sorted = finite.clone();
    sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
    for pair in sorted.windows(2) {
        assert!(pair[0].1 <= pair[1].1, "buckets are cumulative: {sorted:?}");
    }
    assert!(
        sorted.iter().all(|(_, v)| *v <= inf),
        "no finite bucket exceeds +Inf: {sorted:?}"
    );
    assert!(
        m.value("a2a_gateway_request_duration_seconds_sum", &send_a) > 0.0,
        "durations add up to something"
    );

    assert_eq!(
        m.value(
            "a2a_gateway_upstream_duration_seconds_count",
            &[("upstream", "a")]
        ),
        3.0
    );
    assert_eq!(
        m.value("a2a_gateway_request_bytes_total", &[("upstream", "a")]),
        sent_bytes as f64,
        "request bytes are the bodies sent"
    );
    assert!(m.value("a2a_gateway_response_bytes_total", &[("upstream", "a")]) > 0.0);
    assert_eq!(
        m.value(
            "a2a_gateway_routing_decisions_total",
            &[("rule", "default")]
        ),
        3.0,
        "{}",
        m.family("a2a_gateway_routing_decisions_total")
    );
    assert_eq!(
        m.value(
            "a2a_gateway_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    // Current-state gauges are brought up to date at each scrape.
    assert_eq!(
        m.value("a2a_gateway_upstream_up", &[("upstream", "a")]),
        1.0
    );
    assert!(m.value("a2a_gateway_card_age_seconds", &[("upstream", "a")]) >= 0.0);
}

// ------------------------------------------------------ 2. SSE and tasks

#[tokio::test]
async fn sse_gauge_goes_up_and_down_and_events_and_task_states_are_counted() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = TestGateway::start(&[("a", &mock.url())], "").await;
    let admin = gw.admin_url();

    let mut sse = client::post_stream(&gw.url(), stream("s-1"), &[]).await;
    assert_eq!(sse.status, StatusCode::OK);
    let first = sse.next_event(WAIT).await.expect("a first event");
    assert_eq!(
        event_json(&first)["result"]["status"]["state"],
        "working",
        "{first}"
    );
    let m = scrape(&admin).await;
    assert_eq!(m.value("a2a_gateway_sse_streams_open", &[]), 1.0);

    mock.release_stream();
    let rest = sse.collect_events(WAIT).await;
    assert_eq!(sse.error(), None, "the stream ended cleanly");
    let last = event_json(rest.last().expect("more events after the first"));
    assert_eq!(last["result"]["status"]["state"], "completed", "{last}");
    assert_eq!(last["result"]["final"], true, "{last}");

    let m = wait_metric(&admin, "a2a_gateway_sse_streams_open", &[], |v| v == 0.0).await;
    assert!(
        m.value("a2a_gateway_sse_events_total", &[("kind", "status")]) >= 2.0,
        "working + completed: {}",
        m.family("a2a_gateway_sse_events_total")
    );
    assert!(m.value("a2a_gateway_sse_events_total", &[("kind", "artifact")]) >= 1.0);
    assert_eq!(
        m.value("a2a_gateway_sse_time_to_first_event_seconds_count", &[]),
        1.0
    );
    let states = "a2a_gateway_task_states_total";
    assert!(
        m.value(states, &[("skill", "none"), ("state", "working")]) >= 1.0,
        "{}",
        m.family(states)
    );
    assert!(m.value(states, &[("skill", "none"), ("state", "completed")]) >= 1.0);
    // The stream's task went from working to completed in sight of the gateway.
    assert!(
        m.value(
            "a2a_gateway_task_duration_seconds_count",
            &[("skill", "none")]
        ) >= 1.0,
        "{}",
        m.family("a2a_gateway_task_duration_seconds")
    );
    // The stream's record: family stream, whole stream measured.
    assert_eq!(
        m.value(
            "a2a_gateway_requests_total",
            &[("family", "stream"), ("status", "200"), ("error", "none")]
        ),
        1.0
    );

    // A unary send answers a completed task: one more completed state.
    let before = m.value(states, &[("skill", "none"), ("state", "completed")]);
    assert_ok(&client::post_json(&gw.url(), send("u-1"), &[]).await, "u-1");
    wait_metric(
        &admin,
        states,
        &[("skill", "none"), ("state", "completed")],
        |v| v >= before + 1.0,
    )
    .await;
}

#[tokio::test]
async fn client_connections_are_counted_while_open_and_in_total() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &mock.url())], "").await;
    let admin = gw.admin_url();
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(tokio::net::TcpStream::connect(gw.addr()).await.unwrap());
    }
    let reply = client::post_json(&gw.url(), send("c-1"), &[]).await;
    assert_ok(&reply, "c-1");
    let m = wait_metric(&admin, "a2a_gateway_connections_open", &[], |v| v == 3.0).await;
    assert_eq!(
        m.value("a2a_gateway_connections_total", &[]),
        4.0,
        "three held and the call's own"
    );
    drop(open);
    let m = wait_metric(&admin, "a2a_gateway_connections_open", &[], |v| v == 0.0).await;
    assert_eq!(
        m.value("a2a_gateway_connections_total", &[]),
        4.0,
        "scrapes of the admin listener are not counted"
    );
}

// ---------------------------------------------------- 3. limits and auth

#[tokio::test]
async fn a_stream_over_max_streams_is_counted_as_a_streams_rejection() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = TestGateway::start(&[("a", &mock.url())], "[concurrency]\nmax_streams = 1\n").await;
    let admin = gw.admin_url();

    let mut held = client::post_stream(&gw.url(), stream("s-1"), &[]).await;
    assert_eq!(held.status, StatusCode::OK);
    held.next_event(WAIT).await.expect("the first stream runs");

    let refused = client::post_stream(&gw.url(), stream("s-2"), &[]).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = serde_json::from_slice(&refused.read_body().await).unwrap();
    assert_eq!(body["error"]["code"], OVERLOADED, "{body}");

    let m = wait_metric(
        &admin,
        "a2a_gateway_rejections_total",
        &[("limit", "streams")],
        |v| v >= 1.0,
    )
    .await;
    assert_eq!(
        m.value("a2a_gateway_rejections_total", &[("limit", "streams")]),
        1.0
    );
    assert_eq!(
        m.get("a2a_gateway_rejections_total", &[("limit", "in_flight")]),
        None,
        "{}",
        m.family("a2a_gateway_rejections_total")
    );
    assert_eq!(
        m.value(
            "a2a_gateway_requests_total",
            &[
                ("family", "stream"),
                ("status", "503"),
                ("error", "overloaded")
            ]
        ),
        1.0
    );

    mock.release_stream();
    held.collect_events(WAIT).await;
    assert_eq!(held.error(), None);
}

#[tokio::test]
async fn a_call_over_max_in_flight_is_counted_as_an_in_flight_rejection() {
    let mock = MockAgent::start(Mode::Delay { ms: 600 }).await;
    let text = format!(
        "[card_refresh]\ntimeout = \"3s\"\n[[upstreams]]\nname = \"slow\"\nurl = \"{}\"\nmax_in_flight = 1\nqueue = 0\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    let admin = gw.admin_url();

    let url = gw.url();
    let first = tokio::spawn(async move { client::post_json(&url, send("first"), &[]).await });
    assert!(
        mock.wait_requests(1, WAIT).await,
        "the first call is in flight"
    );
    let shed = client::post_json(&gw.url(), send("second"), &[]).await;
    assert_rpc_error(&shed, StatusCode::SERVICE_UNAVAILABLE, OVERLOADED);
    assert_ok(&first.await.unwrap(), "first");

    let m = wait_metric(
        &admin,
        "a2a_gateway_requests_total",
        &[("status", "503")],
        |v| v >= 1.0,
    )
    .await;
    let rejections = "a2a_gateway_rejections_total";
    assert_eq!(
        m.get(rejections, &[("limit", "in_flight")]),
        Some(1.0),
        "an in-flight shed is limit=\"in_flight\", not \"streams\":\n{}",
        m.family(rejections)
    );
    assert_eq!(
        m.get(rejections, &[("limit", "streams")]),
        None,
        "no stream was refused:\n{}",
        m.family(rejections)
    );
}

#[tokio::test]
async fn auth_failures_are_counted_by_scheme_and_reason() {
    let mock = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "[card_refresh]\ntimeout = \"2s\"\n\
         [auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\n\
         keys = [{{ id = \"ci\", sha256 = \"{}\" }}]\n\
         [[upstreams]]\nname = \"a\"\nurl = \"{}\"\n",
        sha256_hex("ops-s3cret"),
        mock.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    let admin = gw.admin_url();

    let wrong = client::post_json(&gw.url(), send("w"), &[("x-api-key", "nope")]).await;
    assert_rpc_error(&wrong, StatusCode::UNAUTHORIZED, UNAUTHENTICATED);
    let m = wait_metric(
        &admin,
        "a2a_gateway_auth_failures_total",
        &[("reason", "invalid")],
        |v| v >= 1.0,
    )
    .await;
    let failures = "a2a_gateway_auth_failures_total";
    assert_eq!(
        m.value(failures, &[("scheme", "key"), ("reason", "invalid")]),
        1.0,
        "{}",
        m.family(failures)
    );
    assert_eq!(m.get(failures, &[("reason", "missing")]), None);

    let missing = client::post_json(&gw.url(), send("m"), &[]).await;
    assert_rpc_error(&missing, StatusCode::UNAUTHORIZED, UNAUTHENTICATED);
    let m = wait_metric(&admin, failures, &[("reason", "missing")], |v| v >= 1.0).await;
    // No credentials were given, so no scheme refused them.
    assert_eq!(
        m.value(failures, &[("scheme", "none"), ("reason", "missing")]),
        1.0,
        "{}",
        m.family(failures)
    );
    assert_eq!(m.value(failures, &[("reason", "invalid")]), 1.0);

    let ok = client::post_json(&gw.url(), send("ok"), &[("x-api-key", "ops-s3cret")]).await;
    assert_ok(&ok, "ok");
    let m = scrape(&admin).await;
    let total: f64 = m.matching(failures, &[]).iter().map(|s| s.value).sum();
    assert_eq!(
        total,
        2.0,
        "a good key is no failure: {}",
        m.family(failures)
    );
    assert_eq!(
        mock.request_count(),
        1,
        "refused calls never reach the agent"
    );
}

// ------------------------------------------------------ the real binary

/// A running `a2a-gateway run --config FILE`, killed if a test fails first.
/// Every stderr line is kept.
struct Binary {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// Held while the log reader is stalled; dropping it resumes reading.
    stalled_log: Option<std::sync::mpsc::Sender<()>>,
    addr: String,
    admin: String,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    /// Starts the binary and waits (bounded) for its "listening" line.
    async fn start(config: &Path) -> Binary {
        Self::spawn(config, false).await
    }

    /// Like `start`, but stderr is not read after the "listening" line
    /// until `resume_log`: the pipe fills up, as with a stuck log agent.
    async fn start_with_stalled_log(config: &Path) -> Binary {
        Self::spawn(config, true).await
    }

    fn resume_log(&mut self) {
        self.stalled_log = None;
    }

    async fn spawn(config: &Path, stall: bool) -> Binary {
        let mut child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(config)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let (stalled_log, resume) = std::sync::mpsc::channel::<()>();
        let mut gate = stall.then_some(resume);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let listening = line.contains("a2a-gateway listening");
                sink.lock().unwrap().push(line);
                if let Some(resume) = gate.take_if(|_| listening) {
                    // Returns when the sender is dropped.
                    let _ = resume.recv();
                }
            }
        });
        let mut binary = Binary {
            child,
            lines,
            reader: Some(reader),
            stalled_log: Some(stalled_log),
            addr: String::new(),
            admin: String::new(),
        };
        let line = binary
            .wait_line(
                |l| l.contains("a2a-gateway listening"),
                Duration::from_secs(20),
            )
            .await;
        binary.addr = log_field(&line, "addr");
        binary.admin = log_field(&line, "admin_addr");
        binary
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn admin_url(&self) -> String {
        format!("http://{}", self.admin)
    }

    fn stderr(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The first stderr line satisfying `pred`, waiting up to `limit`.
    async fn wait_line(&mut self, pred: impl Fn(&str) -> bool, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(line) = self.stderr().into_iter().find(|l| pred(l)) {
                return line;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the binary exited ({status}):\n{}",
                    self.stderr().join("\n")
                );
            }
            assert!(
                Instant::now() < deadline,
                "no expected line within {limit:?}:\n{}",
                self.stderr().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{signal}");
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("wait works")
    }

    /// The exit status within `limit`, then every stderr line (read to EOF).
    async fn wait_exit(&mut self, limit: Duration) -> (ExitStatus, Vec<String>) {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.exited() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "no exit within {limit:?}:\n{}",
                self.stderr().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if let Some(reader) = self.reader.take() {
            // The pipe is closed with the process: the reader ends.
            let joined = tokio::task::spawn_blocking(move || reader.join());
            let _ = tokio::time::timeout(Duration::from_secs(5), joined).await;
        }
        (status, self.stderr())
    }
}

/// A field of a log line, JSON (`fields.NAME` or `NAME`) or text (`NAME=`).
fn log_field(line: &str, name: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(line) {
        let value = v
            .get("fields")
            .and_then(|f| f.get(name))
            .or_else(|| v.get(name))
            .unwrap_or_else(|| panic!("no field {name} in {line}"));
        return value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
    }
    let start = line
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no field {name} in {line}"))
        + name.len()
        + 1;
    line[start..].split_whitespace().next().unwrap().to_string()
}

/// The JSON log lines' event fields (flattened or under "fields"), with
/// "target" added; non-JSON lines are skipped.
fn json_events(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            let mut fields = v.get("fields").cloned().unwrap_or_else(|| v.clone());
            if let (Some(obj), Some(target)) = (fields.as_object_mut(), v.get("target")) {
                obj.insert("target".into(), target.clone());
            }
            fields
        })
        .collect()
}

fn access_lines(lines: &[String]) -> Vec<Value> {
    json_events(lines)
        .into_iter()
        .filter(|e| e["target"] == "a2a_gateway::telemetry::access")
        .collect()
}

/// A config file in the temp dir, unique per test; removed on drop.
struct ConfigFile(PathBuf);

impl ConfigFile {
    fn new(tag: &str, text: &str) -> ConfigFile {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "a2a-gw-ops-{tag}-{}-{}.toml",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let file = ConfigFile(std::env::temp_dir().join(name));
        file.replace(text);
        file
    }

    /// Written whole, then renamed over the file: the watcher never reads
    /// a half-written file.
    fn replace(&self, text: &str) {
        let tmp = self.0.with_extension("toml.tmp");
        std::fs::write(&tmp, text).expect("write the temp config");
        std::fs::rename(&tmp, &self.0).expect("rename the config into place");
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(self.0.with_extension("toml.tmp"));
    }
}

/// A JSON-logging config on loopback for the binary.
fn binary_config(grace: &str, card_name: &str, upstreams: &[(&str, String)]) -> String {
    let mut text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"{grace}\"\n\
         [log]\nformat = \"json\"\nlevel = \"info\"\n\
         [card]\nname = \"{card_name}\"\n\
         [card_refresh]\ntimeout = \"3s\"\n"
    );
    for (name, url) in upstreams {
        text.push_str(&format!(
            "[[upstreams]]\nname = \"{name}\"\nurl = \"{url}\"\n"
        ));
    }
    text
}

// -------------------------------------------------------- 4. access log

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_writes_one_json_access_line_per_call() {
    let mock = MockAgent::start(Mode::Normal).await;
    let file = ConfigFile::new(
        "access",
        &binary_config("2s", "Ops", &[("echo", mock.url())]),
    );
    let mut gw = Binary::start(&file.0).await;

    let body = send("access-1");
    let reply = client::post_json(&gw.url(), body.clone(), &[("x-request-id", "ops-test-1")]).await;
    assert_ok(&reply, "access-1");
    assert_eq!(
        reply.header("x-request-id"),
        Some("ops-test-1"),
        "the client's request id is echoed"
    );
    assert_eq!(
        mock.requests()
            .last()
            .and_then(|r| r.header("x-request-id").map(str::to_string)),
        Some("ops-test-1".to_string()),
        "the request id is passed upstream"
    );

    let unknown =
        json!({"jsonrpc": "2.0", "id": "u", "method": "no/such", "params": {}}).to_string();
    let unknown_reply = client::post_json(
        &gw.url(),
        unknown.clone(),
        &[("x-request-id", "ops-test-2")],
    )
    .await;
    assert_rpc_error(&unknown_reply, StatusCode::OK, METHOD_NOT_FOUND);

    let anonymous = client::post_json(&gw.url(), send("access-3"), &[]).await;
    assert_ok(&anonymous, "access-3");
    let generated = anonymous
        .header("x-request-id")
        .expect("a request id is generated and returned")
        .to_string();
    assert!(!generated.is_empty() && generated != "-", "{generated}");

    // The lines are written when each answer is done with; stopping the
    // binary makes sure they are all out.
    gw.signal("TERM");
    let (status, lines) = gw.wait_exit(WAIT).await;
    assert!(status.success(), "exit 0 on SIGTERM: {status}");
    let access = access_lines(&lines);
    let find = |id: &str| -> Value {
        let found: Vec<&Value> = access.iter().filter(|e| e["request_id"] == id).collect();
        assert_eq!(
            found.len(),
            1,
            "exactly one access line for {id}:\n{}",
            lines.join("\n")
        );
        found[0].clone()
    };

    let line = find("ops-test-1");
    assert_eq!(line["message"], "access", "{line}");
    assert_eq!(line["method"], "message/send", "{line}");
    assert_eq!(line["upstream"], "echo", "{line}");
    assert_eq!(line["rule"], "default", "{line}");
    assert_eq!(line["skill"], "none", "{line}");
    assert_eq!(line["caller"], "-", "{line}");
    assert_eq!(line["client"], "127.0.0.1", "{line}");
    assert_eq!(line["status"], 200, "{line}");
    assert!(line["code"].is_null(), "no error code: {line}");
    assert_eq!(line["request_bytes"], body.len(), "{line}");
    assert_eq!(line["response_bytes"], reply.body.len(), "{line}");
    assert!(line["response_bytes"].as_u64().unwrap() > 0, "{line}");
    assert_eq!(line["outcome"], "complete", "{line}");
    let duration = line["duration_ms"].as_f64();
    assert!(duration.is_some_and(|d| d >= 0.0), "{line}");

    let line = find("ops-test-2");
    assert_eq!(line["code"], METHOD_NOT_FOUND, "{line}");
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["upstream"], "none", "{line}");
    assert_eq!(line["request_bytes"], unknown.len(), "{line}");
    assert_eq!(line["outcome"], "complete", "{line}");

    let line = find(&generated);
    assert_eq!(line["method"], "message/send", "{line}");
    assert_eq!(line["status"], 200, "{line}");
}

/// The text log's access line is written by the gateway itself (not
/// through `tracing`'s formatter): it must still be the same line, and
/// still follow `[log] level`.
#[tokio::test(flavor = "multi_thread")]
async fn the_text_access_line_follows_the_format_and_the_level() {
    let mock = MockAgent::start(Mode::Normal).await;
    // The second level keeps the listening line but filters out the access
    // target, as `RUST_LOG`-style directives can.
    for (level, expect_line) in [
        ("info", true),
        ("info,a2a_gateway::telemetry::access=warn", false),
    ] {
        let text = binary_config("2s", "Ops", &[("echo", mock.url())])
            .replace("format = \"json\"", "format = \"text\"")
            .replace("level = \"info\"", &format!("level = \"{level}\""));
        let file = ConfigFile::new("text-access", &text);
        let mut gw = Binary::start(&file.0).await;
        let reply = client::post_json(
            &gw.url(),
            send("text-1"),
            &[("x-request-id", "text \"quoted\" id")],
        )
        .await;
        assert_ok(&reply, "text-1");
        gw.signal("TERM");
        let (status, lines) = gw.wait_exit(WAIT).await;
        assert!(status.success(), "exit 0 on SIGTERM: {status}");
        let access: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains(" a2a_gateway::telemetry::access: access "))
            .collect();
        if !expect_line {
            assert!(access.is_empty(), "no access line at {level}: {access:?}");
            continue;
        }
        assert_eq!(access.len(), 1, "{}", lines.join("\n"));
        let line = access[0];
        // 2026-11-25T04:40:07.123456Z  INFO a2a_gateway::telemetry::access: access request_id=...
        let (time, rest) = line.split_at(27);
        assert!(humantime::parse_rfc3339(time).is_ok(), "{line}");
        let expected =
            "  INFO a2a_gateway::telemetry::access: access request_id=\"text \\\"quoted\\\" id\" \
             client=127.0.0.1 caller=\"-\" method=\"message/send\" binding=\"jsonrpc\" skill=\"none\" \
             upstream=\"echo\" rule=\"default\" version=\"0.3\" agent_version=\"0.3\" \
             status=200 duration_ms=";
        assert!(rest.starts_with(expected), "{line}");
        let tail = format!(
            " request_bytes={} response_bytes={} outcome=\"complete\"",
            send("text-1").len(),
            reply.body.len()
        );
        assert!(rest.ends_with(&tail), "{line}");
    }
}

/// There is no span per request at info: a line logged while a call is
/// handled names the call's request id itself.
#[tokio::test(flavor = "multi_thread")]
async fn a_replica_retry_is_logged_with_the_call_s_request_id() {
    let mock = MockAgent::start(Mode::Normal).await;
    let closed = crate::support::closed_port::ClosedPort::new();
    let text = binary_config("2s", "Ops", &[])
        + &format!(
            "[[upstreams]]\nname = \"pool\"\nurls = [\"{}\", \"{}\"]\nbalance = \"round_robin\"\n\
             breaker = {{ failures = 1000, open_for = \"1s\" }}\n",
            closed.url(),
            mock.url()
        );
    let file = ConfigFile::new("retry-log", &text);
    let mut gw = Binary::start(&file.0).await;
    let ids: Vec<String> = (0..4).map(|i| format!("retry-{i}")).collect();
    for id in &ids {
        let reply = client::post_json(&gw.url(), send(id), &[("x-request-id", id)]).await;
        assert_ok(&reply, id);
    }
    gw.signal("TERM");
    let (status, lines) = gw.wait_exit(WAIT).await;
    assert!(status.success(), "exit 0 on SIGTERM: {status}");
    let retries: Vec<Value> = json_events(&lines)
        .into_iter()
        .filter(|e| e["message"] == "call never reached the replica; trying another")
        .collect();
    // Round robin over two replicas, a breaker that never opens: calls try
    // the closed one first (each call advances the turn by its two
    // tries). The card fetch retries too, with no request id ("-").
    let named: Vec<&str> = retries
        .iter()
        .filter_map(|r| r["request_id"].as_str())
        .filter(|id| *id != "-")
        .collect();
    assert!(!named.is_empty(), "{}", lines.join("\n"));
    for id in &named {
        assert!(ids.iter().any(|i| i == id), "{named:?}");
        assert_eq!(named.iter().filter(|n| *n == id).count(), 1, "{named:?}");
    }
    assert!(
        retries.iter().all(|r| r["upstream"] == "pool"),
        "{retries:?}"
    );
}

/// A log reader that stops reading (a full pipe, a stuck log agent) must
/// not stall the calls: lines queue up off the request path, and come out
/// once the reader is back.
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_log_reader_does_not_stall_calls_and_loses_no_line() {
    const CALLS: usize = 3_000; // ~1 MB of access lines: far over a pipe's 64 KiB
    const CLIENTS: usize = 8;
    let mock = MockAgent::start(Mode::Normal).await;
    let file = ConfigFile::new(
        "stalled-log",
        &binary_config("2s", "Ops", &[("echo", mock.url())]),
    );
    let mut gw = Binary::start_with_stalled_log(&file.0).await;

    let url = gw.url();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let url = url.clone();
            tokio::spawn(async move {
                for i in (c..CALLS).step_by(CLIENTS) {
                    let id = format!("stalled-{i}");
                    // Each call is bounded by the client's timeout.
                    let reply = client::post_json(&url, send(&id), &[]).await;
                    assert_ok(&reply, &id);
                }
            })
        })
        .collect();
    for client in clients {
        client
            .await
            .expect("every call answered while the log is stalled");
    }
    let metrics = scrape(&gw.admin_url()).await;
    assert_eq!(
        metrics.value("a2a_gateway_log_lines_dropped_total", &[]),
        0.0,
        "the queue held every line"
    );

    gw.resume_log();
    let deadline = Instant::now() + WAIT;
    while access_lines(&gw.stderr()).len() < CALLS {
        assert!(
            Instant::now() < deadline,
            "{} of {CALLS} access lines after the reader came back",
            access_lines(&gw.stderr()).len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gw.signal("TERM");
    let (status, lines) = gw.wait_exit(WAIT).await;
    assert!(status.success(), "exit 0 on SIGTERM: {status}");
    let ids: std::collections::HashSet<String> = access_lines(&lines)
        .iter()
        .filter_map(|e| e["request_id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), CALLS, "one access line per call, none lost");
}

// ---------------------------------------------------- 5. graceful shutdown

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_in_flight_calls_and_ends_streams_after_the_grace() {
    let slow = MockAgent::start(Mode::Delay { ms: 700 }).await;
    let streamer = MockAgent::start(gated(3)).await;
    let file = ConfigFile::new(
        "shutdown",
        &binary_config(
            "1s",
            "Ops",
            &[("slow", slow.url()), ("streamer", streamer.url())],
        ),
    );
    let mut gw = Binary::start(&file.0).await;
    let ready = client::get(&format!("{}/readyz", gw.admin_url()), &[]).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());

    let base = format!("http://{}", gw.addr);
    let mut sse = client::post_stream(&format!("{base}/agents/streamer"), stream("s-1"), &[]).await;
    assert_eq!(sse.status, StatusCode::OK);
    sse.next_event(WAIT).await.expect("the stream is open");

    let slow_url = format!("{base}/agents/slow");
    let unary =
        tokio::spawn(async move { client::try_post_json(&slow_url, send("slow-1"), &[]).await });
    assert!(
        slow.wait_requests(1, WAIT).await,
        "the unary call reached its agent"
    );

    gw.signal("TERM");
    let terminated = Instant::now();

    // Readiness turns false first, while the process still runs.
    let readyz = format!("{}/readyz", gw.admin_url());
    loop {
        let probe =
            client::try_request(Method::GET, &readyz, Bytes::new(), &[], Proto::Http1).await;
        match probe {
            Ok(r) if r.status == StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(r.json()["status"], "draining", "{}", r.text());
                break;
            }
            Ok(r) => assert_eq!(r.status, StatusCode::OK, "{}", r.text()),
            Err(e) => panic!("/readyz must answer 503 before the admin listener stops: {e}"),
        }
        assert!(
            gw.exited().is_none(),
            "the process exited before /readyz said 503"
        );
        assert!(
            terminated.elapsed() < Duration::from_secs(3),
            "/readyz did not turn 503 within 3 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // A new connection is refused or answered, never left hanging.
    match client::try_post_json(&gw.url(), send("late"), &[]).await {
        Ok(reply) => assert!(
            reply.status.is_success() || reply.status.is_server_error(),
            "{reply:?}"
        ),
        Err(_refused) => {}
    }

    // The in-flight call finishes normally.
    let reply = tokio::time::timeout(WAIT, unary)
        .await
        .expect("the in-flight call ends")
        .unwrap()
        .expect("the in-flight call is answered, not cut");
    assert_ok(&reply, "slow-1");

    // The stream gets the grace, then one final event and a clean end.
    let mut last = None;
    while let Some(event) = sse.next_event(WAIT).await {
        last = Some(event);
    }
    assert_eq!(sse.error(), None, "the stream must end cleanly");
    let last = event_json(&last.expect("a final event"));
    assert_eq!(last["id"], "s-1", "{last}");
    assert_eq!(last["error"]["code"], SHUTTING_DOWN, "{last}");
    assert!(
        terminated.elapsed() >= Duration::from_millis(900),
        "streams are ended only after shutdown_grace (1 s): {:?}",
        terminated.elapsed()
    );

    let (status, lines) = gw.wait_exit(WAIT).await;
    assert!(
        status.success(),
        "exit 0 after a graceful shutdown: {status}\n{}",
        lines.join("\n")
    );
    let access = access_lines(&lines);
    let outcomes: Vec<(&Value, &Value, &Value)> = access
        .iter()
        .map(|e| (&e["upstream"], &e["status"], &e["outcome"]))
        .collect();
    assert!(
        outcomes.contains(&(&json!("slow"), &json!(200), &json!("complete"))),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&(&json!("streamer"), &json!(200), &json!("shutdown"))),
        "the stream ended by the drain says so: {outcomes:?}"
    );
}

// ------------------------------------------- 6. reload under steady traffic

fn reload_config(mock: &str, card_name: &str, second: Option<&str>, rate: &str) -> String {
    let mut text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"2s\"\n\
         [card_refresh]\ntimeout = \"1s\"\n\
         [card]\nname = \"{card_name}\"\n\
         [routing]\ndefault_upstream = \"a\"\n\
         {rate}\n\
         [[upstreams]]\nname = \"a\"\nurl = \"{mock}\"\n"
    );
    if let Some(url) = second {
        text.push_str(&format!("[[upstreams]]\nname = \"b\"\nurl = \"{url}\"\n"));
    }
    text
}

#[tokio::test(flavor = "multi_thread")]
async fn reloads_under_steady_traffic_drop_nothing_and_keep_the_pools() {
    const CALLS: usize = 200;
    const WORKERS: usize = 4;
    let mock = MockAgent::start(Mode::Normal).await;
    let other = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&other.url());
    card["skills"] = json!([{"id": "other", "name": "Other", "description": "Something else", "tags": ["other"]}]);
    other.set_card(Some(card));
    let (a, b) = (mock.url(), other.url());
    let gw = TestGateway::from_toml(&reload_config(&a, "Reload 0", None, "")).await;
    let admin = gw.admin_url();
    let connections_at_start = mock.connection_count();

    let done = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let (url, done, failures) = (gw.url(), done.clone(), failures.clone());
        workers.push(tokio::spawn(async move {
            for i in (w..CALLS).step_by(WORKERS) {
                let id = format!("r-{i}");
                let reply = client::post_json(&url, send(&id), &[]).await;
                let fine = reply.status == StatusCode::OK
                    && reply.json()["id"] == id.as_str()
                    && reply.json().get("result").is_some();
                if !fine {
                    failures.lock().unwrap().push(format!("{id}: {reply:?}"));
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    let generous = "[rate_limits]\nglobal = { per_second = 100000 }\n";
    let more =
        "[rate_limits]\nglobal = { per_second = 100000 }\nper_caller = { per_second = 50000 }\n";
    let reloads = [
        reload_config(&a, "Reload 1", None, ""),
        reload_config(&a, "Reload 2", Some(&b), ""),
        reload_config(&a, "Reload 3", Some(&b), generous),
        reload_config(&a, "Reload 4", Some(&b), more),
        reload_config(&a, "Reload Final", Some(&b), more),
    ];
    for (n, text) in reloads.iter().enumerate() {
        // Spread the reloads over the run: each after another slice of calls.
        let target = (n + 1) * CALLS / (reloads.len() + 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        while done.load(Ordering::SeqCst) < target {
            assert!(Instant::now() < deadline, "traffic stalled at {target}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        gw.running
            .reload(config::load_with(Some(text), &test_overrides()))
            .unwrap_or_else(|e| panic!("reload {n} refused: {e}"));
    }
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(60), worker)
            .await
            .expect("the traffic finishes")
            .unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "calls failed across reloads: {failures:#?}"
    );
    assert_eq!(done.load(Ordering::SeqCst), CALLS);
    assert_eq!(mock.request_count(), CALLS, "every call reached upstream a");

    let card = client::get(&format!("{}.well-known/agent-card.json", gw.url()), &[])
        .await
        .json();
    assert_eq!(card["name"], "Reload Final", "{card}");

    let m = scrape(&admin).await;
    assert_eq!(
        m.value("a2a_gateway_config_reloads_total", &[("result", "ok")]),
        5.0
    );
    assert_eq!(
        m.get("a2a_gateway_config_reloads_total", &[("result", "failed")]),
        None
    );
    // Upstream "a" never changed: its pool survived every reload, so the
    // agent saw about as many connections as calls ever in flight at once
    // (plus a card fetch racing the traffic, and one spare for a connection
    // not yet back in the pool when the next call left). A pool rebuilt by
    // each reload costs fresh connections every time (15+ here).
    let connections = mock.connection_count();
    assert!(
        connections <= WORKERS + 2,
        "{connections} connections to an unchanged upstream across 5 reloads \
         (at start: {connections_at_start}): its pool was not kept"
    );
}

// ---------------------------------------------- 7. invalid reload refused

#[tokio::test]
async fn an_invalid_reload_is_refused_counted_and_the_old_config_keeps_serving() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &mock.url())], "[card]\nname = \"Before\"\n").await;
    let admin = gw.admin_url();

    let bad = config::load_str("[server\nlisten = ");
    assert!(bad.is_err());
    let refused = gw.running.reload(bad);
    assert!(refused.is_err(), "an invalid config is refused");
    let invalid_values = config::load_str(
        "[server]\nlisten = \"nowhere\"\n[[upstreams]]\nname = \"a\"\nurl = \"ftp://x\"\n",
    );
    assert!(gw.running.reload(invalid_values).is_err());

    let m = scrape(&admin).await;
    assert_eq!(
        m.value("a2a_gateway_config_reloads_total", &[("result", "failed")]),
        2.0
    );
    assert_eq!(
        m.get("a2a_gateway_config_reloads_total", &[("result", "ok")]),
        None
    );
    assert_ok(
        &client::post_json(&gw.url(), send("still"), &[]).await,
        "still",
    );
    let card = client::get(&format!("{}.well-known/agent-card.json", gw.url()), &[])
        .await
        .json();
    assert_eq!(card["name"], "Before", "{card}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_binary_reloads_on_file_change_and_sighup_and_refuses_a_bad_file() {
    let mock = MockAgent::start(Mode::Normal).await;
    let upstreams = [("echo", mock.url())];
    let file = ConfigFile::new("reload", &binary_config("2s", "First Name", &upstreams));
    let mut gw = Binary::start(&file.0).await;
    let admin = gw.admin_url();
    let reloads = "a2a_gateway_config_reloads_total";
    let card_url = format!("{}.well-known/agent-card.json", gw.url());

    // An invalid file: refused, counted, the old configuration serves on.
    file.replace("[server\nlisten = \"127.0.0.1:0\"\n# not TOML\n");
    let deadline = Instant::now() + RELOAD_WAIT;
    let m = loop {
        let m = scrape(&admin).await;
        if m.get(reloads, &[("result", "failed")]).unwrap_or(0.0) >= 1.0 {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "no failed reload within {RELOAD_WAIT:?}:\n{}",
            gw.stderr().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(m.value(reloads, &[("result", "failed")]), 1.0);
    assert_eq!(m.get(reloads, &[("result", "ok")]), None);
    assert_ok(
        &client::post_json(&gw.url(), send("after-bad"), &[]).await,
        "after-bad",
    );
    assert_eq!(
        client::get(&card_url, &[]).await.json()["name"],
        "First Name"
    );
    gw.wait_line(
        |l| l.contains("configuration reload refused"),
        Duration::from_secs(5),
    )
    .await;

    // A valid file with another card name: applied.
    file.replace(&binary_config("2s", "Second Name", &upstreams));
    let deadline = Instant::now() + RELOAD_WAIT;
    loop {
        let m = scrape(&admin).await;
        if m.get(reloads, &[("result", "ok")]).unwrap_or(0.0) >= 1.0 {
            assert_eq!(m.value(reloads, &[("result", "ok")]), 1.0);
            assert_eq!(m.value(reloads, &[("result", "failed")]), 1.0);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no ok reload within {RELOAD_WAIT:?}:\n{}",
            gw.stderr().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let card = client::get(&card_url, &[]).await.json();
    assert_eq!(card["name"], "Second Name", "{card}");
    assert_ok(
        &client::post_json(&gw.url(), send("after-ok"), &[]).await,
        "after-ok",
    );

    // SIGHUP reloads the (unchanged) file once more.
    gw.signal("HUP");
    let m = wait_metric(&admin, reloads, &[("result", "ok")], |v| v >= 2.0).await;
    assert_eq!(m.value(reloads, &[("result", "ok")]), 2.0);
    assert_eq!(m.value(reloads, &[("result", "failed")]), 1.0);
    assert_ok(
        &client::post_json(&gw.url(), send("after-hup"), &[]).await,
        "after-hup",
    );

    gw.signal("TERM");
    let (status, _) = gw.wait_exit(WAIT).await;
    assert!(status.success(), "exit 0 on SIGTERM: {status}");
}

/// Log hygiene (issue #52, item 9): a refresh that fetches the same cards is
/// no news, and a call that cannot reach the one replica an upstream has is
/// not said to try another.
#[tokio::test(flavor = "multi_thread")]
async fn unchanged_cards_and_single_replicas_keep_the_log_quiet() {
    let mock = MockAgent::start(Mode::Normal).await;
    let closed = crate::support::closed_port::ClosedPort::new();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"1s\"\n\
         [log]\nformat = \"json\"\nlevel = \"info\"\n\
         [card_refresh]\ntimeout = \"1s\"\ninterval = \"100ms\"\n\
         [[upstreams]]\nname = \"live\"\nurl = \"{}\"\n\
         [[upstreams]]\nname = \"dead\"\nurl = \"{}\"\n",
        mock.url(),
        closed.url()
    );
    let file = ConfigFile::new("quiet-log", &text);
    let mut gw = Binary::start(&file.0).await;
    let reply = client::post_json(&format!("{}agents/dead", gw.url()), send("d"), &[]).await;
    assert_rpc_error(&reply, StatusCode::BAD_GATEWAY, -32050);
    // Several refreshes of the same card.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(mock.card_fetches() >= 4, "{} fetches", mock.card_fetches());
    gw.signal("TERM");
    let (status, lines) = gw.wait_exit(WAIT).await;
    assert!(status.success(), "exit 0 on SIGTERM: {status}");
    let events = json_events(&lines);
    let said = |message: &str| events.iter().filter(|e| e["message"] == message).count();
    assert_eq!(said("fleet view updated"), 1, "{}", lines.join("\n"));
    assert_eq!(
        said("call never reached the replica; trying another"),
        0,
        "{}",
        lines.join("\n")
    );
    assert!(
        said("call never reached the replica") >= 1,
        "{}",
        lines.join("\n")
    );
}
