//! The Agent Cards the gateway serves.
//!
//! - `GET /.well-known/agent-card.json` (and `agent.json`): the published
//!   aggregate of the fleet, every URL pointing at the gateway; with one
//!   upstream and no `[card]` identity it keeps that agent's identity (the
//!   sidecar case); the agents' security declarations are carried.
//! - `GET /agents/{name}/.well-known/agent-card.json` (and `agent.json`): that
//!   agent's own card with its JSON-RPC URLs pointed at
//!   `/agents/{name}`, other bindings and signatures dropped, everything else
//!   as the agent wrote it; the error of the last fetch when there is no card.
//! - ETag, `Cache-Control` and `304` on both; URLs from the Host header or
//!   `[server] public_url`; the authenticated extended card.
//!
//! Cards are fetched when the gateway starts (and on an interval, set to an
//! hour here so only `refresh_cards()` refreshes them during a test).
use crate::support::calls::rpc;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::client::{self, Proto, Reply};
use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const UPSTREAM: &str = "agent";
const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];
const EXTENDED_PATHS: [&str; 2] = ["/agent/authenticatedExtendedCard", "/extendedAgentCard"];
const PUBLIC_URL: &str = "https://agents.example.com/a2a";

const INVALID_REQUEST: i64 = -32600;
const EXTENDED_NOT_CONFIGURED: i64 = -32007;
const UNAVAILABLE: i64 = -32050;
const TIMEOUT: i64 = -32051;
const BAD_RESPONSE: i64 = -32052;

/// Start-up card fetches wait at most a second; the background refresh is
/// too far away to run during a test, so fetch counts are exact.
const QUIET_REFRESH: &str = "[card_refresh]\ntimeout = \"1s\"\ninterval = \"1h\"\n";

/// The `[card]` defaults (config/file.rs) the published card falls back to.
const DEFAULT_NAME: &str = "A2A Gateway";
const DEFAULT_DESCRIPTION: &str = "One address for a fleet of A2A agents.";

// ------------------------------------------------------------- helpers

/// A gateway in front of `upstreams`; `server` is extra `[server]` lines,
/// `extra` more TOML (e.g. a `[card]` section).
async fn start_with(upstreams: &[(&str, &str)], server: &str, extra: &str) -> TestGateway {
    let mut text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n\
         shutdown_grace = \"2s\"\n{server}\n{QUIET_REFRESH}{extra}\n"
    );
    for (name, url) in upstreams {
        text.push_str(&format!(
            "[[upstreams]]\nname = \"{name}\"\nurl = \"{url}\"\n"
        ));
    }
    TestGateway::from_toml(&text).await
}

async fn start(upstreams: &[(&str, &str)], extra: &str) -> TestGateway {
    start_with(upstreams, "", extra).await
}

async fn gateway_for(upstream_url: &str) -> TestGateway {
    start(&[(UPSTREAM, upstream_url)], "").await
}

/// `path` on the gateway, e.g. `http://127.0.0.1:PORT/.well-known/agent.json`.
fn at(gw: &TestGateway, path: &str) -> String {
    format!("http://{}{path}", gw.addr())
}

/// The per-agent card path of `name`.
fn agent_path(name: &str, card_path: &str) -> String {
    format!("/agents/{name}{card_path}")
}

/// The per-agent JSON-RPC URL the gateway publishes when reached at its
/// bound address.
fn agent_url(gw: &TestGateway, name: &str) -> String {
    format!("http://{}/agents/{name}", gw.addr())
}

/// GETs `path` and checks it is a 200 JSON answer.
async fn get_ok(gw: &TestGateway, path: &str, headers: &[(&str, &str)]) -> Reply {
    let reply = client::get(&at(gw, path), headers).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{path}"
    );
    reply
}

async fn get_card(gw: &TestGateway, path: &str, headers: &[(&str, &str)]) -> Value {
    get_ok(gw, path, headers).await.json()
}

async fn head(gw: &TestGateway, path: &str) -> Reply {
    let url = at(gw, path);
    client::request(Method::HEAD, &url, Bytes::new(), &[], Proto::Http1).await
}

fn etag(reply: &Reply) -> String {
    reply
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag: {:?}", reply.headers))
        .to_string()
}

