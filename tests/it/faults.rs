//! Fault injection through a real gateway: an upstream that refuses, hangs,
//! babbles, closes mid-body or mid-stream, floods, never ends or drips, and
//! a client that leaves during its request body, while the upstream thinks,
//! or mid-stream. Every test asserts, in the same test, the right status or
//! JSON-RPC error, that memory stays bounded, and that another client (of a
//! healthy upstream behind the same gateway) is served normally meanwhile.
//!
//! The gateway fronts `bad` (the faulty upstream, reached at `/agents/bad`)
//! and `good` (a normal mock agent, at `/agents/good`). Each test runs
//! alone in a child process (`support::alone`), so the process's resident
//! memory says something about the gateway inside it.
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::support::alone;
use crate::support::calls::send_raw;
use crate::support::client::{self, Reply};
use crate::support::closed_port::ClosedPort;
use crate::support::fault_agent::{Fault, FaultAgent};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(5);
/// A healthy call through the gateway takes far less than this, even with
/// a fault in progress next to it.
const SERVED: Duration = Duration::from_secs(2);
const MIB: u64 = 1024 * 1024;
/// Growth of the test process's resident memory allowed while many times
/// as much flows through the gateway (which copies at most 1 MiB of a
/// unary answer to learn task ids from it).
const MEMORY_BOUND: u64 = 32 * MIB;

// ------------------------------------------------------------- fixtures

struct Fleet {
    gw: TestGateway,
    good: MockAgent,
}

/// A gateway with `bad` at `bad_url` (more TOML keys for it in `bad_keys`)
/// and a normal `good` agent; `extra` is TOML for the gateway.
async fn fleet(bad_url: &str, bad_keys: &str, extra: &str) -> Fleet {
    let good = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "{extra}\n[server]\nshutdown_grace = \"1s\"\n[card_refresh]\ntimeout = \"1s\"\n\n\
         [[upstreams]]\nname = \"bad\"\nurl = \"{bad_url}\"\n{bad_keys}\n\n\
         [[upstreams]]\nname = \"good\"\nurl = \"{}\"\n",
        good.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    Fleet { gw, good }
}

impl Fleet {
    fn bad_url(&self) -> String {
        format!("http://{}/agents/bad", self.gw.addr())
    }

    fn good_url(&self) -> String {
        format!("http://{}/agents/good", self.gw.addr())
    }

    /// A few calls to the healthy agent, each answered correctly in time.
    async fn assert_served(&self, tag: &str) {
        for i in 0..3 {
            let id = format!("\"{tag}-{i}\"");
            let started = Instant::now();
            let reply = tokio::time::timeout(
                SERVED,
                client::post_json(&self.good_url(), send_raw(&id), &[]),
            )
            .await
            .unwrap_or_else(|_| {
                panic!("{tag}: the healthy agent was not served within {SERVED:?}")
            });
            assert_eq!(reply.status, StatusCode::OK, "{tag}: {}", reply.text());
            assert!(
                reply.text().contains(&format!("\"id\":{id}")),
                "{tag}: another client's answer? {}",
                reply.text()
            );
            assert_eq!(reply.json()["result"]["kind"], "task", "{tag}");
            assert!(started.elapsed() < SERVED);
        }
    }
}

fn stream_call(raw_id: &str) -> String {
    send_raw(raw_id).replace("message/send", "message/stream")
}

/// A gateway-made JSON-RPC error: status, code, raw id.
fn assert_error(reply: &Reply, status: u16, code: i64, raw_id: &str) {
    let text = reply.text();
    assert_eq!(reply.status.as_u16(), status, "{text}");
    assert_eq!(reply.json()["error"]["code"], code, "{text}");
    assert!(text.contains(&format!("\"id\":{raw_id}")), "{text}");
}

