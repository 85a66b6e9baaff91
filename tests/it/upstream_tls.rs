//! TLS to the agents: `https://` upstream URLs verified against the
//! upstream's CA bundle (or Mozilla's roots), HTTP/1.1 or h2 by ALPN, a
//! fixed server name, a client certificate for agents that require one, and
//! a CA file that changed being picked up by a reload. A handshake that fails
//! is the agent's side: 502 with a JSON-RPC error naming the upstream and
//! the reason, and nothing reaches the agent.
//!
//! Every certificate is made with rcgen at test time; every socket is on
//! 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use crate::support::calls;
use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode, DEFAULT_EVENTS};
use crate::support::pki::{Ca, Leaf, TempDir};
use a2a_gateway::config::{self, Overrides};
use http::{StatusCode, Version};
use rcgen::{ExtendedKeyUsagePurpose, SanType};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(10);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An agent's TLS: its certificate, the ALPN protocols it accepts, and the
/// CA its clients' certificates must come from (then one is required).
pub(crate) fn agent_tls(leaf: &Leaf, alpn: &[&[u8]], client_ca: Option<&Ca>) -> Arc<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.der()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let (certs, key) = leaf.identity();
    let mut config = builder.with_single_cert(certs, key).unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

const BOTH: &[&[u8]] = &[b"h2", b"http/1.1"];

/// A gateway in front of one agent; `tls` is the `[upstreams.tls]` body and
/// `more` extra upstream keys (e.g. `http2 = true`).
fn gateway_config(url: &str, more: &str, tls: &str) -> String {
    let mut text = String::from(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"2s\"\n\
         [card_refresh]\ntimeout = \"2s\"\n",
    );
    text.push_str(&format!(
        "[[upstreams]]\nname = \"secure\"\nurl = \"{url}\"\n{more}\n"
    ));
    if !tls.is_empty() {
        text.push_str(&format!("[upstreams.tls]\n{tls}\n"));
    }
    text
}

/// The agents' CA, and its certificate written to `ca.pem` in a temp dir.
fn agents_ca(tag: &str) -> (Ca, TempDir, std::path::PathBuf) {
    let ca = Ca::new("agents CA");
    let dir = TempDir::new(tag);
    let ca_file = dir.write("ca.pem", &ca.cert.pem());
    (ca, dir, ca_file)
}

/// The JSON-RPC calls the agent received (card fetches left out).
fn posts(agent: &MockAgent) -> Vec<crate::support::mock_agent::Recorded> {
    agent
        .requests()
        .into_iter()
        .filter(|r| r.method == http::Method::POST)
        .collect()
}

fn ca_line(path: &std::path::Path) -> String {
    format!("ca = '{}'\n", path.display())
}

async fn send_one(gw: &TestGateway, id: &str) -> client::Reply {
    tokio::time::timeout(WAIT, client::post_json(&gw.url(), calls::send(id), &[]))
        .await
        .expect("the gateway answers in time")
}

/// 502 -32050 naming the upstream, with `needle` in the message.
fn assert_upstream_refused(reply: &client::Reply, needle: &str) {
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32050, "{body}");
    assert_eq!(body["error"]["data"]["upstream"], "secure", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(needle),
        "expected {needle:?} in {message:?}"
    );
}

async fn card_state(gw: &TestGateway) -> Value {
    let reply = client::get(&format!("{}/readyz", gw.admin_url()), &[]).await;
    reply.json()["upstreams"]["secure"]["card"].clone()
}

#[tokio::test]
async fn an_https_agent_gets_the_call_byte_for_byte_over_http11() {
    let (ca, _dir, ca_file) = agents_ca("up-h1");
    // The agent would take h2 too: the gateway offers no ALPN, so HTTP/1.1.
    let agent =
        MockAgent::start_tls(Mode::Normal, agent_tls(&ca.server("agent", 1), BOTH, None)).await;
    assert!(agent.url().starts_with("https://"));
    let gw = TestGateway::from_toml(&gateway_config(&agent.url(), "", &ca_line(&ca_file))).await;

    // The card came over TLS as well.
    assert_eq!(card_state(&gw).await, "fresh");
    let body = calls::send("tls-1");
    let reply = send_one(&gw, "tls-1").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(reply.json()["result"]["kind"], "task", "{}", reply.text());
    let calls = posts(&agent);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body, body.as_bytes(), "the body arrives unaltered");
    assert_eq!(calls[0].http_version, Version::HTTP_11);
    let (handshakes, with_cert) = agent.handshakes();
    assert!(handshakes >= 1);
    assert_eq!(with_cert, 0, "no client certificate was configured");
}

#[tokio::test]
async fn http2_true_negotiates_h2_by_alpn_and_streams_relay() {
    let (ca, _dir, ca_file) = agents_ca("up-h2");
    let agent =
        MockAgent::start_tls(Mode::Normal, agent_tls(&ca.server("agent", 1), BOTH, None)).await;
    let gw = TestGateway::from_toml(&gateway_config(
        &agent.url(),
        "http2 = true",
        &ca_line(&ca_file),
    ))
    .await;

    let reply = send_one(&gw, "h2-1").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let mut stream =
        client::post_stream(&gw.url(), calls::message("h2-2", "message/stream"), &[]).await;
    assert_eq!(stream.status, StatusCode::OK);
    let events = stream.collect_events(WAIT).await;
    assert_eq!(events.len(), DEFAULT_EVENTS, "{events:?}");
    let posts = posts(&agent);
    assert_eq!(posts.len(), 2);
    assert!(posts.iter().all(|r| r.http_version == Version::HTTP_2));
}

