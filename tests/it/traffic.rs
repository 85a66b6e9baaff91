//! Concurrency limits and slow clients, through a real gateway: calls in
//! flight per upstream (a short queue, then shed), open streams per caller
//! and in total, and a slowloris client dropped while others are served.

use std::time::{Duration, Instant};

use crate::support::calls::{send_raw, stream_raw};
use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread")]
async fn in_flight_limit_queues_briefly_then_sheds() {
    let mock = MockAgent::start(Mode::Delay { ms: 600 }).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "max_in_flight = 2\nqueue = 1\nqueue_timeout = \"5s\"",
        "",
    )
    .await;
    let url = gw.url();
    let call = |id: u32| {
        let url = url.clone();
        tokio::spawn(async move { client::post_json(&url, send_raw(&id.to_string()), &[]).await })
    };
    let (a, b) = (call(1), call(2));
    assert!(mock.wait_requests(2, WAIT).await, "two calls in flight");
    let queued = call(3);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Two in flight and one queued: the next is shed at once.
    let started = Instant::now();
    let shed = client::post_json(&gw.url(), send_raw("4"), &[]).await;
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "shed quickly: {:?}",
        started.elapsed()
    );
    assert_eq!(shed.status, 503, "{}", shed.text());
    let body = shed.json();
    assert_eq!(body["error"]["code"], -32071);
    assert_eq!(body["id"], 4);
    for task in [a, b, queued] {
        let reply = tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    assert_eq!(
        mock.request_count(),
        3,
        "the shed call never reached the agent"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_queued_call_waits_at_most_the_queue_timeout() {
    let mock = MockAgent::start(Mode::Hang).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "max_in_flight = 1\nqueue = 4\nqueue_timeout = \"300ms\"\nresponse_header_timeout = \"5s\"",
        "",
    )
    .await;
    let url = gw.url();
    let _stuck = tokio::spawn(async move { client::try_post_json(&url, send_raw("1"), &[]).await });
    assert!(mock.wait_requests(1, WAIT).await);
    let started = Instant::now();
    let reply = client::post_json(&gw.url(), send_raw("2"), &[]).await;
    let waited = started.elapsed();
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.json()["error"]["code"], -32071);
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_are_limited_per_caller_and_freed_when_closed() {
    let mock = MockAgent::start(Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    })
    .await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "",
        "[concurrency]\nmax_streams_per_caller = 2\nmax_streams = 100\n",
    )
    .await;
    let mut first = client::post_stream(&gw.url(), stream_raw("1"), &[]).await;
    let mut second = client::post_stream(&gw.url(), stream_raw("2"), &[]).await;
    assert!(first.next_event(WAIT).await.is_some());
    assert!(second.next_event(WAIT).await.is_some());
    let refused = client::post_json(&gw.url(), stream_raw("3"), &[]).await;
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32071);
    assert_eq!(refused.json()["id"], 3);
    // Closing a stream gives its place back.
    drop(first);
    assert!(mock.wait_stream_closed(WAIT).await);
    let deadline = Instant::now() + WAIT;
    loop {
        let mut next = client::post_stream(&gw.url(), stream_raw("4"), &[]).await;
        if next.status == 200 {
            assert!(next.next_event(WAIT).await.is_some());
            break;
        }
        assert!(Instant::now() < deadline, "the place was not given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mock.release_stream();
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_are_limited_in_total() {
    let mock = MockAgent::start(Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    })
    .await;
    let gw = TestGateway::one("agent", &mock.url(), "", "[concurrency]\nmax_streams = 1\n").await;
    let mut open = client::post_stream(&gw.url(), stream_raw("1"), &[]).await;
    assert!(open.next_event(WAIT).await.is_some());
    let refused = client::post_json(&gw.url(), stream_raw("2"), &[]).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.json()["error"]["code"], -32071);
    // Unary calls are not streams: they are still served.
    let unary = client::post_json(&gw.url(), send_raw("3"), &[]).await;
    assert_eq!(unary.status, 200, "{}", unary.text());
    mock.release_stream();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slowloris_client_is_dropped_while_others_are_served() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "",
        "[limits]\nheader_read_timeout = \"500ms\"\n",
    )
    .await;
    let mut slow = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let dripping = tokio::spawn(async move {
        // One header byte every 100 ms, never finishing the head.
        for _ in 0..100 {
            if slow.write_all(b"X").await.is_err() {
                break;
            }
            let mut buf = [0u8; 512];
            match tokio::time::timeout(Duration::from_millis(100), slow.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                _ => {}
            }
        }
        started.elapsed()
    });
    // Meanwhile a normal client is served promptly.
    let t = Instant::now();
    let reply = client::post_json(&gw.url(), send_raw("1"), &[]).await;
    assert_eq!(reply.status, 200);
    assert!(t.elapsed() < Duration::from_secs(2));
    let dropped_after = tokio::time::timeout(WAIT, dripping).await.unwrap().unwrap();
    assert!(
        dropped_after < Duration::from_secs(5),
        "slow client kept for {dropped_after:?}"
    );
}