/// The error event that ends a relayed stream.
fn assert_error_event(event: &str, code: i64, id: &Value) {
    let v: Value = serde_json::from_str(event).unwrap_or_else(|e| panic!("{e}: {event}"));
    assert_eq!(v["error"]["code"], code, "{event}");
    assert_eq!(&v["id"], id, "{event}");
    assert_eq!(v["error"]["data"]["upstream"], "bad", "{event}");
}

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PROMPT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {PROMPT:?}"))
}

// --------------------------------------------------------------- memory

/// The resident set of this process, from /proc/self/status.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Tracks the largest growth of resident memory since it was made: made
/// once the gateway is up, so that the bound is on what the faults cost,
/// not on starting a gateway (whose code and tables grow with the crate).
struct Memory {
    start: u64,
    peak: u64,
}

impl Memory {
    fn watch() -> Memory {
        let start = rss();
        Memory { start, peak: start }
    }

    fn sample(&mut self) {
        self.peak = self.peak.max(rss());
    }

    fn assert_bounded(&mut self, what: &str) {
        self.assert_within(what, MEMORY_BOUND);
    }

    fn assert_within(&mut self, what: &str, bound: u64) {
        self.sample();
        let grew = self.peak.saturating_sub(self.start);
        eprintln!("{what}: resident memory grew by {} KiB", grew / 1024);
        assert!(
            grew <= bound,
            "{what}: resident memory grew by {} MiB (bound {} MiB)",
            grew / MIB,
            bound / MIB
        );
    }
}

// ------------------------------------------------------ streaming client

/// A response read frame by frame on its own HTTP/1.1 connection, so a
/// test can read hundreds of MiB without keeping them, or walk away.
struct Streamed {
    status: StatusCode,
    headers: HeaderMap,
    body: Incoming,
    _sender: http1::SendRequest<Full<Bytes>>,
    connection: JoinHandle<()>,
}

impl Drop for Streamed {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

async fn open(addr: SocketAddr, path: &str, body: String) -> Streamed {
    within("open a streamed response", async {
        let tcp = TcpStream::connect(addr).await.expect("connect");
        let (mut sender, connection) = http1::handshake(TokioIo::new(tcp))
            .await
            .expect("handshake");
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        let request = Request::post(path)
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let response = sender.send_request(request).await.expect("response head");
        let (parts, body) = response.into_parts();
        Streamed {
            status: parts.status,
            headers: parts.headers,
            body,
            _sender: sender,
            connection,
        }
    })
    .await
}

impl Streamed {
    /// Reads until the end or until `upto` bytes, calling `each` with the
    /// running total and every chunk; `Err` is a body error.
    async fn read(&mut self, upto: u64, mut each: impl FnMut(u64, &[u8])) -> Result<u64, String> {
        let mut total = 0u64;
        while total < upto {
            let frame = tokio::time::timeout(PROMPT, self.body.frame())
                .await
                .map_err(|_| format!("no data for {PROMPT:?} after {total} bytes"))?;
            match frame {
                None => break,
                Some(Err(e)) => return Err(format!("after {total} bytes: {e}")),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        total += data.len() as u64;
                        each(total, &data);
                    }
                }
            }
        }
        Ok(total)
    }
}

