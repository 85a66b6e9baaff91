//! Requests of every A2A version go through the gateway and come back
//! intact: bodies byte for byte, end-to-end headers kept, hop-by-hop
//! headers dropped, forwarding headers added.

use std::time::Duration;

use crate::support::client::{self, Proto};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use serde_json::Value;

/// How long a raw exchange with the gateway may take.
const LIMIT: Duration = Duration::from_secs(10);

/// One representative call per method of every version, written with odd
/// spacing, key order and escapes so any re-serialization would show.
const CALLS: &[(&str, &str)] = &[
    (
        "tasks/send",
        r#"{"id":"t-01","sessionId":"s-01","message":{"role":"user","parts":[{"type":"text","text":"caf\u00e9  0.1"}]}}"#,
    ),
    ("tasks/get", r#"{ "id" : "t-01", "historyLength": 2 }"#),
    ("tasks/cancel", r#"{"id":"t-01"}"#),
    (
        "tasks/pushNotification/set",
        r#"{"id":"t-01","pushNotificationConfig":{"url":"https://hooks.example/a"}}"#,
    ),
    ("tasks/pushNotification/get", r#"{"id":"t-01"}"#),
    (
        "message/send",
        r#"{"message":{"parts":[{"kind":"text","text":"hi"}],"role":"user","messageId":"m-1","kind":"message"},"configuration":{"blocking":true},"metadata":{"n":1.50}}"#,
    ),
    (
        "tasks/pushNotificationConfig/set",
        r#"{"taskId":"t-3","pushNotificationConfig":{"url":"https://hooks.example/b","token":"x"}}"#,
    ),
    (
        "tasks/pushNotificationConfig/get",
        r#"{"id":"t-3","pushNotificationConfigId":"p"}"#,
    ),
    ("tasks/pushNotificationConfig/list", r#"{"id":"t-3"}"#),
    (
        "tasks/pushNotificationConfig/delete",
        r#"{"id":"t-3","pushNotificationConfigId":"p"}"#,
    ),
    (
        "SendMessage",
        r#"{"message":{"messageId":"m-2","role":"ROLE_USER","parts":[{"text":"hi"},{"data":{"k":[1,2]}}]},"configuration":{"returnImmediately":false}}"#,
    ),
    ("GetTask", r#"{"id":"t-4","historyLength":0}"#),
    ("ListTasks", r#"{"contextId":"c-1","pageSize":5}"#),
    ("CancelTask", r#"{"id":"t-4"}"#),
    (
        "CreateTaskPushNotificationConfig",
        r#"{"taskId":"t-4","id":"p","url":"https://hooks.example/c"}"#,
    ),
    (
        "GetTaskPushNotificationConfig",
        r#"{"taskId":"t-4","id":"p"}"#,
    ),
    ("ListTaskPushNotificationConfigs", r#"{"taskId":"t-4"}"#),
    (
        "DeleteTaskPushNotificationConfig",
        r#"{"taskId":"t-4","id":"p"}"#,
    ),
];

/// The representative params of `method` from `CALLS`.
fn params_of(method: &str) -> &'static str {
    CALLS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, p)| *p)
        .expect("method in CALLS")
}

fn call(id: &str, method: &str, params: &str) -> String {
    format!(
        "{{ \"jsonrpc\":\"2.0\",  \"method\":\"{method}\", \"params\": {params}, \"id\":{id} }}"
    )
}

#[tokio::test]
async fn every_unary_method_of_every_version_reaches_the_upstream_byte_for_byte() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("agent", &mock.url())],
        // The example webhooks are allowed by name (the guard would
        // otherwise resolve them, and this machine resolves nothing).
        "[push_guard]\nallow_hosts = [\"hooks.example\"]\n",
    )
    .await;
    for (i, (method, params)) in CALLS.iter().enumerate() {
        let id = format!("\"req-{i}\"");
        let body = call(&id, method, params);
        let reply = client::post_json(&gw.url(), body.clone(), &[]).await;
        assert_eq!(reply.status, 200, "{method}: {}", reply.text());
        let json = reply.json();
        assert_eq!(
            json["id"],
            Value::String(format!("req-{i}")),
            "{method}: {json}"
        );
        assert!(
            json.get("result").is_some() || json.get("error").is_some(),
            "{method}: {json}"
        );
        let seen = mock.requests().pop().expect("upstream saw the call");
        assert_eq!(
            seen.body,
            Bytes::from(body),
            "{method}: body altered on the way"
        );
    }
    assert_eq!(mock.request_count(), CALLS.len());
}

#[tokio::test]
async fn upstream_answers_come_back_byte_for_byte_with_their_headers() {
    let answer = Bytes::from_static(b"{\"id\": 1.50 ,\"jsonrpc\":\"2.0\",\"result\":{\"kind\":\"message\",\"text\":\"caf\\u00e9\"}}\n");
    let mock = MockAgent::start(Mode::Fixed {
        status: 200,
        content_type: "application/json; charset=utf-8".into(),
        body: answer.clone(),
    })
    .await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let reply = client::post_json(
        &gw.url(),
        call("1.50", "message/send", params_of("message/send")),
        &[],
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, answer);
    assert_eq!(
        reply.header("content-type"),
        Some("application/json; charset=utf-8")
    );
}

/// The client's framing is its own: however it sent the body (chunked, or
/// a length with leading zeros), the agent gets the same bytes with their
/// plain length, and a plain length passes as it was.
#[tokio::test]
async fn the_agent_gets_the_body_with_its_plain_length_however_it_was_framed() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let body = call("7", "message/send", params_of("message/send"));
    let head = |framing: String| {
        format!(
            "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n{framing}connection: close\r\n\r\n"
        )
    };
    let chunked = format!(
        "{}{:x}\r\n{body}\r\n0\r\n\r\n",
        head("transfer-encoding: chunked\r\n".into()),
        body.len()
    );
    let padded = format!(
        "{}{body}",
        head(format!("content-length: 00{}\r\n", body.len()))
    );
    let plain = format!(
        "{}{body}",
        head(format!("content-length: {}\r\n", body.len()))
    );
    for request in [chunked, padded, plain] {
        let raw = client::raw_http(gw.addr(), request.as_bytes(), LIMIT).await;
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        let seen = mock.requests().pop().expect("the call reached the agent");
        assert_eq!(seen.body, body.as_bytes(), "{request}");
        let length = body.len().to_string();
        assert_eq!(
            seen.header("content-length"),
            Some(length.as_str()),
            "{request}"
        );
        assert_eq!(seen.header("transfer-encoding"), None, "{request}");
    }
}

#[tokio::test]
async fn end_to_end_headers_pass_hop_by_hop_headers_do_not() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let headers = [
        ("a2a-version", "1.0"),
        (
            "a2a-extensions",
            "https://ext.example/a, https://ext.example/b",
        ),
        ("x-a2a-extensions", "https://ext.example/old"),
        (
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        ("tracestate", "vendor=value"),
        ("x-request-id", "client-chosen-id"),
        ("connection", "x-hop-only"),
        ("x-hop-only", "must not pass"),
        ("x-forwarded-for", "203.0.113.7"),
        ("x-repeated", "one"),
        ("x-repeated", "two"),
        ("expect", "100-continue"),
    ];
    let reply = client::post_json(
        &gw.url(),
        call("1", "SendMessage", params_of("SendMessage")),
        &headers,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("x-request-id"), Some("client-chosen-id"));
    let seen = mock.requests().pop().unwrap();
    for (name, value) in &headers[..6] {
        assert_eq!(
            seen.header(name),
            Some(*value),
            "{name} must pass untouched"
        );
    }
    assert_eq!(seen.header("x-hop-only"), None);
    assert_eq!(
        seen.header("x-forwarded-for"),
        Some("203.0.113.7, 127.0.0.1")
    );
    assert_eq!(seen.header("x-forwarded-proto"), Some("http"));
    assert_eq!(
        seen.header("x-forwarded-host"),
        Some(gw.addr().to_string().as_str())
    );
    assert_eq!(seen.header("host"), Some(mock.addr().to_string().as_str()));
    // The gateway read the body already: the agent must not wait for a
    // 100-continue nobody will act on.
    assert_eq!(seen.header("expect"), None);
    let length = seen.body.len().to_string();
    assert_eq!(seen.header("content-length"), Some(length.as_str()));
    let repeated: Vec<_> = seen.headers.get_all("x-repeated").iter().collect();
    assert_eq!(
        repeated,
        ["one", "two"],
        "a repeated header keeps every value, in order"
    );
}

#[tokio::test]
async fn a_request_id_is_generated_when_the_client_sends_none() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let reply = client::post_json(&gw.url(), call("1", "GetTask", params_of("GetTask")), &[]).await;
    let id = reply
        .header("x-request-id")
        .expect("x-request-id on the response");
    assert_eq!(id.len(), 36, "a UUID: {id}");
}

