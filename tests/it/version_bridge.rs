//! The version bridge over real sockets: clients of one A2A version reach
//! mock agents whose cards say they speak another, both ways, unary and
//! streaming; what cannot be translated gets a clear error.

use crate::support::calls::{rpc, V1};
use std::time::Duration;

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

/// A mock agent whose card offers JSON-RPC in exactly `version`.
pub(crate) async fn agent_speaking(version: &str) -> MockAgent {
    let mock = MockAgent::start(Mode::Normal).await;
    let url = format!("{}/", mock.url());
    let interfaces = match version {
        "1.0" | "0.1" => json!({"supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version}]}),
        _ => json!({"url": url, "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC"}),
    };
    let mut card = json!({
        "name": format!("Speaks {version}"), "description": "d", "version": "1",
        "capabilities": {"streaming": true, "pushNotifications": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["t"]}]
    });
    for (k, v) in interfaces.as_object().unwrap() {
        card[k] = v.clone();
    }
    mock.set_card(Some(card));
    mock
}

async fn gateway(mock: &MockAgent) -> TestGateway {
    TestGateway::start(
        &[("agent", &mock.url())],
        "[push_guard]\nallow_hosts = [\"hooks.example\"]\n",
    )
    .await
}

/// What the agent was last sent.
fn last_seen(mock: &MockAgent) -> (Value, crate::support::mock_agent::Recorded) {
    let seen = mock.requests().pop().expect("the agent got the call");
    (seen.json(), seen)
}

fn send03(text: &str) -> Value {
    json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
        "parts": [{"kind": "text", "text": text}], "metadata": {"k": [1, 2]}},
        "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain"]}})
}

fn send10(text: &str) -> Value {
    json!({"message": {"messageId": "m-2", "role": "ROLE_USER",
        "parts": [{"text": text}, {"data": [1, "two"]}]},
        "configuration": {"returnImmediately": true}})
}