// ------------------------------------------------------ upstream faults

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_are_502_while_others_are_served() {
    if !alone::here() {
        return;
    }
    let closed = ClosedPort::new();
    let fx = fleet(&closed.url(), "", "").await;
    let mut memory = Memory::watch();
    let bad = fx.bad_url();
    let failing: Vec<_> = (0..20)
        .map(|i| {
            let url = bad.clone();
            tokio::spawn(
                async move { client::post_json(&url, send_raw(&i.to_string()), &[]).await },
            )
        })
        .collect();
    fx.assert_served("refused").await;
    // Refused (502) until the breaker ejects the only replica; then every
    // call fails fast with 503 and Retry-After.
    let mut refused = 0;
    for (i, call) in failing.into_iter().enumerate() {
        let reply = within("refused call", call).await.unwrap();
        assert_eq!(reply.json()["error"]["data"]["upstream"], "bad");
        if reply.status == StatusCode::BAD_GATEWAY {
            assert_error(&reply, 502, -32050, &i.to_string());
            refused += 1;
        } else {
            assert_error(&reply, 503, -32055, &i.to_string());
            assert!(reply.header("retry-after").is_some());
        }
    }
    assert!(refused >= 1, "the first calls are refused, not ejected");
    memory.assert_bounded("refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_answers_is_504_and_is_let_go() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::Hang).await;
    let fx = fleet(&bad.url(), "response_header_timeout = \"1s\"", "").await;
    let mut memory = Memory::watch();
    let url = fx.bad_url();
    let hanging =
        tokio::spawn(async move { client::post_json(&url, send_raw("\"h\""), &[]).await });
    assert!(
        bad.wait_calls(1, PROMPT).await,
        "the call reached the agent"
    );
    fx.assert_served("hang").await;
    let reply = within("the hanging call", hanging).await.unwrap();
    assert_error(&reply, 504, -32051, "\"h\"");
    assert!(
        bad.wait_abandoned(1, PROMPT).await,
        "after the timeout the gateway must drop the upstream call"
    );
    memory.assert_bounded("hang");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_answer_is_502_while_others_are_served() {
    if !alone::here() {
        return;
    }
    let babbler = MockAgent::start(Mode::Garbage).await;
    let fx = fleet(&babbler.url(), "", "").await;
    let mut memory = Memory::watch();
    let bad = fx.bad_url();
    let failing: Vec<_> = (0..10)
        .map(|i| {
            let url = bad.clone();
            tokio::spawn(
                async move { client::post_json(&url, send_raw(&i.to_string()), &[]).await },
            )
        })
        .collect();
    fx.assert_served("garbage").await;
    // The upstream's breaker opens after its fifth failure, so calls that
    // arrive after that are refused at once (503, -32055) instead of 502.
    let mut bad_gateway = 0;
    for (i, call) in failing.into_iter().enumerate() {
        let reply = within("garbage call", call).await.unwrap();
        match reply.status.as_u16() {
            502 => {
                assert_error(&reply, 502, -32052, &i.to_string());
                bad_gateway += 1;
            }
            _ => assert_error(&reply, 503, -32055, &i.to_string()),
        }
    }
    assert!(
        bad_gateway >= 1,
        "the garbage itself is reported as 502 -32052"
    );
    memory.assert_bounded("garbage");
}

/// Once the head (200, content-length) has been relayed the status cannot
/// change: the client's connection is aborted, so it sees a truncated body,
/// never a complete-looking wrong one. The call's in-flight slot is freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_closing_mid_body_aborts_the_client_connection() {
    if !alone::here() {
        return;
    }
    let body = Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"pad":"{}"}}}}"#,
        "x".repeat(1000)
    ));
    let bad = FaultAgent::start(Fault::CloseMidBody {
        content_type: "application/json",
        body: body.clone(),
        sent: 100,
    })
    .await;
    let fx = fleet(&bad.url(), "max_in_flight = 1\nqueue = 0", "").await;
    let mut memory = Memory::watch();
    for i in 0..3 {
        let result = client::try_post_json(&fx.bad_url(), send_raw(&i.to_string()), &[]).await;
        let error = result.expect_err("a truncated body must not look complete");
        assert!(
            error.contains("message") || error.contains("closed") || error.contains("incomplete"),
            "{error}"
        );
        fx.assert_served(&format!("mid-body-{i}")).await;
    }
    bad.set_fault(Fault::None);
    let reply = client::post_json(&fx.bad_url(), send_raw("\"after\""), &[]).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "the slot was freed: {}",
        reply.text()
    );
    memory.assert_bounded("mid-body");
}

