//! A gRPC call's metadata goes the way a JSON-RPC call's headers go (issue
//! #53, item 5): `a2a-skill` routes it, `a2a-extensions` reaches the
//! agent, and the caller's rate limit holds, with the status the one
//! table names for the gRPC binding.

use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use a2a_gateway::a2a::grpc::v1;
use serde_json::json;
use tonic::Code;
use tonic_types::StatusExt;
use v1::a2a_service_client::A2aServiceClient;

/// A mock agent whose card has the one skill `skill`.
async fn agent_with(skill: &str) -> MockAgent {
    let mock = MockAgent::start(Mode::Normal).await;
    let mut card = default_card(&mock.url());
    card["skills"] = json!([{"id": skill, "name": skill,
        "description": format!("The {skill} skill"), "tags": [skill]}]);
    mock.set_card(Some(card));
    mock
}

fn send(metadata: &[(&'static str, &str)]) -> tonic::Request<v1::SendMessageRequest> {
    let mut request = tonic::Request::new(crate::support::calls::grpc_send("hello"));
    for (name, value) in metadata {
        request.metadata_mut().insert(*name, value.parse().unwrap());
    }
    request
}

async fn client(gw: &TestGateway) -> A2aServiceClient<tonic::transport::Channel> {
    A2aServiceClient::connect(format!("http://{}", gw.addr()))
        .await
        .unwrap()
}

#[tokio::test]
async fn a2a_skill_routes_and_a2a_extensions_reach_the_agent() {
    let flights = agent_with("book-flight").await;
    let hotels = agent_with("find-hotel").await;
    let gw = TestGateway::start(
        &[("flights", &flights.url()), ("hotels", &hotels.url())],
        "",
    )
    .await;
    let mut grpc = client(&gw).await;
    let extension = "https://ext.example/a2a/trace/v1";
    for _ in 0..2 {
        let metadata = [("a2a-skill", "find-hotel"), ("a2a-extensions", extension)];
        grpc.send_message(send(&metadata))
            .await
            .expect("routed by skill");
    }
    assert_eq!((flights.request_count(), hotels.request_count()), (0, 2));
    let sent = hotels
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let said = sent
        .header("a2a-extensions")
        .or(sent.header("x-a2a-extensions"));
    assert_eq!(
        said,
        Some(extension),
        "the extensions, as the agent's version says them"
    );
    grpc.send_message(send(&[("a2a-skill", "book-flight")]))
        .await
        .expect("routed by skill");
    assert_eq!((flights.request_count(), hotels.request_count()), (1, 2));

    let unknown = grpc
        .send_message(send(&[("a2a-skill", "juggling")]))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::InvalidArgument, "{unknown:?}");
    let reason = unknown.get_details_error_info().map(|i| i.reason);
    assert_eq!(reason.as_deref(), Some("UNKNOWN_SKILL"));
    assert!(
        unknown.message().contains("juggling"),
        "{}",
        unknown.message()
    );
}

#[tokio::test]
async fn the_callers_rate_limit_is_resource_exhausted() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("a", &agent.url())],
        "[rate_limits]\nper_caller = { per_minute = 2 }\n",
    )
    .await;
    let mut grpc = client(&gw).await;
    grpc.send_message(send(&[])).await.expect("first");
    grpc.send_message(send(&[])).await.expect("second");
    let limited = grpc.send_message(send(&[])).await.unwrap_err();
    assert_eq!(limited.code(), Code::ResourceExhausted, "{limited:?}");
    let reason = limited.get_details_error_info().map(|i| i.reason);
    assert_eq!(reason.as_deref(), Some("RATE_LIMITED"));
    assert_eq!(
        agent.request_count(),
        2,
        "the third call did not reach the agent"
    );
}
