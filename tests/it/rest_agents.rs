//! The HTTP+JSON back door over real sockets: an agent whose card offers
//! only HTTP+JSON 1.0 (under `/rest`) is reached by JSON-RPC clients of
//! every version and by REST clients, unary and streaming; its REST errors
//! come back in the client's binding, and probes for a task ask it over
//! REST.

use crate::support::calls::{rpc, JSON, V1};
use std::time::Duration;

use crate::support::client::{self, Proto};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode, Recorded};
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(10);

async fn rest_agent() -> MockAgent {
    let mock = MockAgent::start(Mode::Normal).await;
    mock.set_rest("/rest");
    mock
}

fn send10(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn last(mock: &MockAgent) -> Recorded {
    mock.requests().pop().expect("the agent got the call")
}

#[tokio::test]
async fn a_json_rpc_1_0_client_reaches_a_rest_only_agent() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let reply = client::post_json(
        &gw.url(),
        rpc(json!(41), "SendMessage", send10("hi")),
        &[V1],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["id"], 41, "the client's id is mirrored: {v}");
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    let seen = last(&mock);
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.path_and_query, "/rest/message:send");
    assert_eq!(seen.header("a2a-version"), Some("1.0"));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.json(), send10("hi"), "the body is the request message");

    let task = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let params = json!({"id": task, "historyLength": 2});
    let reply = client::post_json(&gw.url(), rpc(json!("g"), "GetTask", params), &[V1]).await;
    assert_eq!(reply.json()["result"]["id"], task, "{}", reply.text());
    let seen = last(&mock);
    assert_eq!(seen.method, Method::GET);
    assert_eq!(
        seen.path_and_query,
        format!("/rest/tasks/{task}?historyLength=2")
    );
    assert!(seen.body.is_empty(), "a GET has no body");
}

#[tokio::test]
async fn a_0_3_client_reaches_a_rest_only_agent_unary_and_streaming() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let send03 = json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}});
    let reply = client::post_json(
        &gw.url(),
        rpc(json!(1), "message/send", send03.clone()),
        &[],
    )
    .await;
    let v = reply.json();
    assert_eq!(v["result"]["kind"], "task", "answered in 0.3: {v}");
    assert_eq!(v["result"]["status"]["state"], "completed", "{v}");
    let seen = last(&mock);
    assert_eq!(seen.path_and_query, "/rest/message:send");
    assert_eq!(
        seen.json()["message"]["role"],
        "ROLE_USER",
        "the agent gets 1.0"
    );

    let mut stream =
        client::post_stream(&gw.url(), rpc(json!(2), "message/stream", send03), &[]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(events.len(), 3, "{events:?}");
    let last_event: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last_event["id"], 2, "{last_event}");
    assert_eq!(
        last_event["result"]["kind"], "status-update",
        "{last_event}"
    );
    assert_eq!(last_event["result"]["final"], true, "{last_event}");
    assert_eq!(last(&mock).path_and_query, "/rest/message:stream");
}

#[tokio::test]
async fn a_1_0_stream_from_a_rest_agent_is_json_rpc_event_by_event() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let call = rpc(json!("s"), "SendStreamingMessage", send10("hi"));
    let mut stream = client::post_stream(&gw.url(), call, &[V1]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(events.len(), 3, "{events:?}");
    for event in &events {
        let v: Value = serde_json::from_str(event).unwrap();
        assert_eq!(
            (v["jsonrpc"].as_str(), &v["id"]),
            (Some("2.0"), &json!("s")),
            "{v}"
        );
        assert!(v["result"].is_object(), "{v}");
    }
    let resub = rpc(json!(3), "SubscribeToTask", json!({"id": "t-1"}));
    let _ = client::post_stream(&gw.url(), resub, &[V1])
        .await
        .collect_events(LIMIT)
        .await;
    let seen = last(&mock);
    assert_eq!(
        (seen.method, seen.path_and_query.as_str()),
        (Method::GET, "/rest/tasks/t-1:subscribe")
    );
}

#[tokio::test]
async fn rest_errors_come_back_in_the_clients_binding() {
    let mock = rest_agent().await;
    mock.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let get = rpc(json!(9), "GetTask", json!({"id": "nobody"}));
    let v = client::post_json(&gw.url(), get, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32001, "TASK_NOT_FOUND: {v}");
    assert_eq!(v["id"], 9);
    let get03 = rpc(json!(10), "tasks/get", json!({"id": "nobody"}));
    let v = client::post_json(&gw.url(), get03, &[]).await.json();
    assert_eq!(v["error"]["code"], -32001, "{v}");

    let reply = client::request(
        Method::GET,
        &format!("{}tasks/nobody", gw.url()),
        Bytes::new(),
        &[],
        Proto::Http1,
    )
    .await;
    assert_eq!(reply.status, 404, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["error"]["details"][0]["reason"], "TASK_NOT_FOUND", "{v}");
}