fn skill_ids(card: &Value) -> Vec<String> {
    card["skills"]
        .as_array()
        .unwrap_or_else(|| panic!("skills is not an array: {card}"))
        .iter()
        .map(|s| s["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The mock's default card as the per-agent path must serve it at
/// `endpoint`: written out in full so any other change shows up.
fn default_card_served_at(mock: &MockAgent, endpoint: &str) -> Value {
    served_at(mock.card().expect("mock has a card"), endpoint)
}

/// A card with its interfaces replaced by what the gateway serves for
/// every agent: JSON-RPC and HTTP+JSON, 1.0 and 0.3, at `endpoint`, in
/// the 1.0 and the 0.3 fields (the version bridge serves them all whatever
/// the agent speaks).
fn served_at(mut card: Value, endpoint: &str) -> Value {
    card["protocolVersion"] = json!("0.3.0");
    card["url"] = json!(endpoint);
    card["preferredTransport"] = json!("JSONRPC");
    card["additionalInterfaces"] = additional_at(endpoint);
    card["supportedInterfaces"] = supported_at(endpoint);
    card
}

/// The gateway's `host:port` for gRPC at `endpoint`, and for an agent's
/// own card the tenant naming it.
fn grpc_of(endpoint: &str) -> (String, Option<String>) {
    let uri: http::Uri = endpoint.parse().unwrap();
    let https = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let path = uri.path().trim_matches('/');
    let tenant = path.find("agents/").map(|at| path[at..].to_string());
    (format!("{}:{port}", uri.host().unwrap()), tenant)
}

/// The 0.3 interfaces a card at `endpoint` offers: JSON-RPC and HTTP+JSON,
/// and gRPC at the root only (0.3 has no tenant to name an agent).
fn additional_at(endpoint: &str) -> Value {
    let mut list = vec![
        json!({"url": endpoint, "transport": "JSONRPC"}),
        json!({"url": endpoint, "transport": "HTTP+JSON"}),
    ];
    if let (grpc, None) = grpc_of(endpoint) {
        list.push(json!({"url": grpc, "transport": "GRPC"}));
    }
    Value::Array(list)
}

/// The 1.0 interfaces a card at `endpoint` offers: JSON-RPC 1.0 and 0.3,
/// HTTP+JSON 1.0, gRPC 1.0 (with the agent's tenant on its own card), and
/// gRPC 0.3 at the root.
fn supported_at(endpoint: &str) -> Value {
    let (grpc, tenant) = grpc_of(endpoint);
    let mut grpc_10 = json!({"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "1.0"});
    let mut list = vec![
        json!({"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}),
        json!({"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}),
        json!({"url": endpoint, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}),
    ];
    match tenant {
        Some(tenant) => {
            grpc_10["tenant"] = json!(tenant);
            list.push(grpc_10);
        }
        None => {
            list.push(grpc_10);
            list.push(json!({"url": grpc, "protocolBinding": "GRPC", "protocolVersion": "0.3"}));
        }
    }
    Value::Array(list)
}

/// The interface fields of every published card at `endpoint`.
fn assert_points_at(card: &Value, endpoint: &str) {
    assert_eq!(card["url"], endpoint, "{card}");
    assert_eq!(card["preferredTransport"], "JSONRPC", "{card}");
    assert_eq!(card["protocolVersion"], "0.3.0", "{card}");
    assert_eq!(
        card["additionalInterfaces"],
        additional_at(endpoint),
        "{card}"
    );
    assert_eq!(
        card["supportedInterfaces"],
        supported_at(endpoint),
        "{card}"
    );
}

/// A JSON-RPC error answer with HTTP `status`, `code`, a message and `id`.
fn assert_rpc_error(reply: &Reply, status: StatusCode, code: i64, id: Value) -> Value {
    assert_eq!(reply.status, status, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let v = reply.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].is_string(), "{v}");
    v
}

/// The per-agent card's answer when the fetch failed: 502/504, the class of
/// the failure, the upstream named, a null id (a GET has none).
fn assert_upstream_error(reply: &Reply, status: StatusCode, code: i64) -> Value {
    let v = assert_rpc_error(reply, status, code, Value::Null);
    assert_eq!(v["error"]["data"]["upstream"], UPSTREAM, "{v}");
    v
}

/// Paths of the card fetches (GETs) the mock received.
fn card_gets(mock: &MockAgent) -> Vec<String> {
    mock.all_requests()
        .iter()
        .filter(|r| r.method == Method::GET)
        .map(|r| r.path_and_query.clone())
        .collect()
}

fn v03_send(id: u64) -> String {
    let params = json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
                                    "parts": [{"kind": "text", "text": "hi"}]}});
    rpc(id, "message/send", params)
}

/// POSTs `message/send` to `path` and checks the mock's echo came back.
async fn send_ok(gw: &TestGateway, path: &str, id: u64) {
    let reply = client::post_json(&at(gw, path), v03_send(id), &[]).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "POST {path}: {}",
        reply.text()
    );
    let v = reply.json();
    assert_eq!(v["id"], id, "POST {path}: {v}");
    assert_eq!(
        v["result"]["artifacts"][0]["parts"][0]["text"], "echo: hi",
        "POST {path}: {v}"
    );
}

async fn readyz(gw: &TestGateway) -> (StatusCode, Value) {
    let reply = client::get(&format!("{}/readyz", gw.admin_url()), &[]).await;
    (reply.status, reply.json())
}

/// An address nothing listens on any more.
/// A raw HTTP/1.1 GET (one request, `connection: close`) with the given
/// extra header lines; returns the status line and the body.
async fn raw_get(gw: &TestGateway, path: &str, header_lines: &str) -> (String, String) {
    let request =
        format!("GET {path} HTTP/1.1\r\n{header_lines}connection: close\r\n\r\n").into_bytes();
    let raw = client::raw_http(gw.addr(), &request, Duration::from_secs(5)).await;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, body.to_string())
}

/// A minimal HTTP/1.1 upstream serving fixed answers per path (404
/// elsewhere), for cards the mock agent cannot produce: one well-known path
/// only, or a body that is not JSON. Records the paths it was asked for.
struct StaticSite {
    addr: SocketAddr,
    paths: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

#[derive(Clone)]
struct Page {
    path: &'static str,
    status: u16,
    content_type: &'static str,
    body: Bytes,
}

impl StaticSite {
    async fn start(pages: Vec<Page>) -> StaticSite {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let paths = Arc::new(Mutex::new(Vec::new()));
        let seen = paths.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(Self::answer(stream, pages.clone(), seen.clone()));
            }
        });
        StaticSite { addr, paths, task }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }

    /// One request per connection (answers `connection: close`).
    async fn answer(mut stream: TcpStream, pages: Vec<Page>, seen: Arc<Mutex<Vec<String>>>) {
        let mut head = Vec::new();
        let mut chunk = [0u8; 1024];
        let read = async {
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .is_err()
        {
            return;
        }
        let text = String::from_utf8_lossy(&head);
        let path = text.split(' ').nth(1).unwrap_or("").to_string();
        seen.lock().unwrap().push(path.clone());
        let page = pages.iter().find(|p| p.path == path);
        let (status, content_type, body) = page.map_or((404, "text/plain", Bytes::new()), |p| {
            (p.status, p.content_type, p.body.clone())
        });
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.write_all(&body).await;
        let _ = stream.shutdown().await;
    }
}

impl Drop for StaticSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ------------------------------------------------- per-agent card: rewrite

#[tokio::test]
async fn per_agent_card_is_the_agents_own_pointed_at_its_path() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let expected = default_card_served_at(&mock, &agent_url(&gw, UPSTREAM));

    for path in CARD_PATHS {
        let path = agent_path(UPSTREAM, path);
        let reply = get_ok(&gw, &path, &[]).await;
        assert_eq!(reply.json(), expected, "{path}");
        assert_eq!(
            reply.header("cache-control"),
            Some("public, max-age=60"),
            "{path}: the default max-age"
        );
        assert!(reply.header("etag").is_some(), "{path}");
    }
    // Served from the card fetched at start-up: no fetch per request.
    assert_eq!(card_gets(&mock), [CARD_PATHS[0]]);
}

#[tokio::test]
async fn per_agent_card_drops_signatures_and_keeps_everything_else() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = mock.card().expect("mock has a card");
    card["signatures"] = json!([{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln"}]);
    card["provider"] = json!({"organization": "Example", "url": "https://provider.example"});
    card["documentationUrl"] = json!("https://docs.example/agent");
    card["iconUrl"] = json!("https://docs.example/icon.png");
    card["securitySchemes"] = json!({"key": {"type": "apiKey", "in": "header", "name": "X-Key"}});
    card["security"] = json!([{"key": []}]);
    card["supportsAuthenticatedExtendedCard"] = json!(false);
    card["x-extra"] = json!({"nested": [1, 2, {"url": "http://keep.me/"}]});
    mock.set_card(Some(card));
    let gw = gateway_for(&mock.url()).await;

    let served = get_card(&gw, &agent_path(UPSTREAM, CARD_PATHS[1]), &[]).await;
    assert!(served.get("signatures").is_none(), "{served}");
    let mut expected = default_card_served_at(&mock, &agent_url(&gw, UPSTREAM));
    expected
        .as_object_mut()
        .expect("card object")
        .remove("signatures");
    assert_eq!(served, expected);
    assert_eq!(served["provider"]["url"], "https://provider.example");
    assert_eq!(served["x-extra"]["nested"][2]["url"], "http://keep.me/");
}

#[tokio::test]
async fn per_agent_1_0_only_card_is_offered_in_1_0_and_0_3_keeping_its_tenant() {
    let mock = MockAgent::start(Mode::Normal).await;
    let up = mock.url();
    let card = json!({
        "name": "Only One",
        "description": "1.0 fields only",
        "version": "2.1.0",
        "supportedInterfaces": [
            {"url": format!("{up}/a2a/v1"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": format!("{up}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t-1"},
            {"url": format!("{up}:50051"), "protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "extendedAgentCard": false},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]
    });
    mock.set_card(Some(card.clone()));
    let gw = gateway_for(&up).await;

    let served = get_card(&gw, &agent_path(UPSTREAM, CARD_PATHS[0]), &[]).await;
    let endpoint = agent_url(&gw, UPSTREAM);
    let mut expected = served_at(card, &endpoint);
    expected["supportedInterfaces"][0]["tenant"] = json!("t-1");
    expected["supportedInterfaces"][2]["tenant"] = json!("t-1");
    let tenant = format!(
        "{}/t-1",
        expected["supportedInterfaces"][3]["tenant"]
            .as_str()
            .unwrap()
    );
    expected["supportedInterfaces"][3]["tenant"] = json!(tenant);
    assert_eq!(served, expected);
    assert_eq!(served["url"], endpoint, "0.3 clients are offered it too");
}

#[tokio::test]
async fn per_agent_card_etag_304_and_head() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let path = agent_path(UPSTREAM, CARD_PATHS[0]);

    let first = get_ok(&gw, &path, &[]).await;
    let tag = etag(&first);
    assert!(
        tag.starts_with('"') && tag.ends_with('"'),
        "a strong tag: {tag}"
    );
    let again = get_ok(&gw, &path, &[]).await;
    assert_eq!(etag(&again), tag, "same card, same tag");
    assert_eq!(again.body, first.body);

    for condition in [tag.clone(), format!("\"other\", W/{tag}"), "*".to_string()] {
        let reply = client::get(&at(&gw, &path), &[("if-none-match", &condition)]).await;
        assert_eq!(reply.status, StatusCode::NOT_MODIFIED, "{condition}");
        assert!(reply.body.is_empty(), "{condition}: {}", reply.text());
        assert_eq!(reply.header("etag"), Some(tag.as_str()));
        assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    }
    let other = client::get(&at(&gw, &path), &[("if-none-match", "\"other\"")]).await;
    assert_eq!(other.status, StatusCode::OK);
    assert_eq!(other.body, first.body);

    // The same card at agent.json is the same bytes, so the same tag.
    let legacy = get_ok(&gw, &agent_path(UPSTREAM, CARD_PATHS[1]), &[]).await;
    assert_eq!(etag(&legacy), tag);

    for path in CARD_PATHS.map(|p| agent_path(UPSTREAM, p)) {
        let reply = head(&gw, &path).await;
        assert_eq!(reply.status, StatusCode::OK, "HEAD {path}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.header("etag"), Some(tag.as_str()), "HEAD {path}");
        assert!(reply.body.is_empty(), "HEAD {path}: {}", reply.text());
    }
}

#[tokio::test]
async fn unknown_agent_name_is_a_404() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;

    for path in [
        agent_path("nope", CARD_PATHS[0]),
        agent_path("nope", CARD_PATHS[1]),
        agent_path("", CARD_PATHS[0]),
    ] {
        let reply = client::get(&at(&gw, &path), &[]).await;
        assert_rpc_error(&reply, StatusCode::NOT_FOUND, INVALID_REQUEST, Value::Null);
    }
    // An HTTP+JSON route answers in its binding: a google.rpc.Status.
    let reply = client::get(&at(&gw, "/agents/nope/extendedAgentCard"), &[]).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.text());
    let status = reply.json();
    assert_eq!(status["error"]["status"], "NOT_FOUND", "{status}");
    assert_eq!(
        status["error"]["details"][0]["reason"], "NOT_FOUND",
        "{status}"
    );
    let reply = client::post_json(&at(&gw, "/agents/nope"), v03_send(1), &[]).await;
    assert_rpc_error(&reply, StatusCode::NOT_FOUND, INVALID_REQUEST, Value::Null);
    assert_eq!(mock.request_count(), 0, "nothing reached the agent");
}

// ------------------------------------------ per-agent card: fetch failures

#[tokio::test]
async fn falls_back_to_agent_json_when_agent_card_json_is_missing() {
    let card = json!({"name": "Old", "version": "0.1", "url": "http://old.example/rpc",
                      "capabilities": {"streaming": false}, "skills": []});
    let site = StaticSite::start(vec![Page {
        path: CARD_PATHS[1],
        status: 200,
        content_type: "application/json",
        body: Bytes::from(card.to_string()),
    }])
    .await;
    let gw = gateway_for(&site.url()).await;
    assert_eq!(
        site.paths(),
        CARD_PATHS,
        "agent-card.json is tried first, agent.json after its 404"
    );

    for path in CARD_PATHS {
        let served = get_card(&gw, &agent_path(UPSTREAM, path), &[]).await;
        let expected = served_at(card.clone(), &agent_url(&gw, UPSTREAM));
        assert_eq!(served, expected, "{path}");
    }
    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root["name"], "Old", "{root}");
    assert_points_at(&root, &gw.url());

    // A refresh asks the URL that served the card, and nothing else.
    gw.running.refresh_cards().await;
    assert_eq!(site.paths(), [CARD_PATHS[0], CARD_PATHS[1], CARD_PATHS[1]]);
}

#[tokio::test]
async fn no_card_at_either_path_is_a_502_bad_response() {
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_card(None);
    let gw = gateway_for(&mock.url()).await;

    for path in CARD_PATHS {
        let reply = client::get(&at(&gw, &agent_path(UPSTREAM, path)), &[]).await;
        assert_upstream_error(&reply, StatusCode::BAD_GATEWAY, BAD_RESPONSE);
    }
    assert_eq!(card_gets(&mock), CARD_PATHS, "both paths were tried");
}

#[tokio::test]
async fn card_that_is_not_a_json_object_is_a_502_bad_response() {
    for not_an_object in [json!("a string"), json!([1, 2]), json!(null)] {
        let mock = MockAgent::start(Mode::Normal).await;
        mock.set_card(Some(not_an_object.clone()));
        let gw = gateway_for(&mock.url()).await;
        let reply = client::get(&at(&gw, &agent_path(UPSTREAM, CARD_PATHS[0])), &[]).await;
        let v = assert_upstream_error(&reply, StatusCode::BAD_GATEWAY, BAD_RESPONSE);
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("not a JSON object"),
            "{not_an_object}: {v}"
        );
    }
}

#[tokio::test]
async fn card_that_is_not_json_is_a_502_bad_response() {
    let site = StaticSite::start(vec![Page {
        path: CARD_PATHS[0],
        status: 200,
        content_type: "text/html",
        body: Bytes::from_static(b"<html><body>Welcome</body></html>"),
    }])
    .await;
    let gw = gateway_for(&site.url()).await;
    let reply = client::get(&at(&gw, &agent_path(UPSTREAM, CARD_PATHS[0])), &[]).await;
    let v = assert_upstream_error(&reply, StatusCode::BAD_GATEWAY, BAD_RESPONSE);
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not JSON"), "{v}");
    assert_eq!(
        site.paths(),
        [CARD_PATHS[0]],
        "a 200 is no 404: no fallback"
    );
}

#[tokio::test]
async fn card_answered_with_500_is_a_502_bad_response_without_fallback() {
    let site = StaticSite::start(vec![Page {
        path: CARD_PATHS[0],
        status: 500,
        content_type: "application/json",
        body: Bytes::from_static(b"{\"name\":\"x\"}"),
    }])
    .await;
    let gw = gateway_for(&site.url()).await;
    let reply = client::get(&at(&gw, &agent_path(UPSTREAM, CARD_PATHS[0])), &[]).await;
    let v = assert_upstream_error(&reply, StatusCode::BAD_GATEWAY, BAD_RESPONSE);
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("500"), "{v}");
    assert_eq!(site.paths(), [CARD_PATHS[0]], "an error status is no 404");
}

#[tokio::test]
async fn unreachable_upstream_is_a_502_unavailable() {
    let refused = ClosedPort::new();
    let gw = gateway_for(&refused.url()).await;

    for path in CARD_PATHS {
        let reply = client::get(&at(&gw, &agent_path(UPSTREAM, path)), &[]).await;
        assert_upstream_error(&reply, StatusCode::BAD_GATEWAY, UNAVAILABLE);
    }
}

#[tokio::test]
async fn card_fetch_timeout_is_a_504() {
    let mock = MockAgent::start(Mode::Hang).await;
    let gw = gateway_for(&mock.url()).await; // waits the 1s fetch timeout

    let reply = client::get(&at(&gw, &agent_path(UPSTREAM, CARD_PATHS[0])), &[]).await;
    assert_upstream_error(&reply, StatusCode::GATEWAY_TIMEOUT, TIMEOUT);
    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root["skills"], json!([]), "{root}");
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_last_good_card() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let path = agent_path(UPSTREAM, CARD_PATHS[0]);
    let before = get_card(&gw, &path, &[]).await;

    mock.set_card(None);
    gw.running.refresh_cards().await;

    assert_eq!(get_card(&gw, &path, &[]).await, before);
    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(skill_ids(&root), ["echo"]);
    let (status, ready) = readyz(&gw).await;
    assert_eq!(status, StatusCode::OK, "{ready}");
    let entry = &ready["upstreams"][UPSTREAM];
    assert_eq!(entry["card"], "fresh", "{ready}");
    assert!(
        entry["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("404")),
        "the failed refresh is reported: {ready}"
    );
}

// ------------------------------------------------- per-agent JSON-RPC path

#[tokio::test]
async fn two_agents_each_have_their_own_card_and_path() {
    let alpha = MockAgent::start(Mode::Normal).await;
    let beta = MockAgent::start(Mode::Normal).await;
    for (mock, name) in [(&alpha, "Alpha"), (&beta, "Beta")] {
        let mut card = mock.card().expect("mock has a card");
        card["name"] = json!(name);
        mock.set_card(Some(card));
    }
    let gw = start(&[("a", &alpha.url()), ("b", &beta.url())], "").await;

    for (mock, name) in [(&alpha, "a"), (&beta, "b")] {
        for path in CARD_PATHS {
            let served = get_card(&gw, &agent_path(name, path), &[]).await;
            assert_eq!(
                served,
                default_card_served_at(mock, &agent_url(&gw, name)),
                "{name}{path}"
            );
        }
    }

    // The root card is the fleet's: the gateway's identity, both agents'
    // skills, the shared id published once per owner.
    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root["name"], DEFAULT_NAME, "{root}");
    assert_eq!(skill_ids(&root), ["a/echo", "b/echo"]);
    assert_points_at(&root, &gw.url());

    send_ok(&gw, "/agents/a", 1).await;
    assert_eq!((alpha.request_count(), beta.request_count()), (1, 0));
    send_ok(&gw, "/agents/b", 2).await;
    send_ok(&gw, "/agents/b/", 3).await;
    assert_eq!((alpha.request_count(), beta.request_count()), (1, 2));
}

#[tokio::test]
async fn one_dead_agent_leaves_the_other_published() {
    let alive = MockAgent::start(Mode::Normal).await;
    let refused = ClosedPort::new();
    let dead = refused.url();
    let gw = start(&[("alive", &alive.url()), ("dead", &dead)], "").await;

    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(skill_ids(&root), ["echo"], "{root}");
    assert_eq!(root["name"], DEFAULT_NAME, "two upstreams: no inheritance");

    let reply = client::get(&at(&gw, &agent_path("dead", CARD_PATHS[0])), &[]).await;
    let v = assert_rpc_error(&reply, StatusCode::BAD_GATEWAY, UNAVAILABLE, Value::Null);
    assert_eq!(v["error"]["data"]["upstream"], "dead");
    get_ok(&gw, &agent_path("alive", CARD_PATHS[0]), &[]).await;

    let (status, ready) = readyz(&gw).await;
    assert_eq!(status, StatusCode::OK, "ready_when = any: {ready}");
    assert_eq!(ready["upstreams"]["alive"]["card"], "fresh", "{ready}");
    assert_eq!(ready["upstreams"]["dead"]["card"], "missing", "{ready}");
}

// ------------------------------------------------------- root card: sidecar

/// A rich 0.3 card with 1.0 extras, as a sidecar's agent might publish.
fn weather_card(up: &str) -> Value {
    json!({
        "name": "Weather Agent",
        "description": "Forecasts and alerts",
        "version": "3.2.1",
        "protocolVersion": "0.3.0",
        "url": format!("{up}/"),
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": format!("{up}/"), "transport": "JSONRPC"},
            {"url": format!("{up}/rest"), "transport": "HTTP+JSON"}
        ],
        "provider": {"organization": "Weather Co", "url": "https://weather.example"},
        "documentationUrl": "https://weather.example/docs",
        "iconUrl": "https://weather.example/icon.png",
        "capabilities": {"streaming": true, "pushNotifications": false},
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
        "security": [{"bearer": []}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {"id": "forecast", "name": "Forecast", "description": "Weather for a place",
             "tags": ["weather"], "examples": ["Weather in Paris?"]},
            {"id": "alerts", "name": "Alerts", "description": "Severe weather alerts",
             "tags": ["weather", "alerts"]}
        ],
        "signatures": [{"protected": "e30", "signature": "c2ln"}],
        "x-internal": {"team": "wx"}
    })
}

