//! gRPC in A2A 0.3 (issue #53): the gateway's `a2a.v1.A2AService` takes
//! 0.3 gRPC clients to agents of every kind (JSON-RPC here, a 1.0 gRPC
//! agent), unary and streaming, with each failure its gRPC status; and
//! clients of every binding reach an agent that speaks only 0.3 gRPC.

use std::time::Duration;

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use crate::support::mock_grpc::MockGrpcAgent;
use crate::support::mock_grpc03::MockGrpc03Agent;
use a2a_gateway::a2a::grpc::v03;
use serde_json::{json, Value};
use tonic::Code;
use tonic_types::StatusExt;
use v03::a2a_service_client::A2aServiceClient;

const LIMIT: Duration = Duration::from_secs(10);

async fn client03(gw: &TestGateway) -> A2aServiceClient<tonic::transport::Channel> {
    A2aServiceClient::connect(format!("http://{}", gw.addr()))
        .await
        .expect("the gateway takes h2c")
}

fn send03(text: &str) -> v03::SendMessageRequest {
    v03::SendMessageRequest {
        request: Some(v03::Message {
            message_id: "m-1".into(),
            role: v03::Role::User as i32,
            content: vec![v03::Part {
                part: Some(v03::part::Part::Text(text.into())),
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn state_of(task: &v03::Task) -> i32 {
    task.status.as_ref().map_or(0, |s| s.state)
}

#[tokio::test]
async fn a_0_3_grpc_client_reaches_a_json_rpc_agent() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut grpc = client03(&gw).await;
    let answer = grpc.send_message(send03("hello")).await.expect("answered");
    let Some(v03::send_message_response::Payload::Task(task)) = answer.into_inner().payload else {
        panic!("a task");
    };
    assert_eq!(state_of(&task), v03::TaskState::Completed as i32);
    let call = (agent.requests().into_iter())
        .rfind(|r| !r.is_card_fetch())
        .unwrap()
        .json();
    let text = &call["params"]["message"]["parts"][0];
    assert!(
        text == &json!({"kind": "text", "text": "hello"}) || text["text"] == "hello",
        "{call}"
    );

    let got = grpc
        .get_task(v03::GetTaskRequest {
            name: format!("tasks/{}", task.id),
            history_length: 1,
        })
        .await
        .expect("answered")
        .into_inner();
    assert_eq!(got.id, task.id);
    let call = (agent.requests().into_iter())
        .rfind(|r| !r.is_card_fetch())
        .unwrap()
        .json();
    assert_eq!(call["params"]["id"], task.id.as_str(), "{call}");
    assert_eq!(call["params"]["historyLength"], 1, "{call}");

    let mut stream = grpc
        .send_streaming_message(send03("stream"))
        .await
        .expect("the stream starts")
        .into_inner();
    let mut items = Vec::new();
    while let Some(item) = tokio::time::timeout(LIMIT, stream.message())
        .await
        .unwrap()
        .unwrap()
    {
        items.push(item);
    }
    assert!(!items.is_empty());
    let last = items.last().unwrap().payload.clone();
    let Some(v03::stream_response::Payload::StatusUpdate(update)) = last else {
        panic!("a status update last: {items:?}");
    };
    assert!(update.r#final, "0.3 says the last event is final");
}

#[tokio::test]
async fn a_0_3_grpc_clients_bad_input_and_an_agents_error_are_statuses() {
    let agent = MockAgent::start(Mode::Normal).await;
    agent.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut grpc = client03(&gw).await;
    let missing = grpc
        .get_task(v03::GetTaskRequest {
            name: "tasks/nobody".into(),
            history_length: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    let reason = missing.get_details_error_info().map(|i| i.reason);
    assert_eq!(reason.as_deref(), Some("TASK_NOT_FOUND"));
    for name in ["task/x", "tasks/", "x"] {
        let bad = grpc
            .get_task(v03::GetTaskRequest {
                name: name.into(),
                history_length: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), Code::InvalidArgument, "{name}: {bad:?}");
        assert!(bad.message().contains("tasks/{id}"), "{bad:?}");
    }
    // A send with no message: the required field, named.
    let empty = grpc
        .send_message(v03::SendMessageRequest::default())
        .await
        .unwrap_err();
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert!(empty.message().contains("message"), "{empty:?}");
}

#[tokio::test]
async fn a_0_3_grpc_client_reaches_a_1_0_grpc_agent() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("g", &agent.url())], "").await;
    let mut grpc = client03(&gw).await;
    let answer = grpc.send_message(send03("hi")).await.expect("answered");
    let Some(v03::send_message_response::Payload::Task(task)) = answer.into_inner().payload else {
        panic!("a task");
    };
    assert_eq!(state_of(&task), v03::TaskState::Completed as i32);
    assert_eq!(agent.calls().last().unwrap().rpc, "SendMessage");
}

#[tokio::test]
async fn clients_of_every_binding_reach_a_0_3_grpc_only_agent() {
    let agent = MockGrpc03Agent::start().await;
    let gw = TestGateway::start(&[("old", &agent.url())], "").await;
    // JSON-RPC 1.0.
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
        {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let reply = client::post_json(&gw.url(), send.to_string(), &[("a2a-version", "1.0")]).await;
    let v = reply.json();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let (rpc, said) = agent.calls().last().cloned().unwrap();
    assert_eq!(rpc, "SendMessage");
    assert!(said.contains("\"hi\""), "{said}");
    // JSON-RPC 0.3, its GetTask said with the task's resource name.
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": id}});
    let v = client::post_json(&gw.url(), get.to_string(), &[])
        .await
        .json();
    assert_eq!(v["result"]["kind"], "task", "{v}");
    assert_eq!(v["result"]["status"]["state"], "completed", "{v}");
    let (rpc, said) = agent.calls().last().cloned().unwrap();
    assert_eq!(rpc, "GetTask");
    assert!(said.contains(&format!("tasks/{id}")), "{said}");
    let missing =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": "nobody"}});
    let v = client::post_json(&gw.url(), missing.to_string(), &[])
        .await
        .json();
    assert_eq!(v["error"]["code"], -32001, "{v}");
    // JSON-RPC 1.0 streaming: 1.0 events, no `final`.
    let stream = json!({"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params":
        {"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "s"}]}}});
    let events = client::post_stream(&gw.url(), stream.to_string(), &[("a2a-version", "1.0")])
        .await
        .collect_events(LIMIT)
        .await;
    assert_eq!(events.len(), 2, "{events:?}");
    let last: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    assert!(
        last["result"]["statusUpdate"].get("final").is_none(),
        "{last}"
    );
    // ListTasks: 0.3 has none; the client's error, said.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}});
    let v = client::post_json(&gw.url(), list.to_string(), &[("a2a-version", "1.0")])
        .await
        .json();
    assert_eq!(v["error"]["code"], -32004, "{v}");
}

#[tokio::test]
async fn a2a_agent_metadata_names_the_agent_in_either_version() {
    let a = MockAgent::start(Mode::Normal).await;
    let b = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("a", &a.url()), ("b", &b.url())], "").await;
    let calls = |m: &MockAgent| {
        m.requests()
            .into_iter()
            .filter(|r| !r.is_card_fetch())
            .count()
    };
    let mut request = tonic::Request::new(send03("hi"));
    request
        .metadata_mut()
        .insert("a2a-agent", "b".parse().unwrap());
    client03(&gw)
        .await
        .send_message(request)
        .await
        .expect("answered");
    assert_eq!((calls(&a), calls(&b)), (0, 1), "b was named");
    let sent = b
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert!(
        sent.header("a2a-agent").is_none(),
        "the gateway's own metadata stays here"
    );

    let mut request = tonic::Request::new(a2a_gateway::a2a::grpc::v1::GetTaskRequest {
        id: "t-1".into(),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("a2a-agent", "a".parse().unwrap());
    let mut v1 = a2a_gateway::a2a::grpc::v1::a2a_service_client::A2aServiceClient::connect(
        format!("http://{}", gw.addr()),
    )
    .await
    .unwrap();
    v1.get_task(request).await.expect("answered");
    assert_eq!((calls(&a), calls(&b)), (1, 1), "a was named");

    let mut request = tonic::Request::new(send03("hi"));
    request
        .metadata_mut()
        .insert("a2a-agent", "nobody".parse().unwrap());
    let unknown = client03(&gw).await.send_message(request).await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains("nobody"), "{unknown:?}");
}

#[tokio::test]
async fn a_0_3_grpc_call_to_a_0_3_grpc_agent_passes_through_unary_and_streaming() {
    let a = MockGrpc03Agent::start().await;
    let b = MockGrpc03Agent::start().await;
    let gw = TestGateway::start(&[("a", &a.url()), ("b", &b.url())], "").await;
    let mut grpc = client03(&gw).await;
    let said = |metadata: &tonic::metadata::MetadataMap| {
        (metadata.get("x-agent-said")).map(|v| v.to_str().unwrap().to_string())
    };
    let mut request = tonic::Request::new(send03("hi"));
    request
        .metadata_mut()
        .insert("a2a-agent", "b".parse().unwrap());
    let answer = grpc.send_message(request).await.expect("answered");
    assert_eq!(
        said(answer.metadata()).as_deref(),
        Some("send"),
        "the agent's own answer"
    );
    let Some(v03::send_message_response::Payload::Task(task)) = answer.into_inner().payload else {
        panic!("a task");
    };
    // No agent named: the owner learned from b's passed-through answer.
    let get = v03::GetTaskRequest {
        name: format!("tasks/{}", task.id),
        ..Default::default()
    };
    let got = grpc.get_task(get).await.expect("routed to b").into_inner();
    assert_eq!(got.id, task.id);

    let mut request = tonic::Request::new(send03("hi"));
    request
        .metadata_mut()
        .insert("a2a-agent", "b".parse().unwrap());
    let answer = grpc
        .send_streaming_message(request)
        .await
        .expect("a stream");
    assert_eq!(said(answer.metadata()).as_deref(), Some("stream"));
    let mut stream = answer.into_inner();
    let mut items = Vec::new();
    while let Some(item) = tokio::time::timeout(LIMIT, stream.message())
        .await
        .unwrap()
        .unwrap()
    {
        items.push(item);
    }
    assert_eq!(items.len(), 2, "{items:?}");
    let Some(v03::stream_response::Payload::Task(streamed)) = &items[0].payload else {
        panic!("the task first: {items:?}");
    };
    let get = v03::GetTaskRequest {
        name: format!("tasks/{}", streamed.id),
        ..Default::default()
    };
    grpc.get_task(get)
        .await
        .expect("routed to b, learned from the stream");
    let rpcs = |agent: &MockGrpc03Agent| agent.calls().iter().map(|c| c.0).collect::<Vec<_>>();
    assert_eq!(
        rpcs(&b),
        ["SendMessage", "GetTask", "SendStreamingMessage", "GetTask"]
    );
    assert!(rpcs(&a).is_empty(), "{:?}", rpcs(&a));
}
