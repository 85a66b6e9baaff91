//! The gRPC front door (issue #53, in part): an A2A 1.0 gRPC client, over
//! h2c, reaches JSON-RPC agents through the gateway, with the gateway's
//! authentication, and gets each failure as a gRPC status with its
//! `google.rpc.ErrorInfo`; streams are the agent's events, each a
//! `StreamResponse`. The 0.3 service has its own tests (`grpc_v03.rs`).

use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use a2a_gateway::a2a::grpc::v1;
use serde_json::json;
use tonic::Code;
use tonic_types::StatusExt;
use v1::a2a_service_client::A2aServiceClient;

async fn client(gw: &TestGateway) -> A2aServiceClient<tonic::transport::Channel> {
    A2aServiceClient::connect(format!("http://{}", gw.addr()))
        .await
        .expect("the gateway takes h2c")
}

fn send(text: &str) -> v1::SendMessageRequest {
    crate::support::calls::grpc_send(text)
}

fn reason(status: &tonic::Status) -> Option<String> {
    status.get_details_error_info().map(|info| info.reason)
}

#[tokio::test]
async fn a_grpc_send_reaches_a_json_rpc_agent_and_comes_back_as_a_task() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let answer = client(&gw)
        .await
        .send_message(send("hello"))
        .await
        .expect("answered");
    let task = match answer.into_inner().payload {
        Some(v1::send_message_response::Payload::Task(task)) => task,
        other => panic!("a task expected: {other:?}"),
    };
    assert!(!task.id.is_empty());
    assert_eq!(task.status.unwrap().state, v1::TaskState::Completed as i32);
    let call = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let body = call.json();
    assert_eq!(body["method"], "SendMessage", "{body}");
    assert_eq!((&body["jsonrpc"], &body["id"]), (&json!("2.0"), &json!(1)));
    assert_eq!(body["params"]["message"]["parts"][0]["text"], "hello");
    assert_eq!(body["params"]["message"]["role"], "ROLE_USER");
    assert_eq!(call.header("a2a-version"), Some("1.0"));
    assert_eq!(call.header("content-type"), Some("application/json"));
    assert!(call.header("te").is_none() && call.header("grpc-timeout").is_none());

    // And a task read back by id.
    let got = client(&gw)
        .await
        .get_task(v1::GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("answered");
    assert_eq!(got.into_inner().id, task.id);
}

#[tokio::test]
async fn an_agents_error_is_the_grpc_status_the_table_names() {
    let agent = MockAgent::start(Mode::Normal).await;
    agent.set_owned_tasks_only(true);
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let request = v1::GetTaskRequest {
        id: "no-such-task".into(),
        ..Default::default()
    };
    let status = client(&gw).await.get_task(request).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(reason(&status).as_deref(), Some("TASK_NOT_FOUND"));
}

#[tokio::test]
async fn an_agent_that_is_down_is_unavailable() {
    let closed = ClosedPort::new();
    let gw = TestGateway::start(&[("gone", &closed.url())], "").await;
    let status = client(&gw).await.send_message(send("x")).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("gone"), "{status:?}");
    assert_eq!(reason(&status).as_deref(), Some("UPSTREAM_UNAVAILABLE"));
}

#[tokio::test]
async fn credentials_come_from_metadata() {
    use sha2::Digest;
    let agent = MockAgent::start(Mode::Normal).await;
    let digest = hex::encode(sha2::Sha256::digest(b"grpc-s3cret"));
    let auth = format!(
        "[auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\nkeys = [{{ id = \"g\", sha256 = \"{digest}\" }}]\n"
    );
    let gw = TestGateway::start(&[("echo", &agent.url())], &auth).await;
    let status = client(&gw).await.send_message(send("x")).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    let mut request = tonic::Request::new(send("x"));
    request
        .metadata_mut()
        .insert("x-api-key", "grpc-s3cret".parse().unwrap());
    client(&gw)
        .await
        .send_message(request)
        .await
        .expect("the key is taken from metadata");
    let call = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert!(
        call.header("x-api-key").is_none(),
        "the gateway's credential is not forwarded"
    );
}

#[tokio::test]
async fn grpc_over_http_1_1_is_refused_with_a_grpc_status() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let request = b"POST /lf.a2a.v1.A2AService/SendMessage HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc\r\ncontent-length: 5\r\n\r\n\0\0\0\0\0";
    let answer =
        crate::support::client::raw_http(gw.addr(), request, std::time::Duration::from_secs(5))
            .await;
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("grpc-status: 3"),
        "{text}"
    );
    assert!(text.contains("HTTP/2"), "{text}");
}

