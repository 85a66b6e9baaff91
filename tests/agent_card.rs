//! The Agent Card the gateway serves: the upstream's card at both well-known
//! paths, every endpoint URL pointed at the gateway, non-JSON-RPC interfaces
//! and signatures dropped, everything else unchanged; clear 502s when the
//! upstream has no usable card or cannot be reached.
mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::client::{self, Proto, Reply};
use support::gateway::TestGateway;
use support::mock_agent::{MockAgent, Mode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const UPSTREAM: &str = "agent";
const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];
const PUBLIC_URL: &str = "https://agents.example.com/a2a";

const BAD_RESPONSE: i64 = -32052;
const UNAVAILABLE: i64 = -32050;

// ------------------------------------------------------------- helpers

async fn gateway_for(upstream_url: &str) -> TestGateway {
    TestGateway::start(&[(UPSTREAM, upstream_url)], "").await
}

/// `path` on the gateway, e.g. `http://127.0.0.1:PORT/.well-known/agent.json`.
fn at(gw: &TestGateway, path: &str) -> String {
    format!("http://{}{path}", gw.addr())
}

/// GETs a card path and checks it is a 200 JSON answer.
async fn get_card(gw: &TestGateway, path: &str, headers: &[(&str, &str)]) -> Value {
    let reply = client::get(&at(gw, path), headers).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "{path}"
    );
    reply.json()
}

/// The mock's default card as the gateway must serve it at `endpoint`:
/// written out in full so any other change shows up as a difference.
fn default_card_served_at(mock: &MockAgent, endpoint: &str) -> Value {
    let mut card = mock.card().expect("mock has a card");
    card["url"] = json!(endpoint);
    card["preferredTransport"] = json!("JSONRPC");
    card["additionalInterfaces"] = json!([{"url": endpoint, "transport": "JSONRPC"}]);
    card["supportedInterfaces"] = json!([
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]);
    card
}

/// A 502 JSON-RPC error naming the upstream, with a null id (a GET has none).
fn assert_upstream_error(reply: &Reply, code: i64) {
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let v = reply.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], Value::Null, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].is_string(), "{v}");
    assert_eq!(v["error"]["data"]["upstream"], UPSTREAM, "{v}");
}

fn card_gets(mock: &MockAgent) -> Vec<String> {
    mock.requests()
        .iter()
        .filter(|r| r.method == Method::GET)
        .map(|r| r.path_and_query.clone())
        .collect()
}

fn v03_send(raw_id: &str) -> String {
    let params = json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
                                    "parts": [{"kind": "text", "text": "hi"}]}});
    format!(r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"message/send","params":{params}}}"#)
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

// ------------------------------------------------------------- rewrite

#[tokio::test]
async fn both_paths_serve_the_upstream_card_pointed_at_the_gateway() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let endpoint = gw.url(); // http://127.0.0.1:PORT/ (from the Host header)
    let expected = default_card_served_at(&mock, &endpoint);

    for path in CARD_PATHS {
        let card = get_card(&gw, path, &[]).await;
        assert_eq!(card, expected, "{path}");
    }
}

#[tokio::test]
async fn card_urls_follow_the_host_header_without_public_url() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    let headers = [("host", "gateway.internal:8443")];

    let card = get_card(&gw, CARD_PATHS[0], &headers).await;
    let endpoint = "http://gateway.internal:8443/";
    assert_eq!(card, default_card_served_at(&mock, endpoint));
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
    assert_eq!(
        card["url"],
        gw.url(),
        "with no Host header the card must name the bound address, not the configured port 0"
    );
}

#[tokio::test]
async fn public_url_sets_card_urls_and_its_path_serves_json_rpc() {
    let mock = MockAgent::start(Mode::Normal).await;
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n\
         shutdown_grace = \"2s\"\npublic_url = \"{PUBLIC_URL}\"\n\n\
         [[upstreams]]\nname = \"{UPSTREAM}\"\nurl = \"{}\"\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&toml).await;

    // The Host header no longer matters once a public URL is configured.
    for path in CARD_PATHS {
        let card = get_card(&gw, path, &[("host", "ignored.example:1")]).await;
        assert_eq!(card, default_card_served_at(&mock, PUBLIC_URL), "{path}");
    }

    for (i, path) in ["/a2a", "/a2a/", "/"].into_iter().enumerate() {
        let reply = client::post_json(&at(&gw, path), v03_send(&i.to_string()), &[]).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "POST {path}: {}",
            reply.text()
        );
        let v = reply.json();
        assert_eq!(v["id"], i, "POST {path}");
        assert_eq!(
            v["result"]["artifacts"][0]["parts"][0]["text"], "echo: hi",
            "POST {path}"
        );
    }
    assert_eq!(
        mock.requests()
            .iter()
            .filter(|r| r.method == Method::POST)
            .count(),
        3
    );
}