#[tokio::test]
async fn a_0_3_send_reaches_a_1_0_agent_and_comes_back_in_0_3() {
    let mock = agent_speaking("1.0").await;
    let gw = gateway(&mock).await;
    let headers = [("x-a2a-extensions", "urn:ext:a")];
    let body = rpc(json!("c-1"), "message/send", send03("hello"));
    let reply = client::post_json(&gw.url(), body, &headers).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let (sent, seen) = last_seen(&mock);
    assert_eq!(sent["method"], "SendMessage");
    assert_eq!(sent["id"], "c-1");
    assert_eq!(
        sent["params"],
        json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "hello"}], "metadata": {"k": [1, 2]}},
            "configuration": {"returnImmediately": false, "acceptedOutputModes": ["text/plain"]}})
    );
    assert_eq!(seen.header("a2a-version"), Some("1.0"));
    assert_eq!(seen.header("a2a-extensions"), Some("urn:ext:a"));
    assert_eq!(seen.header("x-a2a-extensions"), None);

    let v = reply.json();
    assert_eq!(v["id"], "c-1");
    let task = &v["result"];
    assert_eq!(task["kind"], "task", "{v}");
    assert_eq!(task["status"]["state"], "completed", "{v}");
    assert_eq!(
        task["artifacts"][0]["parts"],
        json!([{"kind": "text", "text": "echo: hello"}])
    );
    let metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    assert!(
        metrics.contains(
            "a2a_gateway_translated_requests_total{agent_version=\"1.0\",client_version=\"0.3\",family=\"send\"} 1"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_1_0_send_reaches_a_0_3_agent_and_comes_back_in_1_0() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    let body = rpc(json!(7), "SendMessage", send10("hi"));
    let reply = client::post_json(&gw.url(), body, &[V1]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let (sent, seen) = last_seen(&mock);
    assert_eq!(sent["method"], "message/send");
    assert_eq!(
        sent["params"],
        json!({"message": {"kind": "message", "messageId": "m-2", "role": "user",
            "parts": [{"kind": "text", "text": "hi"},
                {"kind": "data", "data": {"value": [1, "two"]}, "metadata": {"data_part_compat": true}}]},
            "configuration": {"blocking": false}})
    );
    assert_eq!(seen.header("a2a-version"), None, "absent means 0.3");

    let v = reply.json();
    assert_eq!(v["id"], 7);
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(v["result"]["task"].get("kind").is_none(), "{v}");
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"],
        json!([{"text": "echo: hi"}])
    );
}

/// The data of every event, parsed.
async fn events_of(gw: &TestGateway, body: String, headers: &[(&str, &str)]) -> Vec<Value> {
    let mut stream = client::post_stream(&gw.url(), body, headers).await;
    let events = stream.collect_events(LIMIT).await;
    assert!(stream.error().is_none(), "{:?}", stream.error());
    events
        .iter()
        .map(|e| serde_json::from_str(e).expect("each event is JSON"))
        .collect()
}

#[tokio::test]
async fn a_0_3_stream_from_a_1_0_agent_ends_with_a_final_event() {
    let mock = agent_speaking("1.0").await;
    let gw = gateway(&mock).await;
    let body = rpc(json!("s-1"), "message/stream", send03("stream me"));
    let events = events_of(&gw, body, &[]).await;
    assert_eq!(last_seen(&mock).0["method"], "SendStreamingMessage");
    let kinds: Vec<_> = events.iter().map(|e| e["result"]["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [
            json!("status-update"),
            json!("artifact-update"),
            json!("status-update")
        ]
    );
    assert!(events.iter().all(|e| e["id"] == "s-1"));
    assert_eq!(events[0]["result"]["final"], false);
    assert_eq!(events[2]["result"]["final"], true);
    assert_eq!(events[2]["result"]["status"]["state"], "completed");
    assert_eq!(
        events[1]["result"]["artifact"]["parts"],
        json!([{"kind": "text", "text": "echo: stream me"}])
    );
}

#[tokio::test]
async fn a_1_0_stream_from_a_0_3_agent_has_no_final_and_no_kind() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    let body = rpc(json!(3), "SendStreamingMessage", send10("s"));
    let events = events_of(&gw, body, &[V1]).await;
    assert_eq!(last_seen(&mock).0["method"], "message/stream");
    assert_eq!(events.len(), 3);
    let last = &events[2]["result"]["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    assert!(last.get("final").is_none() && last.get("kind").is_none());
    assert!(events[1]["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].is_string());
}

#[tokio::test]
async fn a_0_1_client_keeps_its_own_task_id_on_a_1_0_agent() {
    let mock = agent_speaking("1.0").await;
    // Continues the tasks it made, and knows no other.
    mock.set_owned_tasks_only(true);
    let gw = gateway(&mock).await;
    let send = json!({"id": "my-task", "sessionId": "my-session",
        "message": {"role": "user", "parts": [{"type": "text", "text": "first"}]}});
    let reply = client::post_json(&gw.url(), rpc(json!(1), "tasks/send", send.clone()), &[]).await;
    let v = reply.json();
    assert_eq!(v["result"]["id"], "my-task", "{v}");
    assert_eq!(v["result"]["sessionId"], "my-session", "{v}");
    assert_eq!(v["result"]["status"]["state"], "completed");
    assert_eq!(
        v["result"]["artifacts"][0]["parts"],
        json!([{"type": "text", "text": "echo: first"}])
    );
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "SendMessage");
    assert_eq!(sent["params"]["message"]["contextId"], "my-session");
    assert!(
        sent["params"]["message"].get("taskId").is_none(),
        "a new task"
    );
    assert!(sent["params"]["message"]["messageId"].is_string());

    // The agent named its own task id: every later call maps to it.
    let reply = client::post_json(
        &gw.url(),
        rpc(json!(2), "tasks/get", json!({"id": "my-task"})),
        &[],
    )
    .await;
    let v = reply.json();
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "GetTask");
    let theirs = sent["params"]["id"].as_str().unwrap().to_string();
    assert_ne!(theirs, "my-task");
    assert_eq!(v["result"]["id"], "my-task", "{v}");
    assert!(v["result"].get("kind").is_none(), "a 0.1 task: {v}");

    let events = events_of(&gw, rpc(json!(3), "tasks/sendSubscribe", send), &[]).await;
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "SendStreamingMessage");
    assert_eq!(
        sent["params"]["message"]["taskId"],
        theirs.as_str(),
        "a follow-up"
    );
    assert!(
        events.iter().all(|e| e["result"]["id"] == "my-task"),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap()["result"]["final"], true);

    let reply = client::post_json(
        &gw.url(),
        rpc(json!(4), "tasks/cancel", json!({"id": "my-task"})),
        &[],
    )
    .await;
    assert_eq!(last_seen(&mock).0["params"]["id"], theirs.as_str());
    assert_eq!(reply.json()["result"]["status"]["state"], "canceled");
}