/// What the gateway publishes for `weather_card` at `endpoint`, with the
/// identity fields left to the caller.
fn weather_published(agent: &Value, endpoint: &str) -> Value {
    json!({
        "protocolVersion": "0.3.0",
        "url": endpoint,
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": additional_at(endpoint),
        "supportedInterfaces": supported_at(endpoint),
        "supportsAuthenticatedExtendedCard": false,
        "capabilities": {"streaming": true, "pushNotifications": false,
                         "stateTransitionHistory": false, "extendedAgentCard": false},
        "securitySchemes": agent["securitySchemes"],
        "security": agent["security"],
        "defaultInputModes": agent["defaultInputModes"],
        "defaultOutputModes": agent["defaultOutputModes"],
        "skills": agent["skills"]
    })
}

#[tokio::test]
async fn one_upstream_root_card_keeps_the_agents_identity_and_skills() {
    let mock = MockAgent::start(Mode::Normal).await;
    let agent = weather_card(&mock.url());
    mock.set_card(Some(agent.clone()));
    let gw = gateway_for(&mock.url()).await;

    let mut expected = weather_published(&agent, &gw.url());
    for key in [
        "name",
        "description",
        "version",
        "provider",
        "documentationUrl",
        "iconUrl",
    ] {
        expected[key] = agent[key].clone();
    }
    for path in CARD_PATHS {
        let root = get_card(&gw, path, &[]).await;
        assert_eq!(root, expected, "{path}");
        assert!(root.get("signatures").is_none(), "{path}");
        assert!(root.get("x-internal").is_none(), "{path}");
    }
}