/// An SSE upstream that dies mid-event: the partial event is dropped and
/// the client gets one final -32053 event and a clean end, while a stream
/// from another agent carries on untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_closing_mid_stream_ends_with_an_error_event() {
    if !alone::here() {
        return;
    }
    let half = r#"data: {"jsonrpc":"2.0","id":"s","resu"#;
    let bad = FaultAgent::start(Fault::stream_dying_after_one_event(half)).await;
    let fx = fleet(&bad.url(), "", "").await;
    let mut memory = Memory::watch();
    fx.good.set_mode(Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    });
    let mut other = client::post_stream(&fx.good_url(), stream_call("\"o\""), &[]).await;
    assert!(other.next_event(PROMPT).await.is_some());

    let mut sse = client::post_stream(&fx.bad_url(), stream_call("\"s\""), &[]).await;
    assert_eq!(sse.status, StatusCode::OK);
    let events = sse.collect_events(PROMPT).await;
    assert_eq!(sse.error(), None, "a clean end after the error event");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].contains("status-update"), "{events:?}");
    assert_error_event(&events[1], -32053, &json!("s"));

    assert!(other.next_event(PROMPT).await.is_some());
    fx.good.release_stream();
    let rest = other.collect_events(PROMPT).await;
    assert_eq!(rest.len(), 1, "the other stream carried on: {rest:?}");
    assert_eq!(other.error(), None);
    fx.good.set_mode(Mode::Normal);
    fx.assert_served("mid-stream").await;
    memory.assert_bounded("mid-stream");
}

/// A 256 MiB answer is passed on as it comes (the client has the first
/// MiB long before the upstream has sent the rest), whole and with its
/// length, and the gateway's memory does not grow with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enormous_answer_is_streamed_with_bounded_memory() {
    if !alone::here() {
        return;
    }
    const TOTAL: u64 = 256 * MIB;
    let bad = FaultAgent::start(Fault::Flood {
        content_type: "application/json",
        chunk: Bytes::from(vec![b'x'; 64 * 1024]),
        total: Some(TOTAL),
        sized: true,
    })
    .await;
    let fx = fleet(&bad.url(), "", "").await;
    let mut memory = Memory::watch();
    let mut response = open(fx.gw.addr(), "/agents/bad", send_raw("1")).await;
    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(
        response.headers["content-length"],
        TOTAL.to_string(),
        "the declared length is passed on"
    );
    let mut sent_at_first_mib = None;
    let mut next_sample = 0;
    let read = response
        .read(u64::MAX, |total, _| {
            if sent_at_first_mib.is_none() && total >= MIB {
                sent_at_first_mib = Some(bad.bytes_sent());
            }
            if total >= next_sample {
                memory.sample();
                next_sample += 8 * MIB;
            }
        })
        .await
        .expect("the whole body");
    assert_eq!(read, TOTAL);
    let sent = sent_at_first_mib.unwrap();
    assert!(
        sent < TOTAL / 4,
        "streamed, not buffered: the upstream had sent {} MiB when the client had 1 MiB",
        sent / MIB
    );
    memory.assert_bounded("enormous answer");
    fx.assert_served("enormous").await;
}

/// An answer that never ends: relayed with bounded memory for as long as
/// the client reads, and let go (upstream connection closed, in-flight slot
/// freed) once the client leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_answer_is_let_go_when_the_client_leaves() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::Flood {
        content_type: "application/json",
        chunk: Bytes::from(vec![b'y'; 64 * 1024]),
        total: None,
        sized: false,
    })
    .await;
    let fx = fleet(&bad.url(), "max_in_flight = 1\nqueue = 0", "").await;
    let mut memory = Memory::watch();
    let mut response = open(fx.gw.addr(), "/agents/bad", send_raw("1")).await;
    assert_eq!(response.status, StatusCode::OK);
    let mut next_sample = 0;
    let read = response
        .read(128 * MIB, |total, _| {
            if total >= next_sample {
                memory.sample();
                next_sample += 8 * MIB;
            }
        })
        .await
        .expect("an endless body keeps coming");
    assert!(read >= 128 * MIB);
    memory.assert_bounded("endless answer");
    fx.assert_served("endless").await;
    drop(response);
    assert!(
        bad.wait_body_dropped(PROMPT).await,
        "the upstream answer must be dropped once the client has gone"
    );
    let stopped_at = bad.bytes_sent();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(bad.bytes_sent() - stopped_at <= 128 * 1024, "still sending");
    bad.set_fault(Fault::None);
    let reply = client::post_json(&fx.bad_url(), send_raw("\"next\""), &[]).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "the slot was freed: {}",
        reply.text()
    );
}