#[tokio::test]
async fn clients_of_later_versions_reach_a_0_1_agent() {
    let mock = agent_speaking("0.1").await;
    let gw = gateway(&mock).await;
    let v = client::post_json(&gw.url(), rpc(json!(1), "message/send", send03("old")), &[])
        .await
        .json();
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "tasks/send");
    let task_id = sent["params"]["id"]
        .as_str()
        .expect("the gateway picks the id");
    let session = sent["params"]["sessionId"]
        .as_str()
        .expect("and the session");
    assert_eq!(
        sent["params"]["message"],
        json!({"role": "user", "parts": [{"type": "text", "text": "old"}], "metadata": {"k": [1, 2]}})
    );
    let task = &v["result"];
    assert_eq!(
        (&task["kind"], &task["id"]),
        (&json!("task"), &json!(task_id)),
        "{v}"
    );
    assert_eq!(task["contextId"], session);
    assert_eq!(task["status"]["state"], "completed");
    assert_eq!(
        task["artifacts"],
        json!([{"artifactId": "artifact-0", "parts": [{"kind": "text", "text": "echo: old"}]}])
    );

    let mut follow = send10("stream");
    follow["message"]["taskId"] = json!(task_id);
    let events = events_of(&gw, rpc(json!(2), "SendStreamingMessage", follow), &[V1]).await;
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "tasks/sendSubscribe");
    assert_eq!(
        sent["params"]["id"], task_id,
        "the follow-up names its task"
    );
    let context = sent["params"]["sessionId"].clone();
    let last = &events.last().unwrap()["result"]["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    assert_eq!(
        last["contextId"], context,
        "0.1 events name no context: the sent one"
    );
    assert!(events
        .iter()
        .any(|e| e["result"]["artifactUpdate"]["artifact"]["artifactId"] == "artifact-0"));

    let body = rpc(
        json!(3),
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task_id}),
    );
    let v = client::post_json(&gw.url(), body, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32004, "{v}");
}

#[tokio::test]
async fn list_tasks_to_a_0_3_agent_is_32004_naming_its_version() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    let body = rpc(json!(1), "ListTasks", json!({"pageSize": 5}));
    let v = client::post_json(&gw.url(), body, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32004, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("0.3") && message.contains("ListTasks"),
        "{message}"
    );
    assert_eq!(mock.request_count(), 0, "the agent was not asked");
}

#[tokio::test]
async fn an_untranslatable_request_is_32602_naming_the_member() {
    let mock = agent_speaking("1.0").await;
    let gw = gateway(&mock).await;
    let mut params = send03("x");
    params["configuration"]["pushNotificationConfig"] = json!({"url": "https://hooks.example/h",
        "authentication": {"schemes": ["Bearer", "Basic"]}});
    let v = client::post_json(&gw.url(), rpc(json!(1), "message/send", params), &[])
        .await
        .json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("params.configuration.pushNotificationConfig.authentication.schemes"),
        "{message}"
    );
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test]
async fn push_configs_change_shape_both_ways() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    let create = json!({"taskId": "t-9", "id": "p", "url": "https://hooks.example/h",
        "authentication": {"scheme": "Bearer", "credentials": "c"}});
    let body = rpc(json!(1), "CreateTaskPushNotificationConfig", create.clone());
    let v = client::post_json(&gw.url(), body, &[V1]).await.json();
    let (sent, _) = last_seen(&mock);
    assert_eq!(sent["method"], "tasks/pushNotificationConfig/set");
    assert_eq!(
        sent["params"],
        json!({"taskId": "t-9", "pushNotificationConfig": {"id": "p", "url": "https://hooks.example/h",
            "authentication": {"schemes": ["Bearer"], "credentials": "c"}}})
    );
    // The mock answers with what it got; the client reads it flat again.
    assert_eq!(v["result"], create, "{v}");
}

#[tokio::test]
async fn push_configs_to_an_agent_without_push_are_32003_from_the_gateway() {
    let mock = agent_speaking("1.0").await;
    let mut card = mock.card().unwrap();
    card["capabilities"] = json!({"streaming": true});
    mock.set_card(Some(card));
    let gw = gateway(&mock).await;
    // The webhook's host resolves nowhere: it is not even looked at.
    let set =
        json!({"taskId": "t", "pushNotificationConfig": {"url": "https://nowhere.invalid/h"}});
    let v = client::post_json(
        &gw.url(),
        rpc(json!(1), "tasks/pushNotificationConfig/set", set),
        &[],
    )
    .await
    .json();
    assert_eq!(v["error"]["code"], -32003, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("'agent'"),
        "{v}"
    );
    assert_eq!(mock.request_count(), 0);
}