#[tokio::test]
async fn a_1_0_only_card_gets_its_interfaces_rewritten_and_gains_no_url() {
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

    let served = get_card(&gw, CARD_PATHS[0], &[]).await;
    let mut expected = card;
    expected["supportedInterfaces"] = json!([
        {"url": gw.url(), "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t-1"}
    ]);
    assert_eq!(served, expected);
    assert!(served.get("url").is_none(), "no 0.3 `url` added");
    assert!(served.get("preferredTransport").is_none());
    assert!(served.get("additionalInterfaces").is_none());
}

#[tokio::test]
async fn signatures_are_removed_and_nothing_else_changes() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = mock.card().expect("mock has a card");
    card["signatures"] = json!([{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2ln"}]);
    card["provider"] = json!({"organization": "Example", "url": "https://provider.example"});
    card["documentationUrl"] = json!("https://docs.example/agent");
    card["x-extra"] = json!({"nested": [1, 2, {"url": "http://keep.me/"}]});
    mock.set_card(Some(card));
    let gw = gateway_for(&mock.url()).await;

    let served = get_card(&gw, CARD_PATHS[1], &[]).await;
    assert!(served.get("signatures").is_none(), "{served}");
    let mut expected = default_card_served_at(&mock, &gw.url());
    expected
        .as_object_mut()
        .expect("card object")
        .remove("signatures");
    assert_eq!(served, expected);
    assert_eq!(served["provider"]["url"], "https://provider.example");
}

#[tokio::test]
async fn head_on_card_paths_answers_200_without_a_body() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;

    for path in CARD_PATHS {
        let reply = client::request(
            Method::HEAD,
            &at(&gw, path),
            Bytes::new(),
            &[],
            Proto::Http1,
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "HEAD {path}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "HEAD {path}"
        );
        assert!(reply.body.is_empty(), "HEAD {path}: {}", reply.text());
    }
}

// ---------------------------------------------------- fallback, failures

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

    for path in CARD_PATHS {
        let served = get_card(&gw, path, &[]).await;
        let mut expected = card.clone();
        expected["url"] = json!(gw.url());
        assert_eq!(served, expected, "{path}");
    }
    assert_eq!(
        site.paths(),
        [CARD_PATHS[0], CARD_PATHS[1], CARD_PATHS[0], CARD_PATHS[1]],
        "agent-card.json is tried first, agent.json after its 404"
    );
}

#[tokio::test]
async fn no_card_at_either_path_is_a_502_bad_response() {
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_card(None);
    let gw = gateway_for(&mock.url()).await;

    let reply = client::get(&at(&gw, CARD_PATHS[0]), &[]).await;
    assert_upstream_error(&reply, BAD_RESPONSE);
    assert_eq!(card_gets(&mock), CARD_PATHS, "both paths were tried");
}

#[tokio::test]
async fn card_that_is_not_a_json_object_is_a_502_bad_response() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = gateway_for(&mock.url()).await;
    for not_an_object in [json!("a string"), json!([1, 2]), json!(null)] {
        mock.set_card(Some(not_an_object.clone()));
        let reply = client::get(&at(&gw, CARD_PATHS[0]), &[]).await;
        assert_upstream_error(&reply, BAD_RESPONSE);
    }
}

#[tokio::test]
async fn card_that_is_not_json_or_not_200_is_a_502_bad_response() {
    let site = StaticSite::start(vec![
        Page {
            path: CARD_PATHS[0],
            status: 200,
            content_type: "text/html",
            body: Bytes::from_static(b"<html><body>Welcome</body></html>"),
        },
        Page {
            path: CARD_PATHS[1],
            status: 500,
            content_type: "application/json",
            body: Bytes::from_static(b"{}"),
        },
    ])
    .await;
    let gw = gateway_for(&site.url()).await;
    let reply = client::get(&at(&gw, CARD_PATHS[0]), &[]).await;
    assert_upstream_error(&reply, BAD_RESPONSE);

    let site = StaticSite::start(vec![Page {
        path: CARD_PATHS[0],
        status: 500,
        content_type: "application/json",
        body: Bytes::from_static(b"{\"name\":\"x\"}"),
    }])
    .await;
    let gw = gateway_for(&site.url()).await;
    let reply = client::get(&at(&gw, CARD_PATHS[0]), &[]).await;
    assert_upstream_error(&reply, BAD_RESPONSE);
    assert_eq!(site.paths(), [CARD_PATHS[0]], "an error status is no 404");
}

#[tokio::test]
async fn unreachable_upstream_is_a_502_unavailable() {
    let refused = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr")
    }; // dropped: nothing listens there any more
    let gw = gateway_for(&format!("http://{refused}")).await;

    for path in CARD_PATHS {
        let reply = client::get(&at(&gw, path), &[]).await;
        assert_upstream_error(&reply, UNAVAILABLE);
    }
}