#[tokio::test]
async fn http2_clients_and_http2_upstreams() {
    let mock = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "[[upstreams]]\nname = \"h2\"\nurl = \"{}\"\nhttp2 = true\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    // h2c client → gateway → h2c upstream.
    let reply = client::post_json_h2(
        &gw.url(),
        call("7", "message/send", params_of("message/send")),
        &[],
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.version, http::Version::HTTP_2);
    assert_eq!(reply.json()["id"], 7);
    assert_eq!(
        mock.requests().pop().unwrap().http_version,
        http::Version::HTTP_2
    );
    // HTTP/1.1 client → same h2 upstream.
    let reply = client::post_json(&gw.url(), call("8", "GetTask", params_of("GetTask")), &[]).await;
    assert_eq!(reply.json()["id"], 8);
}

#[tokio::test]
async fn upstream_connections_are_pooled_and_kept_alive() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    for i in 0..10 {
        let reply = client::post_json(
            &gw.url(),
            call(&i.to_string(), "GetTask", params_of("GetTask")),
            &[],
        )
        .await;
        assert_eq!(reply.status, 200);
    }
    assert_eq!(mock.request_count(), 10);
    assert_eq!(
        mock.connection_count(),
        1,
        "sequential calls reuse one upstream connection"
    );
}

