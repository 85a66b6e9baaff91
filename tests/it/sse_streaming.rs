//! The SSE relay end to end: every streaming method of every A2A version goes
//! through the gateway intact and unbuffered; a client that leaves, an
//! upstream that breaks or falls silent, and plain-JSON answers to streaming
//! methods are each handled as documented.
use crate::support::calls::rpc_raw;
use std::collections::VecDeque;
use std::time::Duration;

use crate::support::client::{self, SseParser, SseStream};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode, DEFAULT_EVENTS};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::task::{JoinHandle, JoinSet};

/// Bound for one event or one exchange; generous, it only matters on failure.
const WAIT: Duration = Duration::from_secs(5);
/// How long "nothing arrives" is watched for.
const QUIET: Duration = Duration::from_millis(400);
const UPSTREAM: &str = "agent";

const STREAM_BROKEN: i64 = -32053;
const STREAM_IDLE: i64 = -32054;

// ------------------------------------------------------------- helpers

fn v01_params(text: &str) -> Value {
    json!({"id": "t-1", "sessionId": "s-1",
           "message": {"role": "user", "parts": [{"type": "text", "text": text}]}})
}

fn v03_message(text: &str) -> Value {
    json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
                       "parts": [{"kind": "text", "text": text}]}})
}

fn v10_message(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// Every streaming method of 0.1, 0.3 and 1.0 with valid params.
fn streaming_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("tasks/sendSubscribe", v01_params("old")),
        ("message/stream", v03_message("mid")),
        ("tasks/resubscribe", json!({"id": "task-7"})),
        ("SendStreamingMessage", v10_message("new")),
        ("SubscribeToTask", json!({"id": "task-7"})),
    ]
}

fn event_json(event: &str) -> Value {
    serde_json::from_str(event).unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {event}"))
}

fn gated(events: usize) -> Mode {
    Mode::Stream {
        events,
        interval_ms: 0,
        gate_last: true,
    }
}

async fn gateway_for(mock: &MockAgent, extra: &str) -> TestGateway {
    TestGateway::start(&[(UPSTREAM, &mock.url())], extra).await
}

fn assert_sse_head(status: StatusCode, headers: &HeaderMap) {
    assert_eq!(status, StatusCode::OK);
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("text/event-stream"),
        "content-type: {content_type:?}"
    );
}

/// A JSON-RPC success response for request `id`.
fn assert_result_event(event: &str, id: &Value) -> Value {
    let v = event_json(event);
    assert_eq!(v["jsonrpc"], "2.0", "{event}");
    assert_eq!(&v["id"], id, "{event}");
    assert!(
        v.get("result").is_some() && v.get("error").is_none(),
        "{event}"
    );
    v
}

/// The gateway's final error event: `code`, request `id`, the upstream named.
fn assert_error_event(event: &str, id: &Value, code: i64) {
    let v = event_json(event);
    assert_eq!(v["jsonrpc"], "2.0", "{event}");
    assert_eq!(&v["id"], id, "{event}");
    assert!(v.get("result").is_none(), "{event}");
    assert_eq!(v["error"]["code"], code, "{event}");
    assert!(v["error"]["message"].is_string(), "{event}");
    assert_eq!(v["error"]["data"]["upstream"], UPSTREAM, "{event}");
}

/// The stream ended, and ended cleanly (not with a broken connection).
async fn assert_clean_end(sse: &mut SseStream) {
    assert_eq!(sse.next_event(WAIT).await, None, "no event after the last");
    assert_eq!(sse.error(), None, "the stream must end cleanly");
}

// --------------------------------------------------------- pass-through

