//! `server.proxy_protocol`: a layer-4 balancer names the client in a PROXY
//! protocol header (v1 or v2) in front of each connection. Raw connections
//! on loopback: the header's source is the client for per-caller limits and
//! `X-Forwarded-For`; a v2 LOCAL health check keeps the socket's peer; a
//! connection without a header is closed unanswered; the admin listener
//! takes none.

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::calls::send;
use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use ppp::v2;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(5);

/// One call a minute for each caller, PROXY protocol on.
async fn gateway(mock: &MockAgent) -> TestGateway {
    let extra = "[server]\nproxy_protocol = true\n\
                 [rate_limits]\nper_caller = { per_minute = 1, burst = 1 }\n";
    TestGateway::one("echo", &mock.url(), "", extra).await
}

fn v1(source: &str) -> Vec<u8> {
    format!("PROXY TCP4 {source} 10.0.0.1 40000 8080\r\n").into_bytes()
}

fn v2(command: v2::Command, source: &str) -> Vec<u8> {
    let source: SocketAddr = format!("{source}:40000").parse().unwrap();
    let destination: SocketAddr = "10.0.0.1:8080".parse().unwrap();
    v2::Builder::with_addresses(
        v2::Version::Two | command,
        v2::Protocol::Stream,
        (source, destination),
    )
    .build()
    .unwrap()
}

/// Writes `header` and then one HTTP/1.1 call on a fresh connection; the
/// status code of the answer, or `None` when the connection closed without
/// one.
async fn call(gw: &TestGateway, header: &[u8], id: &str) -> Option<u16> {
    let body = send(id);
    let mut bytes = header.to_vec();
    bytes.extend_from_slice(
        format!(
            "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    let mut stream = TcpStream::connect(gw.addr()).await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut answer))
        .await
        .expect("the gateway answers or closes")
        .ok()?;
    let text = String::from_utf8_lossy(&answer);
    let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    Some(status.parse().unwrap())
}

#[tokio::test]
async fn the_header_names_the_client_in_both_versions() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&mock).await;

    assert_eq!(call(&gw, &v1("203.0.113.1"), "a1").await, Some(200));
    assert_eq!(
        call(&gw, &v2(v2::Command::Proxy, "203.0.113.2"), "b1").await,
        Some(200),
        "another client has a budget of its own"
    );
    assert_eq!(
        call(&gw, &v1("203.0.113.2"), "b2").await,
        Some(429),
        "b's is spent"
    );
    assert_eq!(
        call(&gw, &v2(v2::Command::Proxy, "203.0.113.1"), "a2").await,
        Some(429),
        "a's is spent, whichever version names it"
    );
    let seen: Vec<Option<String>> = mock
        .requests()
        .iter()
        .map(|r| r.header("x-forwarded-for").map(str::to_owned))
        .collect();
    assert_eq!(
        seen,
        [
            Some("203.0.113.1".to_owned()),
            Some("203.0.113.2".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_local_health_check_keeps_the_socket_peer() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&mock).await;
    assert_eq!(
        call(&gw, &v2(v2::Command::Local, "203.0.113.1"), "l1").await,
        Some(200)
    );
    let seen = mock.requests().pop().unwrap();
    assert_eq!(seen.header("x-forwarded-for"), Some("127.0.0.1"));
}

#[tokio::test]
async fn a_connection_without_the_header_is_closed_unanswered() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&mock).await;
    assert_eq!(call(&gw, b"", "none").await, None, "plain HTTP first");
    assert_eq!(
        call(&gw, b"PROXY TCP4 nowhere 10.0.0.1 1 2\r\n", "bad").await,
        None,
        "a broken header"
    );
    assert_eq!(mock.request_count(), 0);
    // The listener is unharmed, and the admin listener takes no header.
    assert_eq!(call(&gw, &v1("203.0.113.5"), "ok").await, Some(200));
    let health = client::get(&format!("{}/healthz", gw.admin_url()), &[]).await;
    assert_eq!(health.status, 200, "{}", health.text());
}
