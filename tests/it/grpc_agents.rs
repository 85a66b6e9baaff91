//! The gRPC back door over real sockets (issue #53, item 4): an agent
//! whose card offers only gRPC 1.0, on a port of its own, is reached by
//! JSON-RPC clients of 1.0 and 0.3, by REST clients and by gRPC clients,
//! unary and streaming; its gRPC statuses come back in the client's
//! binding; an agent that is down is the agent's failure.

use crate::support::calls::{rpc, JSON, V1};
use std::time::Duration;

use crate::support::client::{self, Proto};
use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_grpc::MockGrpcAgent;
use a2a_gateway::a2a::grpc::v1;
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};
use tonic_types::StatusExt;

const LIMIT: Duration = Duration::from_secs(10);

fn send10(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}],
        "metadata": {"k": "v"}}})
}

#[tokio::test]
async fn a_json_rpc_1_0_client_reaches_a_grpc_only_agent() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let call = rpc(json!(41), "SendMessage", send10("hi"));
    let headers = [V1, ("x-note", "kept"), ("grpc-encoding", "gzip")];
    let reply = client::post_json(&gw.url(), call, &headers).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["id"], 41, "{v}");
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hi", "{v}");
    let calls = agent.calls();
    let sent = calls.last().expect("the agent got a gRPC call");
    assert_eq!(sent.rpc, "SendMessage");
    assert!(sent.message.contains("\"hi\""), "{}", sent.message);
    assert!(
        sent.message.contains("\"k\""),
        "metadata travels: {}",
        sent.message
    );
    assert_eq!(
        sent.metadata.get("a2a-version").map(String::as_str),
        Some("1.0")
    );
    assert_eq!(
        sent.metadata.get("x-note").map(String::as_str),
        Some("kept")
    );
    assert_eq!(
        sent.metadata.get("te").map(String::as_str),
        Some("trailers")
    );

    // The task, read back and then not cancelable.
    let id = task["id"].as_str().unwrap().to_string();
    let get = rpc(json!("g"), "GetTask", json!({"id": id}));
    let v = client::post_json(&gw.url(), get, &[V1]).await.json();
    assert_eq!(v["result"]["id"], id.as_str(), "{v}");
    let cancel = rpc(json!("c"), "CancelTask", json!({"id": id}));
    let v = client::post_json(&gw.url(), cancel, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32002, "TASK_NOT_CANCELABLE: {v}");
    let get = rpc(json!(9), "GetTask", json!({"id": "nobody"}));
    let v = client::post_json(&gw.url(), get, &[V1]).await.json();
    assert_eq!(v["error"]["code"], -32001, "TASK_NOT_FOUND: {v}");
    assert_eq!(v["error"]["data"]["taskId"], "nobody", "{v}");
    assert_eq!(v["id"], 9);
}

#[tokio::test]
async fn a_0_3_client_reaches_a_grpc_only_agent_unary_and_streaming() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let send03 = json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
        "parts": [{"kind": "text", "text": "hi"}]}});
    let call = rpc(json!(1), "message/send", send03.clone());
    let v = client::post_json(&gw.url(), call, &[]).await.json();
    assert_eq!(v["result"]["kind"], "task", "answered in 0.3: {v}");
    assert_eq!(v["result"]["status"]["state"], "completed", "{v}");

    let call = rpc(json!(2), "message/stream", send03);
    let mut stream = client::post_stream(&gw.url(), call, &[]).await;
    let events = stream.collect_events(LIMIT).await;
    assert_eq!(events.len(), 3, "{events:?}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(last["id"], 2, "{last}");
    assert_eq!(last["result"]["kind"], "status-update", "{last}");
    assert_eq!(last["result"]["status"]["state"], "completed", "{last}");
    assert_eq!(last["result"]["final"], true, "{last}");
    assert_eq!(agent.calls().last().unwrap().rpc, "SendStreamingMessage");
}

#[tokio::test]
async fn a_stream_that_breaks_ends_with_an_error_event() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let call = rpc(json!("s"), "SendStreamingMessage", send10("break"));
    let events = client::post_stream(&gw.url(), call, &[V1])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 2, "the task, then the error: {events:?}");
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    assert!(first["result"]["task"].is_object(), "{first}");
    let last: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(last["id"], "s", "{last}");
    assert_eq!(
        last["error"]["code"], -32603,
        "UNAVAILABLE is the agent's failure: {last}"
    );
    assert_eq!(last["error"]["message"], "the agent broke off", "{last}");
}

