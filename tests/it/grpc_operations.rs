//! The operator's gRPC services on the main listener (issue #53, item 6):
//! the health checking protocol follows the gateway's readiness, a watch
//! ends when the gateway drains, and server reflection lists and describes
//! the services so that grpcurl needs no protos.

use std::time::Duration;

use prost::Message as _;

use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

async fn channel(gw: &TestGateway) -> Channel {
    Channel::from_shared(format!("http://{}", gw.addr()))
        .unwrap()
        .connect()
        .await
        .expect("the gateway takes h2c")
}

fn asked(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.into(),
    }
}

#[tokio::test]
async fn health_follows_readiness_and_a_watch_ends_with_the_drain() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut health = HealthClient::new(channel(&gw).await);
    for service in ["", "lf.a2a.v1.A2AService"] {
        let answer = health.check(asked(service)).await.expect("answered");
        assert_eq!(
            answer.into_inner().status,
            ServingStatus::Serving as i32,
            "{service:?}"
        );
    }
    let unknown = health.check(asked("no.Such")).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert!(unknown.message().contains("no.Such"), "{unknown:?}");

    let mut watch = health.watch(asked("")).await.unwrap().into_inner();
    let first = watch.message().await.unwrap().expect("the status now");
    assert_eq!(first.status, ServingStatus::Serving as i32);
    let drained = tokio::spawn(gw.running.shutdown());
    let next = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("the drain is said")
        .unwrap()
        .expect("NOT_SERVING");
    assert_eq!(next.status, ServingStatus::NotServing as i32);
    let end = tokio::time::timeout(Duration::from_secs(5), watch.message()).await;
    assert!(matches!(end, Ok(Ok(None))), "the watch ends: {end:?}");
    tokio::time::timeout(Duration::from_secs(5), drained)
        .await
        .expect("no watch holds the drain")
        .unwrap();
}

#[tokio::test]
async fn health_is_not_serving_while_no_card_is_fetched() {
    let closed = ClosedPort::new();
    let gw = TestGateway::start(&[("gone", &closed.url())], "").await;
    let mut health = HealthClient::new(channel(&gw).await);
    let answer = health.check(asked("")).await.expect("answered");
    assert_eq!(answer.into_inner().status, ServingStatus::NotServing as i32);
}

#[tokio::test]
async fn reflection_lists_and_describes_the_services_in_both_versions() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let client = ServerReflectionClient::new(channel(&gw).await);
    let ask = |ask| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(ask),
    };
    let reflect = |request: ServerReflectionRequest| {
        let mut client = client.clone();
        async move {
            let mut answers = client
                .server_reflection_info(futures_util::stream::iter([request]))
                .await
                .unwrap()
                .into_inner();
            answers
                .message()
                .await
                .map(|m| m.and_then(|m| m.message_response))
        }
    };
    let Some(MessageResponse::ListServicesResponse(list)) =
        reflect(ask(MessageRequest::ListServices(String::new())))
            .await
            .unwrap()
    else {
        panic!("a list of services");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "lf.a2a.v1.A2AService",
        "a2a.v1.A2AService",
        "grpc.health.v1.Health",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let symbol = MessageRequest::FileContainingSymbol("lf.a2a.v1.A2AService".into());
    let Some(MessageResponse::FileDescriptorResponse(files)) = reflect(ask(symbol)).await.unwrap()
    else {
        panic!("the file that declares the service");
    };
    let file =
        pbjson_types::FileDescriptorProto::decode(&files.file_descriptor_proto[0][..]).unwrap();
    assert_eq!(file.package(), "lf.a2a.v1");
    // What it imports is there too (grpcurl asks for each by name).
    assert!(!file.dependency.is_empty());
    for name in &file.dependency {
        let by_name = MessageRequest::FileByFilename(name.clone());
        let answer = reflect(ask(by_name)).await.unwrap();
        assert!(
            matches!(answer, Some(MessageResponse::FileDescriptorResponse(_))),
            "{name}: {answer:?}"
        );
    }
    let unknown = MessageRequest::FileContainingSymbol("lf.a2a.v1.Nope".into());
    let error = reflect(ask(unknown)).await.unwrap_err();
    assert_eq!(error.code(), tonic::Code::NotFound, "{error:?}");

    // grpcurl's older protocol too.
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient as Alpha;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest as AlphaAsk;
    let request = tonic_reflection::pb::v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(AlphaAsk::ListServices(String::new())),
    };
    let mut alpha = Alpha::new(channel(&gw).await);
    let answer = alpha
        .server_reflection_info(futures_util::stream::iter([request]))
        .await
        .unwrap()
        .into_inner()
        .message()
        .await
        .unwrap()
        .expect("an answer");
    assert!(format!("{answer:?}").contains("lf.a2a.v1.A2AService"));
}