#[tokio::test]
async fn every_streaming_method_arrives_intact_and_matches_a_direct_call() {
    // Two mocks that see the same calls in the same order generate the same
    // task and context ids, so gateway and direct answers must be identical.
    let behind = MockAgent::start(Mode::Normal).await;
    let twin = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&behind, "").await;

    for (i, (method, params)) in streaming_calls().into_iter().enumerate() {
        let (raw_id, id) = if i % 2 == 0 {
            (format!("\"s-{i}\""), json!(format!("s-{i}")))
        } else {
            (i.to_string(), json!(i))
        };
        let body = rpc_raw(&raw_id, method, &params);

        // Event by event.
        let mut via = client::post_stream(&gw.url(), body.clone(), &[]).await;
        assert_sse_head(via.status, &via.headers);
        let mut direct = client::post_stream(&twin.url(), body.clone(), &[]).await;
        let via_events = via.collect_events(WAIT).await;
        let direct_events = direct.collect_events(WAIT).await;
        assert_eq!(via.error(), None, "{method}");
        assert_eq!(via_events.len(), DEFAULT_EVENTS, "{method}: {via_events:?}");
        for event in &via_events {
            assert_result_event(event, &id);
        }
        assert_eq!(via_events, direct_events, "{method}: gateway vs direct");
        assert_eq!(
            behind.requests().last().map(|r| r.body.clone()),
            Some(Bytes::from(body.clone())),
            "{method}: the upstream got the body byte for byte"
        );

        // Byte for byte.
        let via = client::post_stream(&gw.url(), body.clone(), &[]).await;
        assert_sse_head(via.status, &via.headers);
        let via_raw = via.read_body().await;
        let direct_raw = client::post_stream(&twin.url(), body, &[])
            .await
            .read_body()
            .await;
        assert_eq!(via_raw, direct_raw, "{method}: raw SSE bytes differ");
        assert_eq!(client::parse_sse(&via_raw).len(), DEFAULT_EVENTS);
    }
}

#[tokio::test]
async fn events_are_relayed_one_by_one_without_buffering() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = gateway_for(&mock, "").await;
    let body = rpc_raw(r#""u-1""#, "message/stream", v03_message("hi"));
    let id = json!("u-1");

    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    assert_sse_head(sse.status, &sse.headers);
    for _ in 0..2 {
        let event = sse.next_event(WAIT).await.expect("an event before release");
        assert_result_event(&event, &id);
    }
    let held = sse.try_next_event(QUIET).await;
    assert!(
        held.is_err(),
        "the last event must not exist before release: {held:?}"
    );

    mock.release_stream();
    let last = sse.next_event(WAIT).await.expect("the last event");
    let last = assert_result_event(&last, &id);
    assert_eq!(last["result"]["final"], true);
    assert_clean_end(&mut sse).await;
}

#[tokio::test]
async fn client_disconnect_closes_the_upstream_stream() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = gateway_for(&mock, "").await;
    let body = rpc_raw("1", "SendStreamingMessage", v10_message("hi"));

    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    assert!(!mock.stream_closed_by_peer());
    drop(sse);
    assert!(
        mock.wait_stream_closed(WAIT).await,
        "the upstream stream must be closed once the client has gone"
    );
}

// ------------------------------------------------------------- failures