#[tokio::test]
async fn configured_identity_replaces_the_agents() {
    let mock = MockAgent::start(Mode::Normal).await;
    let agent = weather_card(&mock.url());
    mock.set_card(Some(agent.clone()));
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nname = \"Fleet\"\n").await;

    // Setting any identity field takes the whole identity from `[card]`
    // (defaults for the rest); skills, modes and security stay the agent's.
    let mut expected = weather_published(&agent, &gw.url());
    expected["name"] = json!("Fleet");
    expected["description"] = json!(DEFAULT_DESCRIPTION);
    expected["version"] = json!(env!("CARGO_PKG_VERSION"));
    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root, expected);
}

#[tokio::test]
async fn inherited_identity_keeps_the_required_fields() {
    // A sloppy agent: no description, no version (both required card fields).
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_card(Some(json!({
        "name": "Terse",
        "capabilities": {},
        "skills": [{"id": "t", "name": "T", "description": "d", "tags": []}]
    })));
    let gw = gateway_for(&mock.url()).await;

    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root["name"], "Terse", "{root}");
    assert!(
        root["description"].is_string(),
        "the published card must stay valid: description is required: {root}"
    );
    assert!(
        root["version"].as_str().is_some_and(|v| !v.is_empty()),
        "the published card must stay valid: version is required: {root}"
    );
}