/// An event stream that never ends: every event relayed intact, memory
/// bounded, upstream released when the client leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_event_stream_is_relayed_with_bounded_memory() {
    if !alone::here() {
        return;
    }
    // Large events (a 32 KiB artifact chunk each), as a model streaming
    // output would send.
    let event = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"result\":{{\"kind\":\"artifact-update\",\"taskId\":\"t\",\"contextId\":\"c\",\"artifact\":{{\"artifactId\":\"a\",\"parts\":[{{\"kind\":\"text\",\"text\":\"{}\"}}]}},\"append\":true}}}}\n\n",
        "w".repeat(32 * 1024)
    );
    let chunk = Bytes::from(event.repeat(2));
    let bad = FaultAgent::start(Fault::Flood {
        content_type: "text/event-stream",
        chunk,
        total: None,
        sized: false,
    })
    .await;
    let fx = fleet(&bad.url(), "", "").await;
    let mut memory = Memory::watch();
    let mut response = open(fx.gw.addr(), "/agents/bad", stream_call("\"e\"")).await;
    assert_eq!(response.status, StatusCode::OK);
    let pattern = event.as_bytes();
    let mut at = 0; // offset into `pattern` of the next byte
    let mut next_sample = 0;
    let read = response
        .read(32 * MIB, |total, mut data| {
            // Every byte is the upstream's: the same event over and over.
            while !data.is_empty() {
                let n = (pattern.len() - at).min(data.len());
                assert_eq!(&data[..n], &pattern[at..at + n], "an event was altered");
                at = (at + n) % pattern.len();
                data = &data[n..];
            }
            if total >= next_sample {
                memory.sample();
                next_sample += 8 * MIB;
            }
        })
        .await
        .expect("the stream keeps coming");
    // (The SSE relay scans and learns from every event: slow in a debug
    // build, so less flows here than through the unary tests, against a
    // tighter bound.)
    assert!(read >= 32 * MIB);
    memory.assert_within("endless stream", 16 * MIB);
    fx.assert_served("endless stream").await;
    drop(response);
    assert!(
        bad.wait_body_dropped(PROMPT).await,
        "upstream stream closed"
    );
}

/// An event that never ends (no blank line, ever) is cut at
/// `max_sse_event_bytes`: the gateway holds at most that much of it, then
/// ends the stream with -32052 and lets the upstream go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_never_ends_is_cut_at_the_event_limit() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::Flood {
        content_type: "text/event-stream",
        chunk: Bytes::from(format!("data: {}", "z".repeat(64 * 1024))),
        total: None,
        sized: false,
    })
    .await;
    let fx = fleet(&bad.url(), "", "[limits]\nmax_sse_event_bytes = 1048576").await;
    let mut memory = Memory::watch();
    let mut sse = client::post_stream(&fx.bad_url(), stream_call("7"), &[]).await;
    assert_eq!(sse.status, StatusCode::OK);
    let events = sse.collect_events(PROMPT).await;
    assert_eq!(events.len(), 1, "only the error event: {events:?}");
    assert_error_event(&events[0], -32052, &json!(7));
    assert!(events[0].contains("1048576"), "{}", events[0]);
    assert_eq!(sse.error(), None);
    assert!(
        bad.wait_body_dropped(PROMPT).await,
        "upstream stream closed"
    );
    // What the upstream wrote includes what sat in socket buffers.
    assert!(
        bad.bytes_sent() < 16 * MIB,
        "read {} MiB of one event",
        bad.bytes_sent() / MIB
    );
    fx.assert_served("endless event").await;
    memory.assert_bounded("endless event");
}