#[tokio::test]
async fn upstream_reset_mid_stream_ends_with_one_error_event_then_a_clean_end() {
    let mock = MockAgent::start(Mode::ResetMidStream { events_before: 2 }).await;
    let gw = gateway_for(&mock, "").await;

    for (raw_id, id) in [(r#""r-1""#, json!("r-1")), ("42", json!(42))] {
        let body = rpc_raw(raw_id, "message/stream", v03_message("hi"));
        let mut sse = client::post_stream(&gw.url(), body, &[]).await;
        assert_sse_head(sse.status, &sse.headers);
        for _ in 0..2 {
            let event = sse
                .next_event(WAIT)
                .await
                .expect("an event before the reset");
            assert_result_event(&event, &id);
        }
        let last = sse
            .next_event(WAIT)
            .await
            .expect("the gateway's error event");
        assert_error_event(&last, &id, STREAM_BROKEN);
        assert!(
            last.contains(&format!(r#""id":{raw_id}"#)),
            "the id is echoed verbatim: {last}"
        );
        assert_clean_end(&mut sse).await;
    }
}

// Paused time: the gateway's idle timer and the agent's pauses are
// tokio timers, which the runtime advances when nothing else can run.
#[tokio::test(start_paused = true)]
async fn silent_upstream_ends_with_an_idle_error_event() {
    let mock = MockAgent::start(gated(3)).await; // never released
    let gw = gateway_for(&mock, "[limits]\nsse_idle_timeout = \"300ms\"").await;
    let body = rpc_raw(r#""idle-1""#, "SubscribeToTask", json!({"id": "task-1"}));
    let id = json!("idle-1");

    let started = tokio::time::Instant::now();
    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    assert_sse_head(sse.status, &sse.headers);
    for _ in 0..2 {
        let event = sse
            .next_event(WAIT)
            .await
            .expect("an event before the silence");
        assert_result_event(&event, &id);
    }
    let last = sse
        .next_event(WAIT)
        .await
        .expect("the gateway's idle event");
    assert_error_event(&last, &id, STREAM_IDLE);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "idle error after {:?}, before the idle timeout",
        started.elapsed()
    );
    assert_clean_end(&mut sse).await;
    assert!(
        mock.wait_stream_closed(WAIT).await,
        "after giving up the gateway must release the upstream stream"
    );
}

// Paused time: the gateway's idle timer and the agent's pauses are
// tokio timers, which the runtime advances when nothing else can run.
#[tokio::test(start_paused = true)]
async fn idle_timeout_is_between_events_not_a_deadline_for_the_stream() {
    let mode = Mode::Stream {
        events: 6,
        interval_ms: 150,
        gate_last: false,
    };
    let mock = MockAgent::start(mode).await;
    let gw = gateway_for(&mock, "[limits]\nsse_idle_timeout = \"500ms\"").await;
    let body = rpc_raw("7", "message/stream", v03_message("slow"));

    let started = tokio::time::Instant::now();
    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    let events = sse.collect_events(WAIT).await;
    let took = started.elapsed();
    assert_eq!(sse.error(), None);
    assert_eq!(events.len(), 6, "{events:?}");
    for event in &events {
        assert_result_event(event, &json!(7));
    }
    assert!(
        took > Duration::from_millis(500),
        "the stream must outlive the idle timeout to prove anything ({took:?})"
    );
}

#[tokio::test]
async fn plain_json_answer_to_a_streaming_method_passes_through_unchanged() {
    let answer = Bytes::from_static(
        br#"{"jsonrpc":"2.0","id":"e-1","error":{"code":-32001,"message":"Task not found"}}"#,
    );
    let mock = MockAgent::start(Mode::Fixed {
        status: 200,
        content_type: "application/json".into(),
        body: answer.clone(),
    })
    .await;
    let gw = gateway_for(&mock, "").await;

    for (method, params) in streaming_calls() {
        let sse = client::post_stream(&gw.url(), rpc_raw(r#""e-1""#, method, &params), &[]).await;
        assert_eq!(sse.status, StatusCode::OK, "{method}");
        assert_eq!(
            sse.headers.get("content-type").map(|v| v.as_bytes()),
            Some(&b"application/json"[..]),
            "{method}"
        );
        assert_eq!(sse.read_body().await, answer, "{method}");
    }
}

// -------------------------------------------------------------- headers

#[tokio::test]
async fn sse_answer_has_no_content_length_and_is_never_compressed() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock, "").await;
    let body = rpc_raw("1", "message/stream", v03_message("hi"));
    let headers = [("accept-encoding", "gzip, deflate, br")];

    let mut sse = client::post_stream(&gw.url(), body, &headers).await;
    assert_sse_head(sse.status, &sse.headers);
    assert!(
        sse.headers.get("content-length").is_none(),
        "{:?}",
        sse.headers
    );
    assert!(
        sse.headers.get("content-encoding").is_none(),
        "{:?}",
        sse.headers
    );
    assert_eq!(
        sse.headers.get("cache-control").map(|v| v.as_bytes()),
        Some(&b"no-cache"[..]),
        "the upstream's end-to-end headers pass through"
    );
    let events = sse.collect_events(WAIT).await;
    assert_eq!(events.len(), DEFAULT_EVENTS);
    for event in &events {
        assert_result_event(event, &json!(1));
    }
    assert_eq!(sse.error(), None);
}

// --------------------------------------------------------------- HTTP/2

/// An SSE response read frame by frame over an h2c (prior knowledge)
/// connection; the support client streams over HTTP/1.1 only.
struct H2Stream {
    status: StatusCode,
    headers: HeaderMap,
    body: Incoming,
    parser: SseParser,
    ready: VecDeque<String>,
    _sender: http2::SendRequest<Full<Bytes>>,
    connection: JoinHandle<()>,
}

impl H2Stream {
    async fn open(gw: &TestGateway, body: String) -> H2Stream {
        let open = async {
            let tcp = TcpStream::connect(gw.addr()).await.expect("connect");
            let (mut sender, connection) =
                http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
                    .expect("h2 handshake");
            let connection = tokio::spawn(async move {
                let _ = connection.await;
            });
            let request = Request::post(gw.url())
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(Full::new(Bytes::from(body)))
                .expect("request");
            let response = sender.send_request(request).await.expect("h2 response");
            let (parts, body) = response.into_parts();
            H2Stream {
                status: parts.status,
                headers: parts.headers,
                body,
                parser: SseParser::new(),
                ready: VecDeque::new(),
                _sender: sender,
                connection,
            }
        };
        tokio::time::timeout(WAIT, open)
            .await
            .expect("h2 stream opens in time")
    }

    /// Next event's data, `None` at a clean end; panics on a body error.
    async fn read_event(&mut self) -> Option<String> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            match self.body.frame().await? {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        self.ready.extend(self.parser.push(&data));
                    }
                }
                Err(e) => panic!("h2 SSE body failed: {e}"),
            }
        }
    }

    async fn try_next_event(
        &mut self,
        limit: Duration,
    ) -> Result<Option<String>, tokio::time::error::Elapsed> {
        tokio::time::timeout(limit, self.read_event()).await
    }

    async fn next_event(&mut self) -> Option<String> {
        self.try_next_event(WAIT)
            .await
            .unwrap_or_else(|_| panic!("no h2 SSE event or end within {WAIT:?}"))
    }
}