#[tokio::test]
async fn a_message_the_gateway_refuses_is_invalid_argument() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut empty = send("x");
    if let Some(message) = empty.message.as_mut() {
        message.parts.clear();
    }
    let status = client(&gw).await.send_message(empty).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("parts"), "{status:?}");
    assert_eq!(
        agent
            .requests()
            .iter()
            .filter(|r| !r.is_card_fetch())
            .count(),
        0
    );
}

/// A raw gRPC request over h2c: its status, from the trailers-only answer.
async fn raw(gw: &TestGateway, path: &str, body: &'static [u8]) -> (String, String) {
    let url = format!("http://{}{path}", gw.addr());
    let headers = [("content-type", "application/grpc"), ("te", "trailers")];
    let reply = crate::support::client::post_json_h2(&url, body, &headers).await;
    assert_eq!(reply.status, 200);
    let status = reply.header("grpc-status").unwrap_or("-").to_string();
    let message = reply.header("grpc-message").unwrap_or("").to_string();
    (status, message)
}

#[tokio::test]
async fn malformed_or_unknown_calls_get_a_grpc_status_not_a_reset() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    // A frame that says 3 bytes of protobuf that is not one.
    let (status, why) = raw(
        &gw,
        "/lf.a2a.v1.A2AService/SendMessage",
        b"\0\0\0\0\x03\xff\xff\xff",
    )
    .await;
    assert_eq!(status, "3", "INVALID_ARGUMENT: {why}");
    assert!(why.contains("decode"), "{why}");
    // An unknown method of the service, and an unknown service.
    let (status, _) = raw(&gw, "/lf.a2a.v1.A2AService/Nope", b"\0\0\0\0\0").await;
    assert_eq!(status, "12");
    let (status, message) = raw(&gw, "/other.Service/Call", b"\0\0\0\0\0").await;
    assert_eq!(status, "12");
    assert!(message.contains("other.Service"), "{message}");
    assert_eq!(
        agent
            .requests()
            .iter()
            .filter(|r| !r.is_card_fetch())
            .count(),
        0
    );
}

#[tokio::test]
async fn a_grpc_stream_carries_each_event_as_it_comes() {
    let agent = MockAgent::start(Mode::Stream {
        events: 3,
        interval_ms: 20,
        gate_last: false,
    })
    .await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut stream = client(&gw)
        .await
        .send_streaming_message(send("stream please"))
        .await
        .expect("the stream starts")
        .into_inner();
    let mut items = Vec::new();
    while let Some(item) = stream.message().await.expect("no error in the stream") {
        items.push(item.payload.expect("each item says what it is"));
    }
    assert!(items.len() >= 3, "{items:?}");
    let call = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert_eq!(call.json()["method"], "SendStreamingMessage");
    let last_state = items.iter().rev().find_map(|p| match p {
        v1::stream_response::Payload::StatusUpdate(u) => u.status.as_ref().map(|s| s.state),
        v1::stream_response::Payload::Task(t) => t.status.as_ref().map(|s| s.state),
        _ => None,
    });
    assert!(last_state.is_some(), "{items:?}");
}

#[tokio::test]
async fn an_agent_that_dies_mid_stream_ends_the_grpc_stream_with_unavailable() {
    let agent = MockAgent::start(Mode::ResetMidStream { events_before: 1 }).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let mut stream = client(&gw)
        .await
        .send_streaming_message(send("x"))
        .await
        .expect("the stream starts")
        .into_inner();
    let first = stream.message().await.expect("the first event");
    assert!(first.is_some());
    let status = loop {
        match stream.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream ended without saying the agent died"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(reason(&status).as_deref(), Some("UPSTREAM_STREAM_BROKEN"));
}

#[tokio::test]
async fn a_message_over_the_body_limit_is_resource_exhausted() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("echo", &agent.url())],
        "[limits]\nmax_body_bytes = 4096\n",
    )
    .await;
    let status = client(&gw)
        .await
        .send_message(send(&"x".repeat(10_000)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        agent
            .requests()
            .iter()
            .filter(|r| !r.is_card_fetch())
            .count(),
        0
    );
}

/// A 1.0 call's message in gRPC's framing.
fn framed(message: &impl prost::Message) -> Vec<u8> {
    let bytes = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(&bytes);
    out
}