#[tokio::test]
async fn dead_single_upstream_root_card_is_up_and_honest() {
    let refused = ClosedPort::new();
    let gw = gateway_for(&refused.url()).await;

    let root = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(root["skills"], json!([]), "{root}");
    assert_eq!(
        root["name"], DEFAULT_NAME,
        "no card to inherit from: {root}"
    );
    assert_eq!(root["capabilities"]["streaming"], false, "{root}");
    assert_eq!(root["defaultInputModes"], json!(["text/plain"]), "{root}");
    assert_points_at(&root, &gw.url());

    let (status, ready) = readyz(&gw).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    let entry = &ready["upstreams"][UPSTREAM];
    assert_eq!(entry["card"], "missing", "{ready}");
    assert!(
        entry["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("unavailable")),
        "{ready}"
    );
}

// ------------------------------------------- root card: caching and changes

#[tokio::test]
async fn root_card_etag_304_and_cache_control_follow_the_fleet() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start(
        &[(UPSTREAM, &mock.url())],
        "[card]\ncache_max_age = \"5m\"\n",
    )
    .await;
    let root = CARD_PATHS[0];

    let first = get_ok(&gw, root, &[]).await;
    assert_eq!(first.header("cache-control"), Some("public, max-age=300"));
    let old_tag = etag(&first);
    let card = first.json();
    assert_eq!(skill_ids(&card), ["echo"]);
    assert_eq!(
        card["name"], "Mock Agent",
        "cache_max_age is not an identity field: the agent's identity stays"
    );
    // The per-agent card follows the same max-age.
    let per_agent = get_ok(&gw, &agent_path(UPSTREAM, root), &[]).await;
    assert_eq!(
        per_agent.header("cache-control"),
        Some("public, max-age=300")
    );

    let not_modified = client::get(&at(&gw, root), &[("if-none-match", &old_tag)]).await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    assert!(not_modified.body.is_empty(), "{}", not_modified.text());
    assert_eq!(not_modified.header("etag"), Some(old_tag.as_str()));
    assert_eq!(
        not_modified.header("cache-control"),
        Some("public, max-age=300")
    );
    let legacy = client::get(&at(&gw, CARD_PATHS[1]), &[("if-none-match", &old_tag)]).await;
    assert_eq!(
        legacy.status,
        StatusCode::NOT_MODIFIED,
        "same card at agent.json"
    );

    let reply = head(&gw, root).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("etag"), Some(old_tag.as_str()));
    assert!(reply.body.is_empty(), "HEAD: {}", reply.text());

    // A refresh that finds the same card keeps the tag.
    gw.running.refresh_cards().await;
    let same = get_ok(&gw, root, &[]).await;
    assert_eq!(etag(&same), old_tag);
    assert_eq!(same.body, first.body);

    // A new skill upstream: new card, new tag; the old tag is no longer fresh.
    let mut changed = mock.card().expect("mock has a card");
    changed["skills"].as_array_mut().expect("skills").push(
        json!({"id": "translate", "name": "Translate", "description": "Translates",
                     "tags": ["language"]}),
    );
    mock.set_card(Some(changed));
    gw.running.refresh_cards().await;

    let after = get_ok(&gw, root, &[]).await;
    let new_tag = etag(&after);
    assert_ne!(new_tag, old_tag);
    assert_eq!(skill_ids(&after.json()), ["echo", "translate"]);
    let stale = client::get(&at(&gw, root), &[("if-none-match", &old_tag)]).await;
    assert_eq!(stale.status, StatusCode::OK);
    assert_eq!(stale.body, after.body);
    let fresh = client::get(&at(&gw, root), &[("if-none-match", &new_tag)]).await;
    assert_eq!(fresh.status, StatusCode::NOT_MODIFIED);

    // The per-agent card changed too.
    let per_agent_after = get_ok(&gw, &agent_path(UPSTREAM, root), &[]).await;
    assert_ne!(etag(&per_agent_after), etag(&per_agent));
    assert_eq!(skill_ids(&per_agent_after.json()), ["echo", "translate"]);
}

