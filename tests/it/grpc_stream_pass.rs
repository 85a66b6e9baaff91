//! A gRPC client's stream to a gRPC agent of its service, passed through
//! at the frame level (issue #53, item 4): the agent's messages, metadata
//! and trailers come back as it wrote them, the fleet learns the task's
//! owner from them, and the gateway still bounds the stream: the client's
//! `grpc-timeout`, the idle timeout, each ending it with its own status.

use std::time::Duration;

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_grpc::MockGrpcAgent;
use a2a_gateway::a2a::grpc::v1;
use tonic_types::StatusExt;

const LIMIT: Duration = Duration::from_secs(10);

type Client = v1::a2a_service_client::A2aServiceClient<tonic::transport::Channel>;

async fn client_of(gw: &TestGateway) -> Client {
    Client::connect(format!("http://{}", gw.addr()))
        .await
        .unwrap()
}

fn send(tenant: &str, text: &str) -> v1::SendMessageRequest {
    v1::SendMessageRequest {
        tenant: tenant.into(),
        ..crate::support::calls::grpc_send(text)
    }
}

/// The stream's messages until it ends: Ok with them all, or the status
/// it ended with and the messages before it.
async fn read_all(
    stream: &mut tonic::Streaming<v1::StreamResponse>,
) -> (Vec<v1::StreamResponse>, Option<tonic::Status>) {
    let mut items = Vec::new();
    loop {
        match tokio::time::timeout(LIMIT, stream.message()).await {
            Err(_) => panic!("the stream hung after {} messages", items.len()),
            Ok(Ok(Some(item))) => items.push(item),
            Ok(Ok(None)) => return (items, None),
            Ok(Err(status)) => return (items, Some(status)),
        }
    }
}

/// The counted requests' lines of the gateway's metrics, once one has
/// `wanted` (the record is written as the answer's body ends).
async fn counted(gw: &TestGateway, wanted: &str) -> String {
    let mut metrics = String::new();
    for _ in 0..50 {
        metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
            .await
            .text();
        let lines: Vec<&str> = (metrics.lines())
            .filter(|l| l.starts_with("a2a_gateway_requests_total{"))
            .collect();
        if lines.iter().any(|l| l.contains(wanted)) {
            return lines.join("\n");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no request counted with {wanted}: {metrics}");
}

#[tokio::test]
async fn a_stream_passes_through_and_teaches_the_fleet_who_owns_the_task() {
    let a = MockGrpcAgent::start().await;
    let b = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("a", &a.url()), ("b", &b.url())], "").await;
    let mut client = client_of(&gw).await;
    let answer = client
        .send_streaming_message(send("agents/b", "hello"))
        .await
        .unwrap();
    let said = answer
        .metadata()
        .get("x-agent-said")
        .map(|v| v.to_str().unwrap().to_string());
    assert_eq!(
        said.as_deref(),
        Some("stream"),
        "the agent's own metadata: passed through"
    );
    let (items, status) = read_all(&mut answer.into_inner()).await;
    assert!(status.is_none(), "{status:?}");
    assert_eq!(items.len(), 3, "{items:?}");
    let Some(v1::stream_response::Payload::Task(task)) = &items[0].payload else {
        panic!("the task first: {items:?}");
    };
    let Some(v1::stream_response::Payload::StatusUpdate(last)) = &items[2].payload else {
        panic!("a status update last: {items:?}");
    };
    assert_eq!(
        last.status.as_ref().map(|s| s.state),
        Some(v1::TaskState::Completed as i32)
    );
    // At the root, with no tenant: the owner learned from b's stream.
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
    assert_eq!(rpcs(&b), ["SendStreamingMessage", "GetTask"]);
    assert!(rpcs(&a).is_empty(), "{:?}", rpcs(&a));
    // The tenant that named the agent is the gateway's: b saw none.
    let seen = &b.calls()[0].message;
    assert!(!seen.contains("agents/b"), "{seen}");
    counted(&gw, r#"family="stream""#).await;
}

#[tokio::test]
async fn an_agents_error_after_a_message_comes_back_as_it_said_it_and_is_counted() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("g", &agent.url())], "").await;
    let mut client = client_of(&gw).await;
    let answer = client
        .send_streaming_message(send("", "break"))
        .await
        .unwrap();
    let (items, status) = read_all(&mut answer.into_inner()).await;
    assert_eq!(items.len(), 1, "the task, then the error: {items:?}");
    let status = status.expect("the agent's error");
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(
        status.message(),
        "the agent broke off",
        "as the agent said it"
    );
    // UNAVAILABLE with no ErrorInfo reads as the agent unavailable.
    let lines = counted(&gw, r#"family="stream""#).await;
    let line = lines
        .lines()
        .find(|l| l.contains(r#"family="stream""#))
        .unwrap_or_default();
    assert!(
        !line.contains(r#"error="none""#),
        "counted as an error: {lines}"
    );
}

#[tokio::test]
async fn a_passed_stream_ends_at_the_clients_grpc_timeout() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(&[("g", &agent.url())], "").await;
    let mut client = client_of(&gw).await;
    let mut request = tonic::Request::new(send("", "slow"));
    request.set_timeout(Duration::from_millis(1000));
    let started = std::time::Instant::now();
    let answer = client.send_streaming_message(request).await.unwrap();
    let (items, status) = read_all(&mut answer.into_inner()).await;
    let status = status.expect("ended by the deadline");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    // Messages come every 400 ms: two before the deadline, not three.
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_passed_stream_that_goes_quiet_ends_with_the_idle_status() {
    let agent = MockGrpcAgent::start().await;
    let gw = TestGateway::start(
        &[("g", &agent.url())],
        "[limits]\nsse_idle_timeout = \"150ms\"\n",
    )
    .await;
    let mut client = client_of(&gw).await;
    let answer = client
        .send_streaming_message(send("", "slow"))
        .await
        .unwrap();
    let (items, status) = read_all(&mut answer.into_inner()).await;
    assert!(items.is_empty(), "{items:?}");
    let status = status.expect("ended by the gateway");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    let reason = status.get_details_error_info().map(|i| i.reason);
    assert_eq!(reason.as_deref(), Some("UPSTREAM_STREAM_IDLE"));
    assert!(
        status.message().contains("upstream 'g'"),
        "{}",
        status.message()
    );
    counted(&gw, r#"error="upstream_stream_idle""#).await;
}