#[tokio::test]
async fn grpc_timeout_bounds_the_call_and_a_malformed_one_is_refused() {
    // Sent raw: tonic's client would time the call out on its own side.
    let timed = |rpc: &str, timeout: &'static str, body: Vec<u8>, gw: &TestGateway| {
        let url = format!("http://{}/lf.a2a.v1.A2AService/{rpc}", gw.addr());
        async move {
            let headers = [
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", timeout),
            ];
            let started = std::time::Instant::now();
            let reply = crate::support::client::post_json_h2(&url, body, &headers).await;
            (reply, started.elapsed())
        }
    };
    let agent = MockAgent::start(Mode::Delay { ms: 3_000 }).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let (reply, took) = timed("SendMessage", "200m", framed(&send("slow")), &gw).await;
    assert_eq!(reply.header("grpc-status"), Some("4"), "DEADLINE_EXCEEDED");
    assert!(
        took < std::time::Duration::from_millis(2_000),
        "at the deadline: {took:?}"
    );
    // The stream too: the agent sends an event every 300 ms, 20 of them.
    agent.set_mode(Mode::Stream {
        events: 20,
        interval_ms: 300,
        gate_last: false,
    });
    let (reply, took) = timed("SendStreamingMessage", "1S", framed(&send("s")), &gw).await;
    assert_eq!(reply.header("grpc-status"), Some("4"), "DEADLINE_EXCEEDED");
    assert!(!reply.body.is_empty(), "the events before it came");
    assert!(
        took < std::time::Duration::from_millis(4_000),
        "at the deadline: {took:?}"
    );

    for bad in ["", "1", "123456789S", "5x", "-5S", "5 S"] {
        let (reply, _) = timed("GetTask", bad, vec![0, 0, 0, 0, 0], &gw).await;
        assert_eq!(
            reply.header("grpc-status"),
            Some("3"),
            "grpc-timeout {bad:?}"
        );
        let why = reply.header("grpc-message").unwrap_or("");
        assert!(why.contains("grpc-timeout"), "{why}");
    }
}

#[tokio::test]
async fn grpc_web_is_not_taken_for_grpc() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let url = format!("http://{}/lf.a2a.v1.A2AService/SendMessage", gw.addr());
    let headers = [("content-type", "application/grpc-web+proto")];
    let reply = crate::support::client::post_json_h2(&url, &b"\0\0\0\0\0"[..], &headers).await;
    assert!(reply.status.is_client_error(), "{}", reply.status);
    assert!(
        reply.header("grpc-status").is_none(),
        "not answered as gRPC"
    );
    assert!(
        !reply.text().is_empty(),
        "an answer that says what is wrong"
    );
}

/// A raw gRPC request over h2c with `extra` headers: its status and its
/// message, percent-decoded.
async fn raw_call(
    gw: &TestGateway,
    path: &str,
    body: Vec<u8>,
    extra: &[(&str, &str)],
) -> (String, String) {
    let url = format!("http://{}{path}", gw.addr());
    let mut headers = vec![("content-type", "application/grpc"), ("te", "trailers")];
    headers.extend_from_slice(extra);
    let reply = crate::support::client::post_json_h2(&url, body, &headers).await;
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    let status = reply.header("grpc-status").unwrap_or("-").to_string();
    let message = reply.header("grpc-message").unwrap_or("");
    let message = percent_encoding::percent_decode_str(message).decode_utf8_lossy();
    (status, message.into_owned())
}

/// Every frame or decode fault, on both A2A services and on health, is
/// the client's: INVALID_ARGUMENT naming what was wrong (RESOURCE_EXHAUSTED
/// over the size limit), found where the frame is read, never INTERNAL.
#[tokio::test]
async fn each_frame_fault_is_invalid_argument_naming_it_on_every_service() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(
        &[("echo", &agent.url())],
        "[limits]\nmax_body_bytes = 4096\n",
    )
    .await;
    let ok = framed(&send("hi"));
    let mut compressed = ok.clone();
    compressed[0] = 1;
    let mut short = ok.clone();
    short.truncate(ok.len() - 3);
    let big = vec![b'x'; 10_000];
    let cases: [(&str, Vec<u8>, &str, &str); 7] = [
        (
            "not a frame",
            b"{\"a\":1}".to_vec(),
            "3",
            "compressed flag is 123",
        ),
        (
            "3 bytes",
            b"abc".to_vec(),
            "3",
            "short of the 5-byte frame head",
        ),
        ("no body", Vec::new(), "3", "no message"),
        ("prefix past the body", short, "3", "but the body holds"),
        (
            "compressed, no encoding",
            compressed,
            "3",
            "no grpc-encoding",
        ),
        (
            "not protobuf",
            b"\0\0\0\0\x03\xff\xff\xff".to_vec(),
            "3",
            "is not a valid",
        ),
        ("over the limit", big, "8", "over limits.max_body_bytes"),
    ];
    for path in [
        "/lf.a2a.v1.A2AService/SendMessage",
        "/a2a.v1.A2AService/SendMessage",
        "/grpc.health.v1.Health/Check",
    ] {
        for (what, body, code, says) in &cases {
            let (status, message) = raw_call(&gw, path, body.clone(), &[]).await;
            assert_eq!(&status, code, "{path}, {what}: {message}");
            assert!(message.contains(says), "{path}, {what}: {message}");
        }
    }
    // A known encoding the gateway does not take: UNIMPLEMENTED, as gRPC says.
    let mut gzip = ok.clone();
    gzip[0] = 1;
    let path = "/lf.a2a.v1.A2AService/SendMessage";
    let (status, message) = raw_call(&gw, path, gzip, &[("grpc-encoding", "gzip")]).await;
    assert_eq!(status, "12", "{message}");
    // The same frame, whole and uncompressed, is served.
    let (status, message) = raw_call(&gw, path, ok, &[]).await;
    assert_eq!(status, "0", "{message}");
    let calls = (agent.requests().iter())
        .filter(|r| !r.is_card_fetch())
        .count();
    assert_eq!(calls, 1, "only the good call reached the agent");
}