#[tokio::test]
async fn a_certificate_from_an_unknown_ca_is_a_502_and_nothing_is_sent() {
    let ca = Ca::new("agents CA");
    let agent =
        MockAgent::start_tls(Mode::Normal, agent_tls(&ca.server("agent", 1), BOTH, None)).await;
    // No [upstreams.tls]: Mozilla's roots, which do not know the test CA.
    let gw = TestGateway::from_toml(&gateway_config(&agent.url(), "", "")).await;
    assert_ne!(card_state(&gw).await, "fresh");
    let reply = send_one(&gw, "unknown-ca").await;
    assert_upstream_refused(&reply, "certificate");
    assert_eq!(agent.request_count(), 0, "the call never reached the agent");
    assert_eq!(agent.handshakes().0, 0);
}

#[tokio::test]
async fn server_name_sets_the_name_the_certificate_must_carry() {
    let (ca, _dir, ca_file) = agents_ca("up-sni");
    // A certificate for a DNS name only: 127.0.0.1 is not in it.
    let leaf = ca.leaf(
        "agent.internal",
        7,
        vec![SanType::DnsName("agent.internal".try_into().unwrap())],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let agent = MockAgent::start_tls(Mode::Normal, agent_tls(&leaf, BOTH, None)).await;

    let by_ip = TestGateway::from_toml(&gateway_config(&agent.url(), "", &ca_line(&ca_file))).await;
    let reply = send_one(&by_ip, "sni-1").await;
    assert_upstream_refused(&reply, "certificate");

    let tls = format!("{}server_name = \"agent.internal\"\n", ca_line(&ca_file));
    let named = TestGateway::from_toml(&gateway_config(&agent.url(), "", &tls)).await;
    let reply = send_one(&named, "sni-2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(
        agent.request_count(),
        1,
        "only the named gateway's call arrived"
    );
}

#[tokio::test]
async fn an_agent_that_requires_a_client_certificate_gets_the_gateways() {
    let (ca, dir, ca_file) = agents_ca("up-mtls");
    let gateways_ca = Ca::new("gateways CA");
    let client = gateways_ca.client("gateway");
    let cert = dir.write("client.pem", &client.cert_pem);
    let key = dir.write("client.key", &client.key_pem);
    let agent = MockAgent::start_tls(
        Mode::Normal,
        agent_tls(&ca.server("agent", 1), BOTH, Some(&gateways_ca)),
    )
    .await;

    let anonymous =
        TestGateway::from_toml(&gateway_config(&agent.url(), "", &ca_line(&ca_file))).await;
    let reply = send_one(&anonymous, "mtls-1").await;
    assert_upstream_refused(&reply, "secure");
    assert_eq!(agent.request_count(), 0);

    let tls = format!(
        "{}cert = '{}'\nkey = '{}'\n",
        ca_line(&ca_file),
        cert.display(),
        key.display()
    );
    let with_cert = TestGateway::from_toml(&gateway_config(&agent.url(), "", &tls)).await;
    let reply = send_one(&with_cert, "mtls-2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let (handshakes, with_client_cert) = agent.handshakes();
    assert!(with_client_cert >= 1 && with_client_cert == handshakes);
}

#[tokio::test]
async fn a_reload_picks_up_a_changed_ca_file() {
    let old_ca = Ca::new("old CA");
    let new_ca = Ca::new("new CA");
    let dir = TempDir::new("up-reload");
    let ca_file = dir.write("ca.pem", &old_ca.cert.pem());
    // The agent's certificate already comes from the new CA.
    let agent = MockAgent::start_tls(
        Mode::Normal,
        agent_tls(&new_ca.server("agent", 1), BOTH, None),
    )
    .await;
    let text = gateway_config(&agent.url(), "", &ca_line(&ca_file));
    let gw = TestGateway::from_toml(&text).await;
    assert_upstream_refused(&send_one(&gw, "reload-1").await, "certificate");

    // Same text, same path: only the file's contents changed.
    dir.write("ca.pem", &new_ca.cert.pem());
    let overrides = Overrides {
        listen: Some("127.0.0.1:0".into()),
        admin_listen: Some("127.0.0.1:0".into()),
        ..Default::default()
    };
    gw.running
        .reload(config::load_with(Some(&text), &overrides))
        .expect("the reload is accepted");
    let reply = send_one(&gw, "reload-2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
}

#[tokio::test]
async fn a_grpc_agent_over_tls_is_verified_against_the_agents_ca() {
    let (ca, _dir, ca_file) = agents_ca("grpc-agent");
    let tls = agent_tls(&ca.server("agent", 1), &[b"h2"], None);
    let agent = crate::support::mock_grpc::MockGrpcAgent::start_tls(tls).await;
    let send = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    let v10 = [("a2a-version", "1.0")];
    let config = gateway_config(&agent.url(), "", &ca_line(&ca_file));
    let gw = TestGateway::from_toml(&config).await;
    let reply = client::post_json(&gw.url(), send, &v10).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v = reply.json();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    assert_eq!(agent.calls().len(), 1, "over TLS, h2 by ALPN");

    // Without the agents' CA: Mozilla's roots do not know it.
    let gw = TestGateway::from_toml(&gateway_config(&agent.url(), "", "")).await;
    let reply = client::post_json(&gw.url(), send, &v10).await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    assert_eq!(agent.calls().len(), 1, "nothing reached it");
}
