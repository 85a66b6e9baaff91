//! The client's address behind a trusted proxy: a gateway on loopback that
//! trusts 127.0.0.1 as its ingress keys anonymous callers by the address
//! the ingress reports in `X-Forwarded-For`, never by one a client wrote
//! itself; without trusted proxies the header changes nothing. The agent
//! sees the whole chain, and the scheme and host the ingress reported.

use crate::support::calls::send;
use crate::support::client::{self, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use http::StatusCode;

async fn call_as(gw: &TestGateway, id: &str, forwarded_for: &str) -> Reply {
    client::post_json(&gw.url(), send(id), &[("x-forwarded-for", forwarded_for)]).await
}

fn outcome(reply: &Reply) -> StatusCode {
    assert!(
        matches!(reply.status, StatusCode::OK | StatusCode::TOO_MANY_REQUESTS),
        "{}: {}",
        reply.status,
        reply.text()
    );
    reply.status
}

/// One echo agent, a rate limit of one call a minute per caller (so the
/// caller's address shows), and `trusted` as `server.trusted_proxies`.
async fn gateway(mock: &MockAgent, trusted: &str) -> TestGateway {
    let extra = format!(
        "[server]\ntrusted_proxies = [{trusted}]\n\
         [rate_limits]\nper_caller = {{ per_minute = 1, burst = 1 }}\n"
    );
    TestGateway::one("echo", &mock.url(), "", &extra).await
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_client_has_its_own_limit() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&mock, "\"127.0.0.1\"").await;

    assert_eq!(
        outcome(&call_as(&gw, "a1", "203.0.113.1").await),
        StatusCode::OK
    );
    assert_eq!(
        outcome(&call_as(&gw, "b1", "203.0.113.2").await),
        StatusCode::OK,
        "another client behind the same proxy has a budget of its own"
    );
    assert_eq!(
        outcome(&call_as(&gw, "a2", "203.0.113.1").await),
        StatusCode::TOO_MANY_REQUESTS,
        "the first client's budget is spent"
    );
    // The client wrote "198.51.100.9" itself; the proxy appended what it saw.
    let spoofed = call_as(&gw, "a3", "198.51.100.9, 203.0.113.1").await;
    assert_eq!(
        outcome(&spoofed),
        StatusCode::TOO_MANY_REQUESTS,
        "an address the client wrote itself is not believed"
    );
    assert_eq!(
        mock.request_count(),
        2,
        "refused calls never reached the agent"
    );
}

#[tokio::test]
async fn without_trusted_proxies_the_header_changes_nothing() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&mock, "").await;

    assert_eq!(
        outcome(&call_as(&gw, "a1", "203.0.113.1").await),
        StatusCode::OK
    );
    assert_eq!(
        outcome(&call_as(&gw, "b1", "203.0.113.2").await),
        StatusCode::TOO_MANY_REQUESTS,
        "both calls came from 127.0.0.1, whatever the header says"
    );
}

#[tokio::test]
async fn the_agent_sees_the_chain_and_the_scheme_and_host_the_proxy_reported() {
    let mock = MockAgent::start(Mode::Normal).await;
    let headers = [
        ("x-forwarded-for", "203.0.113.1"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "agents.example.com"),
    ];
    for (trusted, proto, host) in [
        ("\"127.0.0.0/8\"", "https", "agents.example.com".to_string()),
        ("", "http", String::new()),
    ] {
        let gw = gateway(&mock, trusted).await;
        let reply = client::post_json(&gw.url(), send("h"), &headers).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
        let seen = mock.requests().pop().expect("the call reached the agent");
        assert_eq!(
            seen.header("x-forwarded-for"),
            Some("203.0.113.1, 127.0.0.1")
        );
        assert_eq!(
            seen.header("x-forwarded-proto"),
            Some(proto),
            "trusted: {trusted}"
        );
        let host = match host.is_empty() {
            true => gw.addr().to_string(),
            false => host,
        };
        assert_eq!(
            seen.header("x-forwarded-host"),
            Some(host.as_str()),
            "trusted: {trusted}"
        );
    }
}
