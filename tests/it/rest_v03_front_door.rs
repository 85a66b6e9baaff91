//! The 0.3 HTTP+JSON routes (`/v1/...`, the ProtoJSON of `a2a.v1`) over real
//! sockets: read as the 1.0 calls they are, answered in 0.3's ProtoJSON,
//! unary and streaming, at the root and under `/agents/{name}`.

use crate::support::calls::JSON;
use std::time::Duration;

use crate::support::client::{self, Proto, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

async fn rest(method: Method, url: &str, body: Value) -> Reply {
    let body = match body {
        Value::Null => Bytes::new(),
        other => Bytes::from(other.to_string()),
    };
    client::request(method, url, body, &[JSON], Proto::Http1).await
}

/// What the 0.3 SDK's REST client sends for `message:send`.
fn send03(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "content": [{"text": text}, {"data": {"data": {"k": [1]}}}]},
        "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain"]}})
}

fn last_call(mock: &MockAgent) -> (Value, Option<String>) {
    let seen = mock.requests().pop().expect("the agent got a call");
    let version = seen.header("a2a-version").map(str::to_string);
    (seen.json(), version)
}

#[tokio::test]
async fn a_0_3_send_is_the_1_0_call_and_answers_in_0_3_protojson() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let reply = rest(
        Method::POST,
        &format!("{}v1/message:send", gw.url()),
        send03("hi"),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (call, version) = last_call(&mock);
    assert_eq!(version.as_deref(), Some("1.0"));
    assert_eq!(call["method"], "SendMessage");
    assert_eq!(
        call["params"],
        json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "hi"}, {"data": {"k": [1]}}]},
            "configuration": {"returnImmediately": false, "acceptedOutputModes": ["text/plain"]}})
    );
    let v = reply.json();
    let task = &v["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    for message in task["history"].as_array().into_iter().flatten() {
        assert!(message.get("parts").is_none(), "0.3 says content: {v}");
        assert!(message["content"].is_array(), "{v}");
    }
    assert!(task.get("kind").is_none(), "ProtoJSON has no kind: {v}");

    let id = task["id"].as_str().unwrap();
    let got = rest(
        Method::GET,
        &format!("{}v1/tasks/{id}?historyLength=1", gw.url()),
        Value::Null,
    )
    .await;
    assert_eq!(got.json()["id"], id, "a Task, not wrapped: {}", got.text());
    assert_eq!(
        last_call(&mock).0["params"],
        json!({"id": id, "historyLength": 1})
    );
    let cancelled = rest(
        Method::POST,
        &format!("{}v1/tasks/{id}:cancel", gw.url()),
        json!({"name": format!("tasks/{id}")}),
    )
    .await
    .json();
    assert_eq!(
        cancelled["status"]["state"], "TASK_STATE_CANCELLED",
        "0.3's spelling: {cancelled}"
    );
}

#[tokio::test]
async fn a_0_3_stream_says_each_event_in_0_3_with_final() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}agents/agent/v1/message:stream", gw.url());
    let body = Bytes::from(send03("hi").to_string());
    let events = client::post_stream(&url, body, &[JSON])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 3, "{events:?}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["statusUpdate"]["final"], true, "{last}");
    assert!(last.get("jsonrpc").is_none(), "{last}");
    assert_eq!(last_call(&mock).0["method"], "SendStreamingMessage");
}

#[tokio::test]
async fn the_0_3_sdks_push_config_request_is_read_and_answered_by_name() {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("agent", &mock.url())],
        "[push_guard]\nallow_hosts = [\"hooks.example\"]\n",
    )
    .await;
    let body = json!({"parent": "tasks/t-1", "configId": "c-1",
        "config": {"name": "tasks/t-1/pushNotificationConfigs/c-1",
            "pushNotificationConfig": {"url": "https://hooks.example/h",
                "authentication": {"schemes": ["Bearer"]}}}});
    let reply = rest(
        Method::POST,
        &format!("{}v1/tasks/t-1/pushNotificationConfigs", gw.url()),
        body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let (call, _) = last_call(&mock);
    assert_eq!(call["method"], "CreateTaskPushNotificationConfig");
    assert_eq!(
        call["params"],
        json!({"taskId": "t-1", "id": "c-1", "url": "https://hooks.example/h",
            "authentication": {"scheme": "Bearer"}})
    );
    assert_eq!(
        reply.json(),
        json!({"name": "tasks/t-1/pushNotificationConfigs/c-1",
            "pushNotificationConfig": {"id": "c-1", "url": "https://hooks.example/h",
                "authentication": {"schemes": ["Bearer"]}}})
    );
    // The push guard reads the webhook out of the 0.3 body too.
    let evil = json!({"config": {"pushNotificationConfig": {"url": "http://169.254.169.254/"}}});
    let refused = rest(
        Method::POST,
        &format!("{}v1/tasks/t-1/pushNotificationConfigs", gw.url()),
        evil,
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(mock.request_count(), 1, "the refused one never left");
}

#[tokio::test]
async fn bad_0_3_calls_get_a_google_rpc_status() {
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let base = gw.url();
    let cases = [
        (Method::GET, "v1/tasks", Value::Null, 404),
        (Method::GET, "v1/tasks/nobody", Value::Null, 404),
        (Method::DELETE, "v1/message:send", Value::Null, 405),
        (
            Method::POST,
            "v1/message:send",
            json!({"message": {"content": "text"}}),
            400,
        ),
        (
            Method::POST,
            "v1/message:send",
            json!({"configuration": {"blocking": "yes"}}),
            400,
        ),
    ];
    for (method, path, body, status) in cases {
        let reply = rest(method.clone(), &format!("{base}{path}"), body).await;
        assert_eq!(reply.status, status, "{method} {path}: {}", reply.text());
        let v = reply.json();
        assert_eq!(v["error"]["code"], status, "{method} {path}: {v}");
        assert!(v["error"]["message"].is_string(), "{v}");
    }
}