/// A unary answer that drips out a byte at a time arrives whole (a slow
/// body is not a timeout); the healthy agent is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_answer_arrives_whole_while_others_are_served() {
    if !alone::here() {
        return;
    }
    let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":"d","result":{"kind":"task","id":"t-d","contextId":"c","status":{"state":"completed"}}}"#);
    let bad = FaultAgent::start(Fault::Drip {
        content_type: "application/json",
        body: body.clone(),
        every_ms: 15,
    })
    .await;
    let fx = fleet(&bad.url(), "response_header_timeout = \"1s\"", "").await;
    let mut memory = Memory::watch();
    let url = fx.bad_url();
    let started = Instant::now();
    let dripping =
        tokio::spawn(async move { client::post_json(&url, send_raw("\"d\""), &[]).await });
    assert!(bad.wait_calls(1, PROMPT).await);
    fx.assert_served("drip").await;
    assert!(!dripping.is_finished(), "the drip is still going on");
    let reply = within("the dripping answer", dripping).await.unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, body, "byte for byte");
    assert!(
        started.elapsed() >= Duration::from_millis(15 * (body.len() as u64 - 1)),
        "it really dripped"
    );
    memory.assert_bounded("drip");
}

/// Dripped events are each forwarded as soon as their last byte arrives,
/// not when the stream ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dripped_events_are_forwarded_as_each_completes() {
    if !alone::here() {
        return;
    }
    let one = r#"data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t","status":{"state":"working"}}}"#;
    let two = r#"data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t","status":{"state":"completed"},"final":true}}"#;
    let body = Bytes::from(format!("{one}\n\n{two}\n\n"));
    let bad = FaultAgent::start(Fault::Drip {
        content_type: "text/event-stream",
        body: body.clone(),
        every_ms: 8,
    })
    .await;
    let fx = fleet(&bad.url(), "", "").await;
    let mut memory = Memory::watch();
    let mut sse = client::post_stream(&fx.bad_url(), stream_call("1"), &[]).await;
    let first = sse.next_event(PROMPT).await.expect("the first event");
    assert_eq!(format!("data: {first}"), one);
    let sent = bad.bytes_sent() as usize;
    assert!(
        sent < body.len() - 20,
        "the first event came only after {sent} of {} bytes",
        body.len()
    );
    fx.assert_served("dripped events").await;
    let second = sse.next_event(PROMPT).await.expect("the second event");
    assert_eq!(format!("data: {second}"), two);
    assert_eq!(sse.next_event(PROMPT).await, None);
    assert_eq!(sse.error(), None);
    memory.assert_bounded("dripped events");
}

/// A response head that drips is bounded by `response_header_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_response_head_is_504_after_the_header_timeout() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::SlowHead { every_ms: 50 }).await;
    let fx = fleet(&bad.url(), "response_header_timeout = \"600ms\"", "").await;
    let mut memory = Memory::watch();
    let url = fx.bad_url();
    let started = Instant::now();
    let slow = tokio::spawn(async move { client::post_json(&url, send_raw("\"sh\""), &[]).await });
    assert!(bad.wait_calls(1, PROMPT).await);
    fx.assert_served("slow head").await;
    let reply = within("the slow head", slow).await.unwrap();
    assert_error(&reply, 504, -32051, "\"sh\"");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        bad.wait_body_dropped(PROMPT).await,
        "the gateway closed the upstream connection"
    );
    memory.assert_bounded("slow head");
}

// -------------------------------------------------------- client faults