impl Drop for H2Stream {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

#[tokio::test]
async fn sse_over_h2_is_relayed_event_by_event() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = gateway_for(&mock, "").await;
    let body = rpc_raw(r#""h2-1""#, "SendStreamingMessage", v10_message("hi"));
    let id = json!("h2-1");

    let mut sse = H2Stream::open(&gw, body).await;
    assert_sse_head(sse.status, &sse.headers);
    assert!(sse.headers.get("content-length").is_none());
    for _ in 0..2 {
        let event = sse.next_event().await.expect("an event before release");
        assert_result_event(&event, &id);
    }
    assert!(sse.try_next_event(QUIET).await.is_err(), "last is gated");
    mock.release_stream();
    let last = sse.next_event().await.expect("the last event");
    let last = assert_result_event(&last, &id);
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(sse.next_event().await, None);
}

#[tokio::test]
async fn h2_stream_reset_by_the_client_closes_the_upstream_stream() {
    let mock = MockAgent::start(gated(3)).await;
    let gw = gateway_for(&mock, "").await;
    let body = rpc_raw("1", "message/stream", v03_message("hi"));

    let mut sse = H2Stream::open(&gw, body).await;
    assert!(sse.next_event().await.is_some());
    drop(sse);
    assert!(
        mock.wait_stream_closed(WAIT).await,
        "the upstream stream must be closed once the h2 client has gone"
    );
}

#[tokio::test]
async fn streams_from_an_h2c_upstream_are_relayed_event_by_event() {
    let mock = MockAgent::start(gated(3)).await;
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n\
         shutdown_grace = \"2s\"\n\n\
         [[upstreams]]\nname = \"{UPSTREAM}\"\nurl = \"{}\"\nhttp2 = true\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&toml).await;
    let body = rpc_raw("3", "tasks/sendSubscribe", v01_params("hi"));

    let mut sse = client::post_stream(&gw.url(), body.clone(), &[]).await;
    assert_sse_head(sse.status, &sse.headers);
    for _ in 0..2 {
        let event = sse.next_event(WAIT).await.expect("an event before release");
        assert_result_event(&event, &json!(3));
    }
    assert!(sse.try_next_event(QUIET).await.is_err(), "last is gated");
    mock.release_stream();
    assert!(sse.next_event(WAIT).await.is_some());
    assert_clean_end(&mut sse).await;
    assert_eq!(mock.requests()[0].http_version, Version::HTTP_2);
    assert!(!mock.stream_closed_by_peer());

    // A client leaving is passed on over the h2 upstream connection too.
    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    drop(sse);
    assert!(mock.wait_stream_closed(WAIT).await);
}

/// A gateway speaking h2c to `mock`, `per_connection` calls per connection
/// at most, and a short response-header timeout.
async fn h2c_gateway(mock: &MockAgent, per_connection: usize) -> TestGateway {
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n\
         shutdown_grace = \"2s\"\n\n\
         [[upstreams]]\nname = \"{UPSTREAM}\"\nurl = \"{}\"\nhttp2 = true\n\
         http2_streams_per_connection = {per_connection}\nresponse_header_timeout = \"1s\"\n",
        mock.url()
    );
    TestGateway::from_toml(&toml).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_streams_past_the_agents_stream_limit_get_connections_of_their_own() {
    const STREAMS: usize = 5;
    // The agent lets each connection carry 2 streams at once.
    let mock = MockAgent::start(gated(2)).await;
    mock.set_h2_max_streams(2);
    let gw = h2c_gateway(&mock, 2).await;
    let mut open = Vec::new();
    for i in 0..STREAMS {
        let body = rpc_raw(&format!("\"s-{i}\""), "message/stream", v03_message("hi"));
        let mut sse = client::post_stream(&gw.url(), body, &[]).await;
        assert_sse_head(sse.status, &sse.headers);
        assert!(
            sse.next_event(WAIT).await.is_some(),
            "stream {i} has its first event"
        );
        open.push(sse);
    }
    // Two calls per connection: three connections for five open streams.
    assert_eq!(mock.connection_count(), STREAMS.div_ceil(2));
    for _ in 0..STREAMS {
        mock.release_stream();
    }
    for mut sse in open {
        assert!(sse.next_event(WAIT).await.is_some(), "the last event");
        assert_clean_end(&mut sse).await;
    }
    // Their places are free again: the next call takes the first connection.
    let body = rpc_raw("\"after\"", "message/stream", v03_message("hi"));
    let mut sse = client::post_stream(&gw.url(), body, &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    assert_eq!(mock.connection_count(), STREAMS.div_ceil(2));
    mock.release_stream();
}

#[tokio::test]
async fn an_answered_call_frees_its_place_on_the_h2c_connection() {
    let mock = MockAgent::start(Mode::Normal).await;
    // One call per connection: a place not freed would open a new one.
    let gw = h2c_gateway(&mock, 1).await;
    for i in 0..5 {
        let body = rpc_raw(&format!("\"u-{i}\""), "message/send", v03_message("hi"));
        let reply = client::post_json(&gw.url(), body, &[]).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let body = rpc_raw(&format!("\"v-{i}\""), "message/stream", v03_message("hi"));
        let mut sse = client::post_stream(&gw.url(), body, &[]).await;
        assert_eq!(sse.collect_events(WAIT).await.len(), DEFAULT_EVENTS);
    }
    assert_eq!(mock.connection_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_unlimited_h2c_connection_a_stream_past_the_agents_limit_waits() {
    // The hazard the lanes remove: one connection, and the agent's limit.
    let mock = MockAgent::start(gated(2)).await;
    mock.set_h2_max_streams(2);
    let gw = h2c_gateway(&mock, 0).await;
    let mut open = Vec::new();
    for i in 0..2 {
        let body = rpc_raw(&format!("\"w-{i}\""), "message/stream", v03_message("hi"));
        let mut sse = client::post_stream(&gw.url(), body, &[]).await;
        assert!(sse.next_event(WAIT).await.is_some());
        open.push(sse);
    }
    let body = rpc_raw("\"w-2\"", "message/stream", v03_message("hi"));
    let third = client::post_stream(&gw.url(), body, &[]).await;
    assert_eq!(third.status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(mock.connection_count(), 1);
    for _ in 0..2 {
        mock.release_stream();
    }
}

// ---------------------------------------------------------- concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_streams_each_get_their_own_events() {
    const STREAMS: usize = 20;
    const EVENTS: usize = 4;
    let mode = Mode::Stream {
        events: EVENTS,
        interval_ms: 20,
        gate_last: false,
    };
    let mock = MockAgent::start(mode).await;
    let gw = gateway_for(&mock, "").await;

    let mut tasks = JoinSet::new();
    for i in 0..STREAMS {
        let url = gw.url();
        tasks.spawn(async move {
            let text = format!("n{i}");
            let body = rpc_raw(&format!("\"c-{i}\""), "message/stream", v03_message(&text));
            let mut sse = client::post_stream(&url, body, &[]).await;
            assert_sse_head(sse.status, &sse.headers);
            let events = sse.collect_events(WAIT).await;
            assert_eq!(sse.error(), None, "stream {i}");
            (i, events)
        });
    }
    let all = async {
        let mut done = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            done.push(joined.expect("stream task"));
        }
        done
    };
    let done = tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .expect("20 streams finish in time");

    assert_eq!(done.len(), STREAMS);
    for (i, events) in done {
        let id = json!(format!("c-{i}"));
        assert_eq!(events.len(), EVENTS, "stream {i}: {events:?}");
        let values: Vec<Value> = events.iter().map(|e| assert_result_event(e, &id)).collect();
        let echo = format!("echo: n{i}");
        assert_eq!(
            values[1]["result"]["artifact"]["parts"][0]["text"], echo,
            "stream {i} got another stream's events"
        );
        assert_eq!(values[EVENTS - 1]["result"]["final"], true, "stream {i}");
    }
    assert_eq!(mock.request_count(), STREAMS);
}

/// An agent that writes CRLF line endings and splits an event's JSON over
/// two `data:` lines, with the task id on the second: the event passes
/// whole, and the gateway learns the task's owner from it (a later call
/// for the task goes straight to that agent, no other is asked).
#[tokio::test]
async fn a_multi_line_crlf_event_teaches_the_tasks_owner() {
    let stream = concat!(
        "event: message\r\n",
        "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\r\n",
        "data: {\"kind\":\"status-update\",\"taskId\":\"t-crlf\",\"contextId\":\"c-crlf\",",
        "\"status\":{\"state\":\"completed\"},\"final\":true}}\r\n",
        "\r\n",
    );
    let owner = MockAgent::start(Mode::Fixed {
        status: 200,
        content_type: "text/event-stream".into(),
        body: Bytes::from_static(stream.as_bytes()),
    })
    .await;
    let other = MockAgent::start(Mode::Normal).await;
    other.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("owner", &owner.url()), ("other", &other.url())], "").await;
    let url = format!("{}agents/owner", gw.url());
    let mut sse =
        client::post_stream(&url, rpc_raw("1", "message/stream", v03_message("hi")), &[]).await;
    let events = sse.collect_events(WAIT).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = event_json(&events[0]);
    assert_eq!(event["result"]["taskId"], "t-crlf", "{event}");
    let before = owner.request_count();
    let get = rpc_raw("2", "tasks/get", json!({"id": "t-crlf"}));
    let reply = client::post_json(&gw.url(), get, &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(owner.request_count(), before + 1, "the owner was asked");
    let asked_other = (other.requests().iter())
        .filter(|r| !r.is_card_fetch())
        .count();
    assert_eq!(
        asked_other, 0,
        "the owner was known: no probe of the others"
    );
}
