//! Each way an upstream can fail gives the client the right status and code,
//! names the upstream in `error.data.upstream` and mirrors the request id; an
//! upstream's own answer, error or not, is relayed untouched; and a failure
//! leaves nothing behind that spoils the next request.
use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::support::calls::send_raw;
use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::StatusCode;
use serde_json::value::RawValue;

/// Generous bound for "answered promptly".
const PROMPT: Duration = Duration::from_secs(5);

/// The same call as [`send`], streamed: with HTTP/1.1 to an `http://`
/// agent it goes on a socket the gateway reads itself, not hyper's.
fn stream(raw_id: &str) -> String {
    send_raw(raw_id).replace("message/send", "message/stream")
}

/// Runs `fut`, failing the test if it takes longer than [`PROMPT`].
async fn promptly<T>(what: &str, fut: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = tokio::time::timeout(PROMPT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {PROMPT:?}"));
    (out, started.elapsed())
}

/// Asserts a gateway-made upstream error: status, code, the upstream's name
/// in `data.upstream`, and the id mirrored as raw text.
fn assert_upstream_error(reply: &Reply, status: u16, code: i64, upstream: &str, raw_id: &str) {
    let text = reply.text();
    assert_eq!(reply.status.as_u16(), status, "{text}");
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{text}"
    );
    let members: HashMap<String, Box<RawValue>> =
        serde_json::from_slice(&reply.body).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert_eq!(members.get("id").map(|v| v.get()), Some(raw_id), "{text}");
    let v = reply.json();
    assert_eq!(v["jsonrpc"], "2.0", "{text}");
    assert_eq!(v["error"]["code"], code, "{text}");
    assert_eq!(v["error"]["data"]["upstream"], upstream, "{text}");
    assert!(v.get("result").is_none(), "{text}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(upstream),
        "the message names the upstream: {message}"
    );
}

/// The upstream's own card through the gateway (the root card is the
/// fleet's aggregate and stays up when one agent is down).
fn card_url(gw: &TestGateway, name: &str) -> String {
    format!(
        "http://{}/agents/{name}/.well-known/agent-card.json",
        gw.addr()
    )
}

/// A valid call succeeds with the upstream's answer for this very request.
async fn assert_served(gw: &TestGateway, raw_id: &str) {
    let (reply, _) = promptly(
        "valid call",
        client::post_json(&gw.url(), send_raw(raw_id), &[]),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let members: HashMap<String, Box<RawValue>> = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        members.get("id").map(|v| v.get()),
        Some(raw_id),
        "{}",
        reply.text()
    );
    assert_eq!(reply.json()["result"]["kind"], "task", "{}", reply.text());
}

// ------------------------------------------------------------ failures

