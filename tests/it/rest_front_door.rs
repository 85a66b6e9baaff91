//! The HTTP+JSON front door over real sockets: REST calls go the JSON-RPC
//! call's way (to agents of any version, through the bridge) and come back
//! in the REST binding: results as the body, errors as google.rpc.Status,
//! stream events as results alone.

use crate::support::calls::JSON;
use std::time::Duration;

use crate::support::client::{self, Proto, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

async fn rest(method: Method, url: &str, body: Value, headers: &[(&str, &str)]) -> Reply {
    let body = match body {
        Value::Null => Bytes::new(),
        other => Bytes::from(other.to_string()),
    };
    client::request(method, url, body, headers, Proto::Http1).await
}

fn send_body(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn last_call(mock: &MockAgent) -> Value {
    mock.requests().pop().expect("the agent got a call").json()
}

/// The reason of a google.rpc.Status body, after checking its shape.
fn reason(reply: &Reply) -> String {
    let v = reply.json();
    let error = &v["error"];
    assert_eq!(error["code"], reply.status.as_u16(), "{v}");
    assert!(
        error["status"].is_string() && error["message"].is_string(),
        "{v}"
    );
    let info = &error["details"][0];
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{v}"
    );
    assert_eq!(info["domain"], "a2a-protocol.org", "{v}");
    info["reason"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn message_send_and_get_task_are_the_json_rpc_calls_and_answer_in_rest() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let base = gw.url();
    let reply = rest(
        Method::POST,
        &format!("{base}message:send"),
        send_body("hi"),
        &[JSON],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let seen = mock.requests().pop().unwrap();
    assert_eq!(
        seen.header("a2a-version"),
        Some("1.0"),
        "a 1.0 route is a 1.0 call"
    );
    let call = seen.json();
    assert_eq!(call["method"], "SendMessage");
    assert_eq!(call["params"], send_body("hi"));
    // A JSON-RPC request the gateway writes for a call without an id.
    assert_eq!((&call["jsonrpc"], &call["id"]), (&json!("2.0"), &json!(1)));
    let v = reply.json();
    assert!(v.get("jsonrpc").is_none(), "the result alone: {v}");
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let task = v["task"]["id"].as_str().unwrap().to_string();

    let url = format!("{base}tasks/{task}?historyLength=2");
    let reply = rest(Method::GET, &url, Value::Null, &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        last_call(&mock)["params"],
        json!({"id": task, "historyLength": 2})
    );
    assert_eq!(reply.json()["id"], task.as_str());
    let metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("a2a_gateway_requests_total{") && l.contains("family=\"get_task\""))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(line.contains("binding=\"http+json\""), "{line}");
}

#[tokio::test]
async fn a_rest_client_reaches_a_0_3_agent_through_the_bridge() {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = mock.card().unwrap();
    card.as_object_mut().unwrap().remove("supportedInterfaces");
    mock.set_card(Some(card));
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}agents/agent/message:send", gw.url());
    let reply = rest(Method::POST, &url, send_body("old"), &[JSON]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(last_call(&mock)["method"], "message/send");
    let v = reply.json();
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(
        v["task"]["artifacts"][0]["parts"],
        json!([{"text": "echo: old"}])
    );
}

#[tokio::test]
async fn a_stream_is_results_alone_event_by_event() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}message:stream", gw.url());
    let body = send_body("s").to_string();
    let mut stream = client::post_stream(&url, body, &[]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(last_call(&mock)["method"], "SendStreamingMessage");
    assert_eq!(events.len(), 3, "{events:?}");
    let last: Value = serde_json::from_str(&events[2]).unwrap();
    assert!(last.get("jsonrpc").is_none(), "{last}");
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn errors_are_google_rpc_status_with_the_bindings_status() {
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let base = gw.url();

    let reply = rest(
        Method::GET,
        &format!("{base}tasks/nobody-has-it"),
        Value::Null,
        &[],
    )
    .await;
    assert_eq!(reply.status, 404, "{}", reply.text());
    assert_eq!(reason(&reply), "TASK_NOT_FOUND");

    let reply = rest(
        Method::PUT,
        &format!("{base}message:send"),
        send_body("x"),
        &[JSON],
    )
    .await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("POST"));
    assert_eq!(reason(&reply), "METHOD_NOT_ALLOWED");

    let before = mock.request_count();
    for (method, path, body, headers, status, why) in [
        (
            Method::GET,
            "tasks/a%2Fb",
            Value::Null,
            vec![],
            400,
            "INVALID_PARAMS",
        ),
        (
            Method::GET,
            "tasks/t?historyLength=ten",
            Value::Null,
            vec![],
            400,
            "INVALID_PARAMS",
        ),
        (
            Method::GET,
            "tasks/t",
            json!({"id": "t"}),
            vec![JSON],
            400,
            "INVALID_REQUEST",
        ),
        (
            Method::POST,
            "message:send",
            send_body("x"),
            vec![("content-type", "text/plain")],
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            Method::POST,
            "message:send",
            json!({"message": {"role": "ROLE_USER"}}),
            vec![JSON],
            400,
            "INVALID_PARAMS",
        ),
        (
            Method::POST,
            "message:send",
            json!([1]),
            vec![JSON],
            400,
            "INVALID_PARAMS",
        ),
    ] {
        let reply = rest(method, &format!("{base}{path}"), body, &headers).await;
        assert_eq!(reply.status, status, "{path}: {}", reply.text());
        assert_eq!(reason(&reply), why, "{path}");
    }
    let reply = client::request(
        Method::POST,
        &format!("{base}message:send"),
        Bytes::from_static(b"{not json"),
        &[JSON],
        Proto::Http1,
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reason(&reply), "PARSE_ERROR");
    assert_eq!(
        mock.request_count(),
        before,
        "no bad call reached the agent"
    );
}

#[tokio::test]
async fn a_stream_that_breaks_ends_with_a_google_rpc_status_event() {
    let mock = MockAgent::start(Mode::ResetMidStream { events_before: 1 }).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}message:stream", gw.url());
    let stream = client::post_stream(&url, send_body("s").to_string(), &[]).await;
    let raw = String::from_utf8(stream.read_body().await.to_vec()).unwrap();
    let events = client::parse_sse(raw.as_bytes());
    assert_eq!(events.len(), 2, "{raw}");
    assert!(
        raw.contains("\n\nevent: error\ndata: {"),
        "the SDKs read `event: error` as the error: {raw}"
    );
    let last: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(last["error"]["status"], "UNAVAILABLE", "{last}");
    assert_eq!(
        last["error"]["details"][0]["reason"], "UPSTREAM_STREAM_BROKEN",
        "{last}"
    );
    assert_eq!(last["error"]["details"][0]["metadata"]["upstream"], "agent");
}

#[tokio::test]
async fn an_agents_error_in_a_stream_is_an_error_event() {
    let mock = MockAgent::start(Mode::Fixed {
        status: 200,
        content_type: "text/event-stream".into(),
        body: Bytes::from_static(
            b"data: {\"jsonrpc\":\"2.0\",\"id\":\"rest\",\"error\":{\"code\":-32001,\"message\":\"no task\"}}\n\n",
        ),
    })
    .await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}tasks/t-1:subscribe", gw.url());
    let stream = client::post_stream(&url, Bytes::new(), &[]).await;
    let raw = String::from_utf8(stream.read_body().await.to_vec()).unwrap();
    assert!(raw.starts_with("event: error\ndata: {\"error\":"), "{raw}");
    let data: Value = serde_json::from_str(&client::parse_sse(raw.as_bytes())[0]).unwrap();
    assert_eq!(data["error"]["status"], "NOT_FOUND", "{data}");
}