// --------------------------------------------------------- published URLs

#[tokio::test]
async fn card_urls_follow_the_host_header_without_public_url() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;

    let mut tags = Vec::new();
    // Alternate hosts: each answer has its own URLs (no cross-host caching).
    for host in [
        "gateway.internal:8443",
        "other.example",
        "gateway.internal:8443",
    ] {
        let reply = get_ok(&gw, CARD_PATHS[0], &[("host", host)]).await;
        assert_points_at(&reply.json(), &format!("http://{host}/"));
        tags.push(etag(&reply));

        let path = agent_path(UPSTREAM, CARD_PATHS[0]);
        let per_agent = get_card(&gw, &path, &[("host", host)]).await;
        let endpoint = format!("http://{host}/agents/{UPSTREAM}");
        assert_eq!(
            per_agent,
            default_card_served_at(&mock, &endpoint),
            "{host}"
        );
    }
    assert_ne!(tags[0], tags[1], "other URLs, other bytes, other tag");
    assert_eq!(tags[0], tags[2]);
}

#[tokio::test]
async fn card_without_host_header_names_the_address_actually_listened_on() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let request = b"GET /.well-known/agent-card.json HTTP/1.0\r\n\r\n";

    let raw = client::raw_http(gw.addr(), request, Duration::from_secs(5)).await;
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    let card: Value = serde_json::from_str(body).expect("card JSON");
    assert_points_at(&card, &gw.url());
}

#[tokio::test]
async fn a_malformed_host_header_is_not_published() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;

    let (status, body) = raw_get(&gw, CARD_PATHS[0], "host: evil.example/phish?x=\r\n").await;
    assert!(status.contains(" 200 "), "{status}");
    let card: Value = serde_json::from_str(&body).expect("card JSON");
    assert_points_at(&card, &gw.url());

    let path = agent_path(UPSTREAM, CARD_PATHS[0]);
    let (status, body) = raw_get(&gw, &path, "host: evil.example/phish?x=\r\n").await;
    assert!(status.contains(" 200 "), "{status}");
    let card: Value = serde_json::from_str(&body).expect("card JSON");
    assert_eq!(card["url"], agent_url(&gw, UPSTREAM));
}

#[tokio::test]
async fn public_url_with_a_path_sets_every_card_url_and_serves_its_paths() {
    let mock = MockAgent::start(Mode::Normal).await;
    let server = format!("public_url = \"{PUBLIC_URL}\"");
    let gw = start_with(&[(UPSTREAM, &mock.url())], &server, "").await;
    let agent_endpoint = format!("{PUBLIC_URL}/agents/{UPSTREAM}");
    assert_eq!(
        agent_endpoint,
        "https://agents.example.com/a2a/agents/agent"
    );

    // The Host header no longer matters; an ingress may or may not strip
    // the prefix, so both forms of every path are served.
    let host = [("host", "ignored.example:1")];
    for path in CARD_PATHS {
        for prefix in ["", "/a2a"] {
            let root = get_card(&gw, &format!("{prefix}{path}"), &host).await;
            assert_points_at(&root, PUBLIC_URL);
            let per_agent = format!("{prefix}{}", agent_path(UPSTREAM, path));
            let card = get_card(&gw, &per_agent, &host).await;
            assert_eq!(
                card,
                default_card_served_at(&mock, &agent_endpoint),
                "{per_agent}"
            );
        }
    }

    let paths = [
        "/a2a",
        "/a2a/",
        "/",
        "/a2a/agents/agent",
        "/a2a/agents/agent/",
        "/agents/agent",
    ];
    for (i, path) in paths.into_iter().enumerate() {
        send_ok(&gw, path, i as u64).await;
    }
    assert_eq!(mock.request_count(), paths.len());
}

// ------------------------------------------------------------ extended card

/// `method` as a JSON-RPC call to `path`, with `headers`.
async fn call(
    gw: &TestGateway,
    path: &str,
    id: u64,
    method: &str,
    headers: &[(&str, &str)],
) -> Reply {
    client::post_json(&at(gw, path), rpc(id, method, json!({})), headers).await
}

/// The JSON-RPC result of a successful call (HTTP 200, id mirrored).
fn result_of(reply: &Reply, id: u64) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["id"], id, "{v}");
    assert!(v.get("error").is_none(), "{v}");
    v["result"].clone()
}