#[tokio::test]
async fn connection_refused_is_502_unavailable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let gw = TestGateway::one("gone", &format!("http://127.0.0.1:{port}"), "", "").await;
    let (reply, _) = promptly(
        "refused",
        client::post_json(&gw.url(), send_raw(r#""r-1""#), &[]),
    )
    .await;
    assert_upstream_error(&reply, 502, -32050, "gone", r#""r-1""#);

    // Its card could never be fetched, for the same reason.
    let (reply, _) = promptly("card", client::get(&card_url(&gw, "gone"), &[])).await;
    assert_upstream_error(&reply, 502, -32050, "gone", "null");
}

#[tokio::test]
async fn hanging_upstream_is_504_within_its_header_timeout() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "sloth",
        &mock.url(),
        "response_header_timeout = \"300ms\"",
        "",
    )
    .await;
    // A first call leaves a pooled keep-alive connection, which the hanging
    // call most likely reuses and leaves stuck.
    assert_served(&gw, "0").await;
    mock.set_mode(Mode::Hang);
    let (reply, elapsed) =
        promptly("hang", client::post_json(&gw.url(), send_raw("1.50"), &[])).await;
    assert_upstream_error(&reply, 504, -32051, "sloth", "1.50");
    assert!(elapsed < PROMPT, "took {elapsed:?}");
    assert_eq!(
        mock.request_count(),
        2,
        "the hanging call reached the upstream"
    );
    // A card refresh against the hanging upstream times out, and the last
    // good card is still served (until it is older than max_staleness).
    gw.running.refresh_cards().await;
    let (reply, _) = promptly("card", client::get(&card_url(&gw, "sloth"), &[])).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["skills"][0]["id"], "echo");

    mock.set_mode(Mode::Normal);
    assert_served(&gw, r#""next""#).await;
    assert_served(&gw, r#""and-next""#).await;
}

#[tokio::test]
async fn late_answer_after_a_timeout_does_not_reach_the_next_client() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "late",
        &mock.url(),
        "response_header_timeout = \"300ms\"",
        "",
    )
    .await;
    assert_served(&gw, "0").await;
    mock.set_mode(Mode::Delay { ms: 800 });
    let (reply, _) = promptly(
        "delayed",
        client::post_json(&gw.url(), send_raw(r#""slow""#), &[]),
    )
    .await;
    assert_upstream_error(&reply, 504, -32051, "late", r#""slow""#);

    mock.set_mode(Mode::Normal);
    assert_served(&gw, r#""right-away""#).await;
    // Once the upstream has sent its late answer to "slow", that connection
    // is idle again; whoever uses it next must get their own answer.
    tokio::time::sleep(Duration::from_millis(800)).await;
    for i in 0..3 {
        assert_served(&gw, &format!(r#""after-{i}""#)).await;
    }
}

#[tokio::test]
async fn garbage_answer_is_502_bad_response_then_recovers() {
    let mock = MockAgent::start(Mode::Garbage).await;
    let gw = TestGateway::one("babbler", &mock.url(), "", "").await;
    let (reply, _) = promptly("garbage", client::post_json(&gw.url(), send_raw("7"), &[])).await;
    assert_upstream_error(&reply, 502, -32052, "babbler", "7");
    assert_eq!(
        mock.request_count(),
        1,
        "the mock read the request before babbling"
    );
    let (reply, _) = promptly("card", client::get(&card_url(&gw, "babbler"), &[])).await;
    assert_upstream_error(&reply, 502, -32052, "babbler", "null");

    mock.set_mode(Mode::Normal);
    assert_served(&gw, "8").await;
}

#[tokio::test]
async fn connection_closed_without_answer_is_502_unavailable_then_recovers() {
    let mock = MockAgent::start(Mode::CloseImmediately).await;
    let gw = TestGateway::one("mute", &mock.url(), "", "").await;
    let (reply, _) = promptly(
        "closed",
        client::post_json(&gw.url(), send_raw("null"), &[]),
    )
    .await;
    assert_upstream_error(&reply, 502, -32050, "mute", "null");
    assert!(mock.connection_count() >= 1);

    mock.set_mode(Mode::Normal);
    assert_served(&gw, r#""back""#).await;
}

/// A streaming call fails as a unary one does, before any event: garbage is
/// 502 -32052, a closed connection 502 -32050, no head in time 504 -32051.
#[tokio::test]
async fn streaming_calls_fail_the_same_ways() {
    let cases = [
        (Mode::Garbage, 502, -32052),
        (Mode::CloseImmediately, 502, -32050),
        (Mode::Hang, 504, -32051),
    ];
    for (mode, status, code) in cases {
        let mock = MockAgent::start(Mode::Normal).await;
        let keys = "response_header_timeout = \"300ms\"";
        let gw = TestGateway::one("streamer", &mock.url(), keys, "").await;
        mock.set_mode(mode);
        let url = gw.url();
        let call = client::post_json(&url, stream(r#""s-1""#), &[]);
        let (reply, _) = promptly("stream", call).await;
        assert_upstream_error(&reply, status, code, "streamer", r#""s-1""#);
        mock.set_mode(Mode::Normal);
        assert_served(&gw, r#""after""#).await;
    }
}

/// An upstream that stops after the gateway pooled a connection to it: the
/// stale connection is not reused into a hang or a 500.
#[tokio::test]
async fn upstream_that_goes_away_is_502_unavailable() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one("vanished", &mock.url(), "", "").await;
    assert_served(&gw, "1").await;
    mock.shutdown().await;
    for id in ["2", "3"] {
        let (reply, _) = promptly("gone", client::post_json(&gw.url(), send_raw(id), &[])).await;
        assert_upstream_error(&reply, 502, -32050, "vanished", id);
    }
}

#[tokio::test]
async fn delay_shorter_than_the_timeout_succeeds() {
    let mock = MockAgent::start(Mode::Delay { ms: 200 }).await;
    let gw = TestGateway::one(
        "patient",
        &mock.url(),
        "response_header_timeout = \"3s\"",
        "",
    )
    .await;
    let started = Instant::now();
    assert_served(&gw, r#""d-1""#).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
}

// ------------------------------------------------------------ relayed answers

/// The gateway never rewrites an upstream's own answer: status, content type
/// and body bytes arrive exactly as sent, whatever the request id was.
#[tokio::test]
async fn upstream_error_answers_are_relayed_byte_for_byte() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one("honest", &mock.url(), "", "").await;
    let cases: [(u16, &str, &[u8]); 4] = [
        (
            500,
            "application/json",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"Internal error\"}}",
        ),
        (
            200,
            "application/json",
            b"{ \"jsonrpc\" : \"2.0\", \"id\" : \"x\",\n  \"error\" : {\"code\":-32001, \"message\":\"Task not found\"} }\n",
        ),
        (
            404,
            "text/html; charset=utf-8",
            b"<!doctype html><html><body><h1>404 Not Found</h1></body></html>",
        ),
        (503, "text/plain", b"upstream busy \xff\xfe"),
    ];
    for (status, content_type, body) in cases {
        let body = Bytes::from_static(body);
        mock.set_mode(Mode::Fixed {
            status,
            content_type: content_type.into(),
            body: body.clone(),
        });
        let (reply, _) = promptly("fixed", client::post_json(&gw.url(), send_raw("42"), &[])).await;
        assert_eq!(reply.status.as_u16(), status, "{}", reply.text());
        assert_eq!(reply.header("content-type"), Some(content_type), "{status}");
        assert_eq!(reply.body, body, "{status}: body relayed byte for byte");
    }
    mock.set_mode(Mode::Normal);
    assert_served(&gw, "43").await;
}

// ------------------------------------------------------------ concurrency

/// One stuck upstream call ties up neither the gateway nor the upstream's
/// other connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_call_does_not_block_other_requests() {
    let mock = MockAgent::start(Mode::Hang).await;
    let gw = TestGateway::one(
        "stuck",
        &mock.url(),
        "response_header_timeout = \"30s\"",
        "",
    )
    .await;
    let url = gw.url();
    let hanging =
        tokio::spawn(async move { client::try_post_json(&url, send_raw("1"), &[]).await });
    assert!(
        mock.wait_requests(1, PROMPT).await,
        "the hanging call reached the upstream"
    );

    let bound = Duration::from_secs(2);
    let readyz = format!("{}/readyz", gw.admin_url());
    let (reply, elapsed) = promptly("readyz", client::get(&readyz, &[])).await;
    // Its card could not be fetched either (Hang answers GETs too).
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        reply.json()["upstreams"]["stuck"]["card"],
        "missing",
        "{}",
        reply.text()
    );
    assert!(elapsed < bound, "readyz took {elapsed:?}");

    let (reply, elapsed) = promptly("parse error", client::post_json(&gw.url(), "{", &[])).await;
    assert_eq!(reply.json()["error"]["code"], -32700);
    assert!(elapsed < bound, "a parse error took {elapsed:?}");

    // The mode is read per request: the first call stays stuck, a new one
    // to the same upstream is forwarded on another connection and answered.
    mock.set_mode(Mode::Normal);
    let started = Instant::now();
    assert_served(&gw, "2").await;
    assert!(
        started.elapsed() < bound,
        "a forwarded call took {:?}",
        started.elapsed()
    );

    assert!(
        !hanging.is_finished(),
        "the hanging call is still outstanding"
    );
    hanging.abort();
}

/// A client that gives up while the upstream hangs leaves the gateway fine.
/// (The mock cannot report a unary connection closing, so what is asserted is
/// what a client can see: the next requests are served.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_giving_up_on_a_hanging_call_leaves_the_gateway_serving() {
    let mock = MockAgent::start(Mode::Hang).await;
    let gw = TestGateway::one(
        "stuck",
        &mock.url(),
        "response_header_timeout = \"30s\"",
        "",
    )
    .await;
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        client::try_post_json(&gw.url(), send_raw("1"), &[]),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the client timed out and dropped its request: {gave_up:?}"
    );
    assert!(
        mock.wait_requests(1, PROMPT).await,
        "the call reached the upstream"
    );

    mock.set_mode(Mode::Normal);
    assert_served(&gw, "2").await;
    assert_served(&gw, "3").await;
    let (reply, _) = promptly("parse error", client::post_json(&gw.url(), "]", &[])).await;
    assert_eq!(reply.json()["error"]["code"], -32700);
    let last = mock.requests().pop().unwrap();
    assert_eq!(last.json()["id"], 3, "the upstream got the later calls");
    assert_eq!(mock.request_count(), 3);
}