#[tokio::test]
async fn configured_upstream_headers_are_added_from_values_and_env() {
    std::env::set_var("A2A_GW_TEST_UPSTREAM_KEY", "from-env-secret");
    let mock = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "[[upstreams]]\nname = \"agent\"\nurl = \"{}\"\n[upstreams.headers]\nx-team = \"blue\"\nx-api-key = {{ env = \"A2A_GW_TEST_UPSTREAM_KEY\" }}\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    // A client value for a configured header is replaced, not duplicated.
    client::post_json(
        &gw.url(),
        call("1", "GetTask", params_of("GetTask")),
        &[("x-team", "red")],
    )
    .await;
    let seen = mock.requests().pop().unwrap();
    assert_eq!(seen.header("x-team"), Some("blue"));
    assert_eq!(seen.headers.get_all("x-team").iter().count(), 1);
    assert_eq!(seen.header("x-api-key"), Some("from-env-secret"));
}

#[tokio::test]
async fn notifications_are_forwarded_and_the_upstream_answers() {
    let mock = MockAgent::start(Mode::Fixed {
        status: 204,
        content_type: "application/json".into(),
        body: Bytes::new(),
    })
    .await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let body = r#"{"jsonrpc":"2.0","method":"tasks/cancel","params":{"id":"t-1"}}"#;
    let reply = client::post_json(&gw.url(), body, &[]).await;
    assert_eq!(reply.status, 204);
    assert_eq!(mock.requests().pop().unwrap().body, body.as_bytes());
}

#[tokio::test]
async fn several_upstreams_go_to_the_default() {
    let a = MockAgent::start(Mode::Normal).await;
    let b = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("a", &a.url()), ("b", &b.url())],
        "[routing]\ndefault_upstream = \"b\"\n",
    )
    .await;
    let reply = client::post_json(
        &gw.url(),
        call("1", "message/send", params_of("message/send")),
        &[],
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!((a.request_count(), b.request_count()), (0, 1));
}

#[tokio::test]
async fn several_upstreams_without_default_is_a_clear_error() {
    let a = MockAgent::start(Mode::Normal).await;
    let b = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &a.url()), ("b", &b.url())], "").await;
    let reply = client::post_json(
        &gw.url(),
        call("\"q\"", "message/send", params_of("message/send")),
        &[],
    )
    .await;
    assert_eq!(reply.status, 200);
    let json = reply.json();
    assert_eq!(json["id"], "q");
    assert_eq!(json["error"]["code"], -32040);
    assert_eq!(
        json["error"]["data"]["upstreams"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(a.request_count() + b.request_count(), 0);
}

#[tokio::test]
async fn query_string_is_kept() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}?tenant=t1", gw.url());
    let reply = client::request(
        http::Method::POST,
        &url,
        Bytes::from(call("1", "GetTask", params_of("GetTask"))),
        &[("content-type", "application/json")],
        Proto::Http1,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(mock.requests().pop().unwrap().path_and_query, "/?tenant=t1");
}

#[tokio::test]
async fn extended_card_methods_are_answered_by_the_gateway_when_not_configured() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    for method in ["agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"] {
        let reply = client::post_json(&gw.url(), call("\"x\"", method, "{}"), &[]).await;
        assert_eq!(reply.status, 200);
        let json = reply.json();
        assert_eq!(json["id"], "x");
        assert_eq!(json["error"]["code"], -32007, "{method}: {json}");
    }
    assert_eq!(mock.request_count(), 0);
}