#[tokio::test]
async fn a_rest_client_reaches_a_rest_agent_and_back() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}message:send", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let reply = client::request(Method::POST, &url, body, &[JSON], Proto::Http1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v = reply.json();
    assert!(v.get("jsonrpc").is_none(), "the result alone: {v}");
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    let seen = last(&mock);
    assert_eq!(seen.path_and_query, "/rest/message:send");
    assert_eq!(seen.json(), send10("hi"));

    // Same binding, same version: the call passes byte for byte.
    let odd = "{ \"message\" : {\"role\":\"ROLE_USER\", \"messageId\":\"m-2\",\n \"parts\":[{\"text\":\"x\"}]} }";
    let url = format!("{}message:send", gw.url());
    let reply = client::request(Method::POST, &url, Bytes::from(odd), &[JSON], Proto::Http1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(last(&mock).body, Bytes::from(odd), "as the client wrote it");
    let url = format!("{}tasks/t%201?historyLength=1", gw.url());
    client::request(Method::GET, &url, Bytes::new(), &[], Proto::Http1).await;
    assert_eq!(
        last(&mock).path_and_query,
        "/rest/tasks/t%201?historyLength=1"
    );

    let url = format!("{}message:stream", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let events = client::post_stream(&url, body, &[JSON])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 3, "{events:?}");
    for event in &events {
        let v: Value = serde_json::from_str(event).unwrap();
        assert!(
            v.get("jsonrpc").is_none(),
            "REST events are results alone: {v}"
        );
    }
}

#[tokio::test]
async fn push_configs_and_list_tasks_take_their_routes() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(
        &[("agent", &mock.url())],
        "[push_guard]\nallow_hosts = [\"hooks.example\"]\n",
    )
    .await;
    let set = json!({"taskId": "t-1", "id": "p-1", "url": "https://hooks.example/h"});
    let reply = client::post_json(
        &gw.url(),
        rpc(json!(1), "CreateTaskPushNotificationConfig", set),
        &[V1],
    )
    .await;
    assert!(reply.json().get("result").is_some(), "{}", reply.text());
    let seen = last(&mock);
    assert_eq!(
        seen.path_and_query,
        "/rest/tasks/t-1/pushNotificationConfigs"
    );
    assert_eq!(
        seen.json(),
        json!({"id": "p-1", "url": "https://hooks.example/h"})
    );
    let del = json!({"taskId": "t-1", "id": "p-1"});
    client::post_json(
        &gw.url(),
        rpc(json!(2), "DeleteTaskPushNotificationConfig", del),
        &[V1],
    )
    .await;
    let seen = last(&mock);
    assert_eq!(
        (seen.method, seen.path_and_query.as_str()),
        (
            Method::DELETE,
            "/rest/tasks/t-1/pushNotificationConfigs/p-1"
        )
    );
    let list = json!({"contextId": "c 1", "pageSize": 5});
    client::post_json(&gw.url(), rpc(json!(3), "ListTasks", list), &[V1]).await;
    assert_eq!(
        last(&mock).path_and_query,
        "/rest/tasks?contextId=c+1&pageSize=5"
    );
}

#[tokio::test]
async fn what_a_rest_route_cannot_carry_is_refused_naming_it() {
    let mock = rest_agent().await;
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let get = rpc(json!(5), "GetTask", json!({"id": "t", "color": "blue"}));
    let v = client::post_json(&gw.url(), get, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("'color'"), "{message}");
    assert_eq!(mock.request_count(), 0, "nothing reached the agent");
}

#[tokio::test]
async fn a_probe_for_an_unknown_task_asks_a_rest_agent_over_rest() {
    let rpc_agent = MockAgent::start(Mode::Normal).await;
    rpc_agent.set_owned_tasks_only(true);
    let rest = rest_agent().await;
    rest.set_owned_tasks_only(true);
    rest.set_id_prefix("r-");
    let gw = TestGateway::start(&[("a", &rpc_agent.url()), ("b", &rest.url())], "").await;
    // A task the gateway never saw: made at the agent directly.
    let made = client::request(
        Method::POST,
        &format!("{}/rest/message:send", rest.url()),
        Bytes::from(send10("direct").to_string()),
        &[JSON, V1],
        Proto::Http1,
    )
    .await
    .json();
    let task = made["task"]["id"].as_str().unwrap().to_string();
    let get = rpc(json!(1), "GetTask", json!({"id": task}));
    let v = client::post_json(&gw.url(), get, &[V1]).await.json();
    assert_eq!(v["result"]["id"], task, "found by the probe: {v}");
    let probes: Vec<String> = (rest.requests().iter())
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    assert!(
        probes.contains(&format!("GET /rest/tasks/{task}?historyLength=0")),
        "{probes:?}"
    );
}