/// Clients that send part of a body and vanish: nothing is forwarded,
/// nothing is kept, and everyone else is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_leaving_during_the_request_body_leave_nothing_behind() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::None).await;
    let fx = fleet(&bad.url(), "", "").await;
    let mut memory = Memory::watch();
    let head = format!(
        "POST /agents/bad HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n",
        fx.gw.addr()
    );
    let partial = send_raw("1");
    let mut leaving = Vec::new();
    for _ in 0..50 {
        let mut tcp = TcpStream::connect(fx.gw.addr()).await.unwrap();
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(&partial.as_bytes()[..40]).await.unwrap();
        leaving.push(tcp);
    }
    fx.assert_served("bodies in flight").await;
    drop(leaving);
    fx.assert_served("bodies abandoned").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(bad.calls(), 0, "a partial body was forwarded");
    let reply = client::post_json(&fx.bad_url(), send_raw("\"whole\""), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(bad.calls(), 1);
    memory.assert_bounded("abandoned bodies");
}

/// A client that gives up while the upstream is still thinking: the
/// gateway drops the upstream call and frees its in-flight slot at once
/// (the only slot here), instead of waiting for the upstream's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_while_the_upstream_thinks_frees_the_call() {
    if !alone::here() {
        return;
    }
    let bad = FaultAgent::start(Fault::Hang).await;
    let fx = fleet(
        &bad.url(),
        "response_header_timeout = \"60s\"\nmax_in_flight = 1\nqueue = 0",
        "",
    )
    .await;
    let mut memory = Memory::watch();
    let url = fx.bad_url();
    let waiting =
        tokio::spawn(async move { client::try_post_json(&url, send_raw("1"), &[]).await });
    assert!(
        bad.wait_calls(1, PROMPT).await,
        "the call reached the agent"
    );
    fx.assert_served("upstream thinking").await;
    // The slot is taken: a second call is shed.
    let shed = client::post_json(&fx.bad_url(), send_raw("2"), &[]).await;
    assert_error(&shed, 503, -32071, "2");

    waiting.abort(); // the client goes away (its connection is closed)
    assert!(
        bad.wait_abandoned(1, PROMPT).await,
        "the gateway must drop the upstream call when its client has gone"
    );
    bad.set_fault(Fault::None);
    let deadline = Instant::now() + PROMPT;
    loop {
        let reply = client::post_json(&fx.bad_url(), send_raw("3"), &[]).await;
        if reply.status == StatusCode::OK {
            break;
        }
        assert_error(&reply, 503, -32071, "3");
        assert!(
            Instant::now() < deadline,
            "the in-flight slot was not freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    fx.assert_served("after the client left").await;
    memory.assert_bounded("client left");
}

/// A client leaving mid-stream closes the upstream stream and gives its
/// stream place back; others are served while the stream is open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_mid_stream_closes_the_upstream_stream() {
    if !alone::here() {
        return;
    }
    let streamer = MockAgent::start(Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    })
    .await;
    let fx = fleet(
        &streamer.url(),
        "",
        "[concurrency]\nmax_streams_per_caller = 1\n",
    )
    .await;
    let mut memory = Memory::watch();
    let mut sse = client::post_stream(&fx.bad_url(), stream_call("1"), &[]).await;
    assert!(sse.next_event(PROMPT).await.is_some());
    fx.assert_served("stream open").await;
    let refused = client::post_json(&fx.bad_url(), stream_call("2"), &[]).await;
    assert_error(&refused, 503, -32071, "2");
    drop(sse);
    assert!(
        streamer.wait_stream_closed(PROMPT).await,
        "the upstream stream must be closed once the client has gone"
    );
    let deadline = Instant::now() + PROMPT;
    loop {
        let mut next = client::post_stream(&fx.bad_url(), stream_call("3"), &[]).await;
        if next.status == StatusCode::OK {
            assert!(next.next_event(PROMPT).await.is_some());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stream place was not given back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    streamer.release_stream();
    fx.assert_served("after the stream").await;
    memory.assert_bounded("client left mid-stream");
}