#[tokio::test]
async fn push_config_get_list_delete_reach_a_0_3_agent_in_its_shape() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    for (method, params, want_method, want_params) in [
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "p"}),
            "tasks/pushNotificationConfig/get",
            json!({"id": "t", "pushNotificationConfigId": "p"}),
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({"task_id": "t"}),
            "tasks/pushNotificationConfig/list",
            json!({"id": "t"}),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "t", "id": "p"}),
            "tasks/pushNotificationConfig/delete",
            json!({"id": "t", "pushNotificationConfigId": "p"}),
        ),
    ] {
        client::post_json(&gw.url(), rpc(json!(1), method, params), &[V1]).await;
        let (sent, _) = last_seen(&mock);
        assert_eq!(sent["method"], want_method, "{method}");
        assert_eq!(sent["params"], want_params, "{method}");
    }
}

#[tokio::test]
async fn resubscribe_is_translated_both_ways() {
    let one = agent_speaking("1.0").await;
    let gw = gateway(&one).await;
    let events = events_of(
        &gw,
        rpc(json!(5), "tasks/resubscribe", json!({"id": "t-7"})),
        &[],
    )
    .await;
    let (sent, _) = last_seen(&one);
    assert_eq!(
        (&sent["method"], &sent["params"]),
        (&json!("SubscribeToTask"), &json!({"id": "t-7"}))
    );
    assert_eq!(events.len(), 3);
    assert!(events
        .iter()
        .all(|e| e["result"]["taskId"] == "t-7" && e["result"]["kind"].is_string()));
    assert_eq!(events[2]["result"]["final"], true);

    let old = agent_speaking("0.3").await;
    let gw = gateway(&old).await;
    let body = rpc(json!(6), "SubscribeToTask", json!({"id": "t-8"}));
    let events = events_of(&gw, body, &[V1]).await;
    assert_eq!(last_seen(&old).0["method"], "tasks/resubscribe");
    assert_eq!(
        events[0]["result"]["statusUpdate"]["taskId"], "t-8",
        "{events:?}"
    );
}

/// A mock whose card says it speaks 1.0 and that answers every call with
/// `body`.
async fn answering(content_type: &str, body: &'static str) -> MockAgent {
    let mock = agent_speaking("1.0").await;
    mock.set_mode(Mode::Fixed {
        status: 200,
        content_type: content_type.into(),
        body: Bytes::from_static(body.as_bytes()),
    });
    mock
}

#[tokio::test]
async fn agent_errors_keep_message_and_data_in_the_clients_codes() {
    let mock = answering(
        "application/json",
        r#"{"jsonrpc":"2.0","id":"c-2","error":{"code":-32009,"message":"only 1.0","data":{"why":"x"}}}"#,
    )
    .await;
    let gw = gateway(&mock).await;
    let v = client::post_json(
        &gw.url(),
        rpc(json!("c-2"), "message/send", send03("x")),
        &[],
    )
    .await
    .json();
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "id": "c-2",
            "error": {"code": -32004, "message": "only 1.0", "data": {"why": "x"}}})
    );
}

#[tokio::test]
async fn an_untranslatable_answer_is_502_32006_with_the_request_id() {
    let mock = answering(
        "application/json",
        r#"{"jsonrpc":"2.0","id":"c-3","result":{"task":{"id":"t","status":{"state":"TASK_STATE_NAPPING"}}}}"#,
    )
    .await;
    let gw = gateway(&mock).await;
    let reply = client::post_json(
        &gw.url(),
        rpc(json!("c-3"), "message/send", send03("x")),
        &[],
    )
    .await;
    assert_eq!(reply.status, 502);
    let v = reply.json();
    assert_eq!(v["id"], "c-3");
    assert_eq!(v["error"]["code"], -32006, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("result.task.status.state"), "{message}");
}

#[tokio::test]
async fn a_stream_event_that_cannot_be_translated_ends_the_stream_with_32006() {
    let mock = answering(
        "text/event-stream",
        "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n\
         data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"nonsense\":{}}}\n\n",
    )
    .await;
    let gw = gateway(&mock).await;
    let mut stream =
        client::post_stream(&gw.url(), rpc(json!(1), "message/stream", send03("x")), &[]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(first["result"]["kind"], "status-update");
    let last: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(last["id"], 1);
    assert_eq!(last["error"]["code"], -32006, "{last}");
}

#[tokio::test]
async fn an_agent_speaking_the_clients_version_gets_its_bytes() {
    let mock = agent_speaking("0.3").await;
    let gw = gateway(&mock).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"caf\u00e9"}]}}}"#;
    client::post_json(&gw.url(), body, &[]).await;
    assert_eq!(last_seen(&mock).1.body, Bytes::from_static(body.as_bytes()));
}