#[tokio::test]
async fn extended_card_is_the_aggregate_when_no_agent_has_one() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nextended_card = true\n").await;

    let published = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(published["supportsAuthenticatedExtendedCard"], true);
    assert_eq!(published["capabilities"]["extendedAgentCard"], true);
    assert_eq!(published["name"], "Mock Agent", "{published}");

    for (id, method) in [
        (1, "agent/getAuthenticatedExtendedCard"),
        (2, "GetExtendedAgentCard"),
    ] {
        let reply = call(&gw, "/", id, method, &[]).await;
        let card = result_of(&reply, id);
        assert_eq!(card, published, "{method}: same fleet, same card");
        assert_points_at(&card, &gw.url());
    }
    for path in EXTENDED_PATHS {
        let reply = get_ok(&gw, path, &[]).await;
        assert_eq!(reply.json(), published, "GET {path}");
        assert!(
            !reply
                .header("cache-control")
                .is_some_and(|c| c.contains("public")),
            "GET {path}: a per-caller card must not be publicly cacheable"
        );
    }
    assert_eq!(
        mock.request_count(),
        0,
        "the agent's card offers no extended card: it is not asked"
    );
}

#[tokio::test]
async fn extended_card_uses_the_agents_own_extended_card() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut public = default_card(&mock.url());
    public["supportsAuthenticatedExtendedCard"] = json!(true);
    mock.set_card(Some(public.clone()));
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nextended_card = true\n").await;

    // From now on the mock answers `agent/getAuthenticatedExtendedCard` with
    // a card that has one more skill; the gateway's copy of the public card
    // (fetched at start) does not have it.
    let mut extended = public.clone();
    extended["skills"].as_array_mut().expect("skills").push(
        json!({"id": "admin", "name": "Admin", "description": "For members only",
                     "tags": ["admin"]}),
    );
    mock.set_card(Some(extended));

    let published = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(skill_ids(&published), ["echo"]);

    let auth = [("authorization", "Bearer caller-token")];
    let reply = call(&gw, "/", 7, "agent/getAuthenticatedExtendedCard", &auth).await;
    let card = result_of(&reply, 7);
    assert_eq!(skill_ids(&card), ["echo", "admin"], "{card}");
    assert_points_at(&card, &gw.url());
    assert_eq!(card["name"], "Mock Agent");

    let asked = mock.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].json()["method"],
        "agent/getAuthenticatedExtendedCard"
    );
    assert_eq!(
        asked[0].header("authorization"),
        Some("Bearer caller-token"),
        "asked with the caller's own credentials"
    );

    for (i, path) in EXTENDED_PATHS.into_iter().enumerate() {
        let card = get_card(&gw, path, &auth).await;
        assert_eq!(skill_ids(&card), ["echo", "admin"], "GET {path}");
        assert_points_at(&card, &gw.url());
        assert_eq!(mock.request_count(), 2 + i, "GET {path} asks the agent");
    }

    // Scoped to one agent: its own extended card, pointed at its path.
    let reply = call(&gw, "/agents/agent", 8, "GetExtendedAgentCard", &auth).await;
    let card = result_of(&reply, 8);
    assert_eq!(skill_ids(&card), ["echo", "admin"], "{card}");
    assert_eq!(card["url"], agent_url(&gw, UPSTREAM));
    assert_eq!(
        card["additionalInterfaces"],
        additional_at(&agent_url(&gw, UPSTREAM))
    );
    let card = get_card(&gw, "/agents/agent/extendedAgentCard", &auth).await;
    assert_eq!(card["url"], agent_url(&gw, UPSTREAM));
}

#[tokio::test]
async fn extended_card_of_a_1_0_agent_is_asked_the_1_0_way() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut public = default_card(&mock.url());
    public["capabilities"]["extendedAgentCard"] = json!(true);
    mock.set_card(Some(public.clone()));
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nextended_card = true\n").await;
    let mut extended = public;
    extended["skills"][0]["description"] = json!("Echoes text back, for members");
    mock.set_card(Some(extended));

    let reply = call(&gw, "/", 3, "agent/getAuthenticatedExtendedCard", &[]).await;
    let card = result_of(&reply, 3);
    assert_eq!(
        card["skills"][0]["description"],
        "Echoes text back, for members"
    );
    let asked = mock.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].json()["method"], "GetExtendedAgentCard");
    assert_eq!(asked[0].header("a2a-version"), Some("1.0"));
}

#[tokio::test]
async fn extended_card_off_answers_32007() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;

    let published = get_card(&gw, CARD_PATHS[0], &[]).await;
    assert_eq!(published["supportsAuthenticatedExtendedCard"], false);
    assert_eq!(published["capabilities"]["extendedAgentCard"], false);

    for path in ["/", "/agents/agent"] {
        for (id, method) in [
            (4, "agent/getAuthenticatedExtendedCard"),
            (5, "GetExtendedAgentCard"),
        ] {
            let reply = call(&gw, path, id, method, &[]).await;
            assert_rpc_error(&reply, StatusCode::OK, EXTENDED_NOT_CONFIGURED, json!(id));
        }
    }
    // The GET paths: a client reads the status, never to be cached. The
    // 0.2.5 one answers 404 with the JSON-RPC error; the HTTP+JSON routes
    // (1.0 `/extendedAgentCard`, 0.3 `/v1/card`) their binding's
    // google.rpc.Status, 400 FAILED_PRECONDITION as the spec's table says.
    for path in EXTENDED_PATHS.iter().chain(&["/v1/card"]) {
        for path in [path.to_string(), format!("/agents/agent{path}")] {
            let reply = client::get(&at(&gw, &path), &[]).await;
            if path.ends_with("/agent/authenticatedExtendedCard") {
                let (status, id) = (StatusCode::NOT_FOUND, Value::Null);
                assert_rpc_error(&reply, status, EXTENDED_NOT_CONFIGURED, id);
            } else {
                assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{path}");
                let v = reply.json();
                let reason = &v["error"]["details"][0]["reason"];
                assert_eq!(reason, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "{v}");
            }
            assert_eq!(reply.header("cache-control"), Some("private, no-store"));
        }
    }
    assert_eq!(mock.request_count(), 0, "nothing was forwarded");
}