/// The header-read timeout runs from each answer of a keep-alive
/// connection (hyper's header-read timer, hyper-util's `TokioTimer`):
/// calls spread over more than the timeout are all served, and the
/// connection is closed once it has been idle for the timeout, not before.
#[tokio::test(flavor = "multi_thread")]
async fn a_keep_alive_connection_is_closed_a_timeout_after_its_last_answer() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "",
        "[limits]\nheader_read_timeout = \"1s\"\n",
    )
    .await;
    let mut conn = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
    let mut answered = Instant::now();
    // Four calls 400 ms apart: 1.6 s on one connection, each head well
    // within the timeout of the answer before it.
    for id in 1..=4 {
        if id > 1 {
            tokio::time::sleep(Duration::from_millis(400)).await;
        }
        let body = send_raw(&id.to_string());
        let request = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(request.as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(WAIT, read_answer(&mut conn))
            .await
            .expect("an answer in time");
        answered = Instant::now();
        assert!(answer.starts_with("HTTP/1.1 200"), "call {id}: {answer}");
        assert!(
            answer.contains(&format!("\"id\":{id}")),
            "call {id}: {answer}"
        );
    }
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(WAIT, conn.read(&mut buf))
        .await
        .expect("closed within the wait");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let idle = answered.elapsed();
    assert!(
        idle >= Duration::from_millis(900) && idle < Duration::from_secs(5),
        "closed after {idle:?} idle; the timeout is 1 s"
    );
}

/// One HTTP/1.1 answer read from `conn`: its head and a body of its
/// `Content-Length`.
async fn read_answer(conn: &mut tokio::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "closed mid-answer: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text[..end]
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .expect("an answer with a Content-Length");
        if got.len() >= end + 4 + length {
            return text;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_says_nothing_or_half_a_preface_is_disconnected() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "",
        "[limits]\nheader_read_timeout = \"500ms\"\n",
    )
    .await;
    // Nothing at all; a start of the HTTP/2 preface that never goes on.
    for first in [&b""[..], b"PRI * HTTP/2.0\r\n"] {
        let mut client = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
        client.write_all(first).await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(WAIT, client.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("kept after sending {first:?}"));
        assert!(matches!(read, Ok(0) | Err(_)), "{first:?}: {read:?}");
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "{first:?}: cut off after {:?}, before the timeout",
            started.elapsed()
        );
    }
}

/// The first bytes of a plain connection decide between HTTP/1.1 and
/// HTTP/2; a client whose first write is only part of them is still served
/// in its own protocol.
#[tokio::test(flavor = "multi_thread")]
async fn a_protocol_preface_split_across_writes_is_still_understood() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one("agent", &mock.url(), "", "").await;

    // HTTP/1.1 whose first write ("P") could still be the HTTP/2 preface.
    let body = send_raw("1");
    let mut h1 = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
    h1.write_all(b"P").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rest = format!(
        "OST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    h1.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, h1.read_to_end(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"jsonrpc\""), "{answer}");

    // HTTP/2 prior knowledge, the preface in two writes: the gateway answers
    // with its own SETTINGS frame, not an HTTP/1.1 error.
    let mut h2 = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    h2.write_all(b"\r\nSM\r\n\r\n").await.unwrap();
    // An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
    h2.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let mut head = [0u8; 9];
    tokio::time::timeout(WAIT, h2.read_exact(&mut head))
        .await
        .expect("a frame")
        .unwrap();
    assert_eq!(head[3], 4, "the first frame is SETTINGS: {head:?}");
}

/// A connection that has not said which protocol it speaks has no call to
/// finish: shutdown does not wait the grace period for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_client_does_not_hold_up_shutdown() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::one(
        "agent",
        &mock.url(),
        "",
        "[server]\nshutdown_grace = \"30s\"\n[limits]\nheader_read_timeout = \"30s\"\n",
    )
    .await;
    let mut silent = tokio::net::TcpStream::connect(gw.addr()).await.unwrap();
    // Served first: the silent connection has been accepted by now.
    let reply = client::post_json(&gw.url(), send_raw("1"), &[]).await;
    assert_eq!(reply.status, 200);
    let took = gw.shut_down_within(WAIT).await;
    assert!(
        took < Duration::from_millis(1500),
        "shutdown took {took:?}; the grace is 30 s"
    );
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(WAIT, silent.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
}