#[tokio::test]
async fn a_rest_client_reaches_a_grpc_only_agent() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let url = format!("{}message:send", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let reply = client::request(Method::POST, &url, body, &[JSON], Proto::Http1).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    let url = format!("{}tasks/nobody", gw.url());
    let reply = client::request(Method::GET, &url, Bytes::new(), &[], Proto::Http1).await;
    assert_eq!(reply.status, 404, "{}", reply.text());
    assert_eq!(
        reply.json()["error"]["details"][0]["reason"],
        "TASK_NOT_FOUND"
    );
    let url = format!("{}message:stream", gw.url());
    let body = Bytes::from(send10("hi").to_string());
    let events = client::post_stream(&url, body, &[JSON])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 3, "{events:?}");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
}

#[tokio::test]
async fn a_grpc_client_reaches_a_grpc_only_agent() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let mut client =
        v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let request = crate::support::calls::grpc_send("more");
    let answer = client
        .send_message(request.clone())
        .await
        .unwrap()
        .into_inner();
    let Some(v1::send_message_response::Payload::Task(task)) = answer.payload else {
        panic!("a task: {answer:?}");
    };
    assert_eq!(
        task.status.unwrap().state,
        v1::TaskState::InputRequired as i32
    );
    let canceled = client
        .cancel_task(v1::CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        canceled.status.unwrap().state,
        v1::TaskState::Canceled as i32
    );
    let missing = client
        .get_task(v1::GetTaskRequest {
            id: "nobody".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    let reason = missing.get_details_error_info().map(|i| i.reason);
    assert_eq!(reason.as_deref(), Some("TASK_NOT_FOUND"));
    assert_eq!(
        missing.message(),
        "no task nobody",
        "the agent's own status"
    );
    // The task the agent made is known to be its own: a follow-up through
    // the fleet finds it (learned from the passed-through answer).
    let got = client
        .get_task(v1::GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.id, task.id);
    let mut stream = client
        .send_streaming_message(request)
        .await
        .unwrap()
        .into_inner();
    let mut items = 0;
    while let Some(item) = tokio::time::timeout(LIMIT, stream.message())
        .await
        .unwrap()
        .unwrap()
    {
        assert!(item.payload.is_some());
        items += 1;
    }
    assert_eq!(items, 3);
}

#[tokio::test]
async fn a_grpc_agent_that_is_down_is_a_bad_gateway() {
    let agent = MockGrpcAgent::start().await;
    let closed = ClosedPort::new();
    agent.card.set_card(Some(json!({
        "name": "gone", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": closed.addr().to_string(), "protocolBinding": "GRPC",
            "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    })));
    let gw = TestGateway::start(&[("agent", &agent.url())], "").await;
    let reply =
        client::post_json(&gw.url(), rpc(json!(1), "SendMessage", send10("hi")), &[V1]).await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    let v = reply.json();
    assert_eq!(v["error"]["data"]["upstream"], "agent", "{v}");
    // A message the 1.0 proto cannot carry is the client's error, named.
    let odd = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
        "extension": {"x": 1}});
    let v = client::post_json(&gw.url(), rpc(json!(2), "SendMessage", odd), &[V1])
        .await
        .json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("gRPC"),
        "{v}"
    );
}

#[tokio::test]
async fn an_agents_own_card_names_it_in_the_grpc_tenant_and_calls_echo_it() {
    let grpc_agent = MockGrpcAgent::start().await;
    let rpc_agent =
        crate::support::mock_agent::MockAgent::start(crate::support::mock_agent::Mode::Normal)
            .await;
    let gw = TestGateway::start(&[("a", &rpc_agent.url()), ("g", &grpc_agent.url())], "").await;
    let card = client::get(
        &format!("{}agents/g/.well-known/agent-card.json", gw.url()),
        &[],
    )
    .await
    .json();
    let grpc = (card["supportedInterfaces"].as_array().unwrap().iter())
        .find(|i| i["protocolBinding"] == "GRPC")
        .cloned()
        .expect("the card offers gRPC");
    assert_eq!(grpc["url"], gw.addr().to_string(), "{card}");
    assert_eq!(grpc["protocolVersion"], "1.0");
    assert_eq!(grpc["tenant"], "agents/g", "{card}");

    let mut client =
        v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let send = |tenant: &str| v1::SendMessageRequest {
        tenant: tenant.into(),
        ..crate::support::calls::grpc_send("hi")
    };
    let before = rpc_agent.requests().len();
    client.send_message(send("agents/g")).await.unwrap();
    let calls = grpc_agent.calls();
    assert_eq!(calls.len(), 1, "the named agent took it");
    assert!(
        !calls[0].message.contains("agents/"),
        "the gateway's tenant stays here: {}",
        calls[0].message
    );
    client.send_message(send("agents/a")).await.unwrap();
    assert_eq!(grpc_agent.calls().len(), 1);
    let to_a = rpc_agent.requests();
    assert_eq!(to_a.len(), before + 1, "the other agent took it");
    assert!(to_a.last().unwrap().json()["params"]
        .get("tenant")
        .is_none());
    let unknown = client
        .send_message(send("agents/nobody"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert!(unknown.message().contains("nobody"), "{unknown:?}");
}

#[tokio::test]
async fn a_passed_through_answer_teaches_the_fleet_who_owns_the_task() {
    let a = MockGrpcAgent::start().await;
    let b = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("a", &a.url()), ("b", &b.url())], "").await;
    let mut client =
        v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let send = v1::SendMessageRequest {
        tenant: "agents/b".into(),
        ..crate::support::calls::grpc_send("hi")
    };
    let answer = client.send_message(send).await.unwrap();
    assert!(
        answer.metadata().get("x-agent-said").is_some(),
        "passed through"
    );
    let Some(v1::send_message_response::Payload::Task(task)) = answer.into_inner().payload else {
        panic!("a task");
    };
    // At the root, with no tenant: the owner learned from b's answer.
    let get = v1::GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let got = client
        .get_task(get)
        .await
        .expect("routed to b")
        .into_inner();
    assert_eq!(got.id, task.id);
    let rpcs = |agent: &MockGrpcAgent| agent.calls().iter().map(|c| c.rpc).collect::<Vec<_>>();
    assert_eq!(rpcs(&b), ["SendMessage", "GetTask"]);
    assert!(!rpcs(&a).contains(&"GetTask"), "{:?}", rpcs(&a));
}

#[tokio::test]
async fn a_passed_through_error_is_counted_as_that_error() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("g", &agent.url())], "").await;
    let mut client =
        v1::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let get = v1::GetTaskRequest {
        id: "nobody".into(),
        ..Default::default()
    };
    let missing = client.get_task(get).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    assert_eq!(
        missing.message(),
        "no task nobody",
        "the agent's own status"
    );
    // The record is written as the answer's body ends: a moment later.
    let mut metrics = String::new();
    for _ in 0..50 {
        metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
            .await
            .text();
        let counted = metrics.lines().any(|l| {
            l.starts_with("a2a_gateway_requests_total{") && l.contains(r#"error="task_not_found""#)
        });
        if counted {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("not counted as task_not_found: {metrics}");
}

/// A task no one here has seen (made through another gateway) is found by
/// probing: each gRPC agent gets a `GetTask` in its own version's message,
/// built by the gRPC agent binding, and the task comes back in JSON-RPC.
#[tokio::test]
async fn a_probe_for_an_unknown_task_asks_grpc_agents_over_grpc() {
    use crate::support::mock_agent::{MockAgent, Mode};
    use crate::support::mock_grpc03::MockGrpc03Agent;
    let rpc_agent = MockAgent::start(Mode::Normal).await;
    rpc_agent.set_owned_tasks_only(true);
    let v10 = MockGrpcAgent::start().await;
    let v03 = MockGrpc03Agent::start().await;
    for url in [v10.url(), v03.url()] {
        let maker = TestGateway::start(&[("g", &url)], "").await;
        let send = rpc(json!(1), "SendMessage", send10("hi"));
        let made = client::post_json(&maker.url(), send, &[V1]).await.json();
        let task = made["result"]["task"]["id"]
            .as_str()
            .expect("a task")
            .to_string();
        let gw = TestGateway::start(&[("a", &rpc_agent.url()), ("g", &url)], "").await;
        let get = rpc(json!(2), "GetTask", json!({"id": task}));
        let v = client::post_json(&gw.url(), get, &[V1]).await.json();
        assert_eq!(v["result"]["id"], task, "found by the probe at {url}: {v}");
    }
    let asked: Vec<_> = (v10.calls().into_iter())
        .filter(|c| c.rpc == "GetTask")
        .map(|c| c.message)
        .collect();
    assert_eq!(asked.len(), 2, "the probe, then the call: {asked:?}");
    assert!(asked[0].contains("id: \"gtask-"), "{asked:?}");
    let asked: Vec<_> = v03
        .calls()
        .into_iter()
        .filter(|c| c.0 == "GetTask")
        .collect();
    assert_eq!(asked.len(), 2, "the probe, then the call: {asked:?}");
    assert!(
        asked[0].1.contains("tasks/"),
        "0.3 names the task: {asked:?}"
    );
}