#[tokio::test]
async fn per_agent_card_promises_only_what_its_path_serves() {
    // The agent offers an extended card; the gateway's is off.
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = mock.card().expect("mock has a card");
    card["supportsAuthenticatedExtendedCard"] = json!(true);
    card["capabilities"]["extendedAgentCard"] = json!(true);
    mock.set_card(Some(card));
    let gw = gateway_for(&mock.url()).await;

    let served = get_card(&gw, &agent_path(UPSTREAM, CARD_PATHS[0]), &[]).await;
    let advertised = served["supportsAuthenticatedExtendedCard"] == true
        || served["capabilities"]["extendedAgentCard"] == true;
    if advertised {
        for (id, method) in [
            (1, "agent/getAuthenticatedExtendedCard"),
            (2, "GetExtendedAgentCard"),
        ] {
            let reply = call(&gw, "/agents/agent", id, method, &[]).await;
            let v = reply.json();
            assert!(
                v["result"].is_object(),
                "the per-agent card advertises an extended card, but {method} \
                 at its URL answers {v}"
            );
        }
    }
}

#[tokio::test]
async fn method_not_allowed_on_card_paths_names_what_is() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nextended_card = true\n").await;

    let reply = client::post_json(&at(&gw, CARD_PATHS[0]), "{}", &[]).await;
    assert_rpc_error(
        &reply,
        StatusCode::METHOD_NOT_ALLOWED,
        INVALID_REQUEST,
        Value::Null,
    );
    assert_eq!(reply.header("allow"), Some("GET, HEAD"));

    // Whatever `Allow` lists must work: HEAD on the extended-card paths is
    // either served like GET (no body) or not listed.
    for path in EXTENDED_PATHS {
        let reply = head(&gw, path).await;
        if reply.status == StatusCode::METHOD_NOT_ALLOWED {
            let allow = reply.header("allow").unwrap_or_default();
            assert!(
                !allow.contains("HEAD"),
                "HEAD {path} is refused with Allow: {allow}"
            );
        } else {
            assert_eq!(reply.status, StatusCode::OK, "HEAD {path}");
            assert!(reply.body.is_empty(), "HEAD {path}: {}", reply.text());
        }
    }
}

// ------------------------------------------------ Last-Modified on every card

/// The fleet card, a per-agent card and the extended card each carry a
/// `Last-Modified`; asking `If-Modified-Since` with it (or later) gets 304,
/// with an earlier date 200, and a tag that does not match wins over a date.
#[tokio::test]
async fn every_card_carries_last_modified_and_answers_if_modified_since() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = start(&[(UPSTREAM, &mock.url())], "[card]\nextended_card = true\n").await;
    let paths = [
        CARD_PATHS[0].to_string(),
        agent_path(UPSTREAM, CARD_PATHS[0]),
        EXTENDED_PATHS[1].to_string(),
    ];
    for path in paths {
        let first = get_ok(&gw, &path, &[]).await;
        let date = first
            .header("last-modified")
            .unwrap_or_else(|| panic!("GET {path}: no Last-Modified"))
            .to_string();
        assert!(date.ends_with(" GMT"), "GET {path}: an HTTP date: {date}");
        let tag = etag(&first);

        let fresh = client::get(&at(&gw, &path), &[("if-modified-since", &date)]).await;
        assert_eq!(fresh.status, StatusCode::NOT_MODIFIED, "GET {path}");
        assert!(fresh.body.is_empty(), "GET {path}: {}", fresh.text());
        assert_eq!(fresh.header("last-modified"), Some(date.as_str()));
        assert_eq!(fresh.header("etag"), Some(tag.as_str()));

        let later = "Fri, 01 Jan 2100 00:00:00 GMT";
        let reply = client::get(&at(&gw, &path), &[("if-modified-since", later)]).await;
        assert_eq!(
            reply.status,
            StatusCode::NOT_MODIFIED,
            "GET {path} since {later}"
        );

        let earlier = "Thu, 01 Jan 1970 00:00:00 GMT";
        let reply = client::get(&at(&gw, &path), &[("if-modified-since", earlier)]).await;
        assert_eq!(reply.status, StatusCode::OK, "GET {path} since {earlier}");
        assert_eq!(reply.body, first.body);

        let reply = client::get(
            &at(&gw, &path),
            &[("if-modified-since", &date), ("if-none-match", "\"other\"")],
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "GET {path}: the tag decides");

        let reply = client::get(&at(&gw, &path), &[("if-modified-since", "yesterday")]).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "GET {path}: a bad date is ignored"
        );
    }
}

// ------------------------------------------------- what each agent speaks

/// /readyz shows each agent's versions by binding: from its card (the 1.0
/// and 0.3 fields together), from `protocol_versions` when configured (it
/// wins), and "unknown" while an agent has no card.
#[tokio::test]
async fn readyz_shows_each_agents_versions_and_where_they_come_from() {
    let from_card = MockAgent::start(Mode::Normal).await;
    let overridden = MockAgent::start(Mode::Normal).await;
    let only_1_0 = MockAgent::start(Mode::Normal).await;
    only_1_0.set_card(Some(json!({
        "name": "One", "description": "d", "version": "1", "skills": [],
        "supportedInterfaces": [{"url": format!("{}/", only_1_0.url()), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    })));
    let closed = crate::support::closed_port::ClosedPort::new();
    let config = format!(
        "[card_refresh]\ntimeout = \"1s\"\n\n\
         [[upstreams]]\nname = \"card\"\nurl = \"{}\"\n\n\
         [[upstreams]]\nname = \"config\"\nurl = \"{}\"\nprotocol_versions = [\"0.3\"]\n\n\
         [[upstreams]]\nname = \"v1\"\nurl = \"{}\"\n\n\
         [[upstreams]]\nname = \"down\"\nurl = \"{}\"\n",
        from_card.url(),
        overridden.url(),
        only_1_0.url(),
        closed.url(),
    );
    let gw = TestGateway::from_toml(&config).await;
    let (_, ready) = readyz(&gw).await;
    let up = &ready["upstreams"];
    assert_eq!(
        up["card"]["versions"],
        json!({"JSONRPC": ["1.0", "0.3", "0.1"]}),
        "{ready}"
    );
    assert_eq!(up["card"]["versions_from"], "card");
    assert_eq!(
        up["config"]["versions"],
        json!({"JSONRPC": ["0.3"]}),
        "{ready}"
    );
    assert_eq!(up["config"]["versions_from"], "config");
    assert_eq!(up["v1"]["versions"], json!({"JSONRPC": ["1.0"]}), "{ready}");
    assert_eq!(up["down"]["versions"], json!({}), "{ready}");
    assert_eq!(up["down"]["versions_from"], "unknown");
}