/// An `A2A-Version` the gateway does not speak is answered by the gateway,
/// in each binding, and counted as its class; no agent is asked. A spoken
/// version with a patch number is served.
#[tokio::test]
async fn an_a2a_version_the_gateway_does_not_speak_is_refused_in_every_binding() {
    use a2a_gateway::a2a::grpc::v03;
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let version = |v: &'static str| {
        let mut request = tonic::Request::new(send("hi"));
        request
            .metadata_mut()
            .insert("a2a-version", v.parse().unwrap());
        request
    };
    let status = client(&gw)
        .await
        .send_message(version("99.0"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented, "{status:?}");
    assert_eq!(reason(&status).as_deref(), Some("VERSION_NOT_SUPPORTED"));
    assert!(status.message().contains("'99.0'"), "{status:?}");
    assert!(status.message().contains("1.0, 0.3"), "{status:?}");
    let mut old =
        v03::a2a_service_client::A2aServiceClient::connect(format!("http://{}", gw.addr()))
            .await
            .unwrap();
    let mut request = tonic::Request::new(v03::SendMessageRequest::default());
    request
        .metadata_mut()
        .insert("a2a-version", "0.9".parse().unwrap());
    let status = old.send_message(request).await.unwrap_err();
    assert_eq!(
        status.code(),
        Code::Unimplemented,
        "the 0.3 service: {status:?}"
    );
    assert_eq!(reason(&status).as_deref(), Some("VERSION_NOT_SUPPORTED"));
    let rpc = r#"{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    let reply = crate::support::client::post_json(&gw.url(), rpc, &[("a2a-version", "2.0")]).await;
    assert_eq!(reply.json()["error"]["code"], -32009, "{}", reply.text());
    assert_eq!(reply.json()["id"], "x", "{}", reply.text());
    let url = format!("{}message:send?A2A-Version=1.5", gw.url());
    let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let reply = crate::support::client::post_json(&url, body, &[]).await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(
        reply.json()["error"]["status"],
        "UNIMPLEMENTED",
        "{}",
        reply.text()
    );
    let none = (agent.requests().iter())
        .filter(|r| !r.is_card_fetch())
        .count();
    assert_eq!(none, 0, "a refused version reached the agent");
    let metrics = crate::support::client::get(&format!("{}/metrics", gw.admin_url()), &[]).await;
    let refused: f64 = (metrics.text().lines())
        .filter(|l| l.starts_with("a2a_gateway_requests_total{"))
        .filter(|l| l.contains("error=\"version_not_supported\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(refused, 4.0, "{}", metrics.text());
    // 1.0 with a patch number is 1.0.
    client(&gw)
        .await
        .send_message(version("1.0.1"))
        .await
        .expect("served");
}

/// A tenant with a control character is refused, named escaped, before the
/// call goes anywhere (and so is one that names an agent the same way).
#[tokio::test]
async fn a_tenant_with_control_characters_is_invalid_argument() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    for tenant in ["ac\r\nme", "a\0b", "agents/echo\n"] {
        let mut request = send("hi");
        request.tenant = tenant.into();
        let status = client(&gw).await.send_message(request).await.unwrap_err();
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "{tenant:?}: {status:?}"
        );
        let named = format!("tenant '{}'", tenant.escape_default());
        assert!(status.message().contains(&named), "{tenant:?}: {status:?}");
    }
    let mut request = send("hi");
    request.tenant = "acme.eu-1/team_a~b".into();
    client(&gw)
        .await
        .send_message(request)
        .await
        .expect("an unreserved tenant passes");
    let calls = (agent.requests().into_iter())
        .filter(|r| !r.is_card_fetch())
        .collect::<Vec<_>>();
    assert_eq!(calls.len(), 1, "only the good tenant reached the agent");
    assert_eq!(calls[0].json()["params"]["tenant"], "acme.eu-1/team_a~b");
}