#[tokio::test]
async fn tenant_routes_carry_the_tenant_to_every_kind_of_agent() {
    let rest = rest_agent().await;
    let rpc_agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("r", &rest.url()), ("j", &rpc_agent.url())], "").await;
    let send = Bytes::from(send10("hi").to_string());
    let url = format!("{}agents/r/acme/message:send", gw.url());
    let reply = client::request(Method::POST, &url, send.clone(), &[JSON], Proto::Http1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(last(&rest).path_and_query, "/rest/acme/message:send");
    let url = format!("{}agents/j/acme/message:send", gw.url());
    let reply = client::request(Method::POST, &url, send, &[JSON], Proto::Http1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let call = last(&rpc_agent).json();
    assert_eq!(
        (&call["method"], &call["params"]["tenant"]),
        (&json!("SendMessage"), &json!("acme"))
    );
    // A JSON-RPC 1.0 call's tenant is the REST agent's path prefix.
    let get = rpc(json!(1), "GetTask", json!({"id": "t", "tenant": "acme"}));
    client::post_json(&format!("{}agents/r", gw.url()), get, &[V1]).await;
    assert_eq!(last(&rest).path_and_query, "/rest/acme/tasks/t");
}

#[tokio::test]
async fn a_rest_agent_that_dies_mid_stream_ends_it_in_the_clients_binding() {
    let mock = rest_agent().await;
    mock.set_mode(Mode::ResetMidStream { events_before: 1 });
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let call = rpc(json!(7), "SendStreamingMessage", send10("hi"));
    let events = client::post_stream(&gw.url(), call, &[V1])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 2, "one event, then the end: {events:?}");
    let end: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(end["id"], 7, "{end}");
    assert!(end["error"]["code"].is_i64(), "a JSON-RPC error: {end}");

    let url = format!("{}message:stream", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let mut stream = client::post_stream(&url, body, &[JSON]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let end: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(
        end["error"]["status"], "UNAVAILABLE",
        "a google.rpc.Status: {end}"
    );
}

#[tokio::test]
async fn a_rest_client_that_leaves_closes_the_rest_agents_stream() {
    let mock = rest_agent().await;
    mock.set_mode(Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    });
    let gw = TestGateway::start(&[("agent", &mock.url())], "").await;
    let url = format!("{}message:stream", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let mut stream = client::post_stream(&url, body, &[JSON]).await;
    assert!(stream.next_event(LIMIT).await.is_some(), "a first event");
    assert!(!mock.stream_closed_by_peer());
    drop(stream);
    assert!(
        mock.wait_stream_closed(LIMIT).await,
        "the agent's stream is closed once the client has gone"
    );
}

#[tokio::test]
async fn rest_calls_are_authenticated_and_the_key_stays_at_the_gateway() {
    use sha2::{Digest, Sha256};
    let mock = rest_agent().await;
    let hash = hex::encode(Sha256::digest(b"s3cret"));
    let config = format!(
        "[card_refresh]\ntimeout = \"2s\"\n\n\
         [auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\n\
         keys = [{{ id = \"ci\", sha256 = \"{hash}\" }}]\n\n\
         [[upstreams]]\nname = \"agent\"\nurl = \"{}\"\n",
        mock.url()
    );
    let gw = TestGateway::from_toml(&config).await;
    let url = format!("{}message:send", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let refused = client::request(Method::POST, &url, body.clone(), &[JSON], Proto::Http1).await;
    assert_eq!(refused.status, 401, "{}", refused.text());
    let v = refused.json();
    assert_eq!(
        v["error"]["status"], "UNAUTHENTICATED",
        "a google.rpc.Status: {v}"
    );
    assert_eq!(mock.request_count(), 0);
    let key = ("x-api-key", "s3cret");
    let ok = client::request(Method::POST, &url, body, &[JSON, key], Proto::Http1).await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let seen = last(&mock);
    assert_eq!(seen.path_and_query, "/rest/message:send");
    assert!(seen.header("x-api-key").is_none(), "{:?}", seen.headers);
}
