//! Traces (issue #52): a server span per call continuing the client's
//! W3C context, a client span per agent call whose context the agent
//! receives, probe spans, the `a2a.*` attributes (on streams and on
//! failures too), both OTLP protocols, and a collector that is down
//! costing the traffic nothing while the lost spans are counted.

use std::time::Duration;

use crate::support::client;
use crate::support::closed_port::ClosedPort;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use crate::support::otlp::{Got, Receiver, SpanKind};

const PROMPT: Duration = Duration::from_secs(10);
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE}-{PARENT}-01")
}

async fn gateway(
    upstreams: &[(&str, &str)],
    receiver: &Receiver,
    protocol: &str,
    extra: &str,
) -> TestGateway {
    let telemetry = format!(
        "[telemetry]\notlp_endpoint = \"{}\"\notlp_protocol = \"{protocol}\"\nservice_name = \"gw-under-test\"\n{extra}",
        receiver.endpoint()
    );
    TestGateway::start(upstreams, &telemetry).await
}

fn one(spans: &[Got], kind: SpanKind) -> &Got {
    let of_kind: Vec<&Got> = spans.iter().filter(|s| s.kind() == kind).collect();
    assert_eq!(of_kind.len(), 1, "one {kind:?} span expected: {spans:#?}");
    of_kind[0]
}

/// `traceparent`'s trace id and parent span id.
fn parts(traceparent: &str) -> (String, String) {
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(fields.len(), 4, "{traceparent}");
    (fields[1].to_string(), fields[2].to_string())
}

#[tokio::test]
async fn a_call_continues_the_clients_trace_and_the_agent_gets_the_gateways_span_as_parent() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&[("echo", &agent.url())], &receiver, "grpc", "").await;
    let tp = traceparent();
    let headers = [("traceparent", tp.as_str()), ("tracestate", "vendor=1")];
    let reply = client::post_json(&gw.url(), crate::support::calls::send("t1"), &headers).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;

    let server = one(&spans, SpanKind::Server);
    let client = one(&spans, SpanKind::Client);
    assert_eq!(server.trace_id(), TRACE);
    assert_eq!(
        server.parent_id(),
        PARENT,
        "the server span is the client's span's child"
    );
    assert_eq!(client.trace_id(), TRACE);
    assert_eq!(client.parent_id(), server.span_id());
    assert_eq!(server.service.as_deref(), Some("gw-under-test"));

    let forwarded = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let (trace, parent) = parts(forwarded.header("traceparent").unwrap());
    assert_eq!(trace, TRACE);
    assert_eq!(
        parent,
        client.span_id(),
        "the agent's parent is the gateway's client span"
    );
    assert_eq!(forwarded.header("tracestate"), Some("vendor=1"));

    assert_eq!(server.span.name, "message/send");
    for (key, want) in [
        ("a2a.method", "message/send"),
        ("a2a.protocol.version", "0.3"),
        ("a2a.binding", "jsonrpc"),
        ("a2a.upstream", "echo"),
        ("a2a.routing.rule", "default"),
        ("a2a.outcome", "complete"),
        ("http.response.status_code", "200"),
        ("rpc.system", "jsonrpc"),
    ] {
        assert_eq!(
            server.attr(key).as_deref(),
            Some(want),
            "{key}: {server:#?}"
        );
    }
    assert!(server.attr("a2a.task.id").is_some(), "{server:#?}");
    assert!(server.attr("a2a.context.id").is_some(), "{server:#?}");
    assert!(server.attr("a2a.task.state").is_some(), "{server:#?}");
    assert_eq!(
        server.attr("a2a.agent.protocol.version"),
        None,
        "not translated"
    );
    assert_eq!(server.status(), 0);
    assert_eq!(
        client.attr("a2a.agent.protocol.version").as_deref(),
        Some("0.3")
    );
    assert_eq!(
        client.attr("server.port"),
        Some(agent.addr().port().to_string())
    );
    let attempts = client.events("attempt");
    assert_eq!(attempts.len(), 1, "{client:#?}");
    assert_eq!(
        crate::support::otlp::attr(&attempts[0].attributes, "http.response.status_code").as_deref(),
        Some("200")
    );
}

#[tokio::test]
async fn without_a_context_a_new_trace_starts_and_the_agent_is_told_it() {
    let receiver = Receiver::http().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&[("echo", &agent.url())], &receiver, "http/protobuf", "").await;
    let reply = client::post_json(&gw.url(), crate::support::calls::send("t2"), &[]).await;
    assert_eq!(reply.status, 200);
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;
    let server = one(&spans, SpanKind::Server);
    assert!(
        server.span.parent_span_id.is_empty(),
        "a root span: {server:#?}"
    );
    let forwarded = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let (trace, _) = parts(forwarded.header("traceparent").unwrap());
    assert_eq!(trace, server.trace_id());
}

#[tokio::test]
async fn a_translated_stream_has_one_span_for_its_life_with_its_events() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Stream {
        events: 3,
        interval_ms: 5,
        gate_last: false,
    })
    .await;
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n\
         [telemetry]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n\
         [[upstreams]]\nname = \"old\"\nurl = \"{}\"\nprotocol_versions = [\"0.3\"]\n",
        receiver.endpoint(),
        agent.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    // A 1.0 stream to an agent that speaks only 0.3: the bridge translates.
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let mut stream =
        client::post_stream(&gw.url(), body.to_string(), &[("a2a-version", "1.0")]).await;
    let events = stream.collect_events(PROMPT).await;
    assert!(events.len() >= 3, "{events:?}");
    drop(stream);
    // The stream's span ends when its record is written, as the body ends.
    tokio::time::sleep(Duration::from_millis(50)).await;
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(server.span.name, "SendStreamingMessage");
    assert_eq!(server.attr("a2a.protocol.version").as_deref(), Some("1.0"));
    assert_eq!(
        server.attr("a2a.agent.protocol.version").as_deref(),
        Some("0.3")
    );
    assert_eq!(server.attr("a2a.agent.binding").as_deref(), Some("jsonrpc"));
    let seen = server.events("sse event").len();
    assert!(seen >= 3, "{server:#?}");
    assert_eq!(server.attr("a2a.stream.events"), Some(seen.to_string()));
    assert!(server.attr("a2a.task.state").is_some(), "{server:#?}");
    let (start, end) = (
        server.span.start_time_unix_nano,
        server.span.end_time_unix_nano,
    );
    assert!(end > start);
}

#[tokio::test]
async fn stream_events_beyond_the_bound_are_counted_not_recorded() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Stream {
        events: 6,
        interval_ms: 1,
        gate_last: false,
    })
    .await;
    let gw = gateway(
        &[("echo", &agent.url())],
        &receiver,
        "grpc",
        "max_stream_events = 2\n",
    )
    .await;
    let mut stream = client::post_stream(
        &gw.url(),
        crate::support::calls::message("s", "message/stream"),
        &[],
    )
    .await;
    let events = stream.collect_events(PROMPT).await;
    drop(stream);
    tokio::time::sleep(Duration::from_millis(50)).await;
    gw.running.flush_traces().await;
    let spans = receiver
        .until(PROMPT, |s| s.iter().any(|g| g.kind() == SpanKind::Server))
        .await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(server.events("sse event").len(), 2, "{server:#?}");
    assert_eq!(
        server.attr("a2a.stream.events"),
        Some(events.len().to_string())
    );
    assert_eq!(
        server.attr("a2a.stream.events_dropped"),
        Some((events.len() - 2).to_string())
    );
}

#[tokio::test]
async fn an_agent_that_is_down_fails_both_spans_with_each_attempt_recorded() {
    let receiver = Receiver::grpc().await;
    let closed = ClosedPort::new();
    let gw = gateway(&[("gone", &closed.url())], &receiver, "grpc", "").await;
    let reply = client::post_json(&gw.url(), crate::support::calls::send("d"), &[]).await;
    assert_eq!(reply.status, 502, "{}", reply.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;
    let server = one(&spans, SpanKind::Server);
    let client = one(&spans, SpanKind::Client);
    assert_eq!(server.status(), 2, "{server:#?}");
    assert_eq!(server.attr("a2a.error.code").as_deref(), Some("-32050"));
    assert_eq!(
        server.attr("error.type").as_deref(),
        Some("upstream_unavailable")
    );
    assert_eq!(client.status(), 2, "{client:#?}");
    let attempts = client.events("attempt");
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        crate::support::otlp::attr(&attempts[0].attributes, "error.type").as_deref(),
        Some("upstream_unavailable")
    );
}

#[tokio::test]
async fn an_agent_that_times_out_is_said_as_a_timeout() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Hang).await;
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n[card_refresh]\ntimeout = \"1s\"\n\
         [telemetry]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n\
         [[upstreams]]\nname = \"slow\"\nurl = \"{}\"\nresponse_header_timeout = \"300ms\"\n",
        receiver.endpoint(),
        agent.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    let reply = client::post_json(&gw.url(), crate::support::calls::send("h"), &[]).await;
    assert_eq!(reply.status, 504, "{}", reply.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(
        server.attr("error.type").as_deref(),
        Some("upstream_timeout")
    );
    assert_eq!(server.status(), 2);
    assert_eq!(one(&spans, SpanKind::Client).status(), 2);
}

#[tokio::test]
async fn a_call_refused_by_auth_has_a_server_span_only_and_no_credential_in_it() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Normal).await;
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(b"sk-live-abcdef0123456789"));
    let auth = format!(
        "[auth.schemes.key]\ntype = \"apiKey\"\nin = \"header\"\nname = \"X-API-Key\"\nkeys = [{{ id = \"team-a\", sha256 = \"{digest}\" }}]\n"
    );
    let telemetry = format!(
        "[telemetry]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n",
        receiver.endpoint()
    );
    let gw = TestGateway::start(&[("echo", &agent.url())], &format!("{auth}{telemetry}")).await;
    let refused = client::post_json(
        &gw.url(),
        crate::support::calls::send("a"),
        &[("x-api-key", "wrong-key-0000000000")],
    )
    .await;
    assert_eq!(refused.status, 401);
    let ok = client::post_json(
        &gw.url(),
        crate::support::calls::send("b"),
        &[("x-api-key", "sk-live-abcdef0123456789")],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 3).await;
    let servers: Vec<&Got> = spans
        .iter()
        .filter(|s| s.kind() == SpanKind::Server)
        .collect();
    assert_eq!(servers.len(), 2, "{spans:#?}");
    let refused = servers
        .iter()
        .find(|s| s.attr("http.response.status_code").as_deref() == Some("401"))
        .unwrap();
    assert_eq!(refused.attr("a2a.error.code").as_deref(), Some("-32030"));
    assert_eq!(
        refused.status(),
        0,
        "a client's mistake is not the gateway's failure"
    );
    let allowed = servers
        .iter()
        .find(|s| s.attr("http.response.status_code").as_deref() == Some("200"))
        .unwrap();
    assert_eq!(allowed.attr("a2a.caller.id").as_deref(), Some("team-a"));
    assert_eq!(
        spans
            .iter()
            .filter(|s| s.kind() == SpanKind::Client)
            .count(),
        1
    );
    let everything = format!("{spans:?}");
    assert!(
        !everything.contains("sk-live"),
        "a credential reached a span"
    );
    assert!(
        !everything.contains("wrong-key"),
        "a credential reached a span"
    );
}

#[tokio::test]
async fn an_owner_probe_has_its_own_span_and_carries_its_context() {
    let receiver = Receiver::grpc().await;
    let a = MockAgent::start(Mode::Normal).await;
    let b = MockAgent::start(Mode::Normal).await;
    b.set_id_prefix("bee-");
    b.set_owned_tasks_only(true);
    a.set_owned_tasks_only(true);
    let gw = gateway(&[("a", &a.url()), ("b", &b.url())], &receiver, "grpc", "").await;
    // A task created by b without the gateway (as through another replica).
    let direct = client::post_json(&b.url(), crate::support::calls::send("direct"), &[]).await;
    let task = direct.json()["result"]["id"].as_str().unwrap().to_string();
    let get = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task}});
    let reply = client::post_json(&gw.url(), get.to_string(), &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.json()["result"].is_object(), "{}", reply.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 3).await;
    let server = one(&spans, SpanKind::Server);
    let probe = one(&spans, SpanKind::Internal);
    assert_eq!(probe.parent_id(), server.span_id());
    assert_eq!(probe.attr("a2a.task.id").as_deref(), Some(task.as_str()));
    assert_eq!(probe.attr("a2a.upstream").as_deref(), Some("b"));
    assert_eq!(server.attr("a2a.routing.rule").as_deref(), Some("affinity"));
    assert_eq!(server.attr("a2a.task.id").as_deref(), Some(task.as_str()));
    let probed = b.requests().into_iter().find(|r| {
        !r.is_card_fetch()
            && r.header("traceparent")
                .is_some_and(|tp| parts(tp).1 == probe.span_id())
    });
    assert!(
        probed.is_some(),
        "the probe's request carries the probe span as parent"
    );
}

#[tokio::test]
async fn a_collector_that_is_down_costs_the_traffic_nothing_and_the_lost_spans_are_counted() {
    let closed = ClosedPort::new();
    let agent = MockAgent::start(Mode::Normal).await;
    let telemetry = format!(
        "[telemetry]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n",
        closed.url()
    );
    let gw = TestGateway::start(&[("echo", &agent.url())], &telemetry).await;
    for i in 0..20 {
        let reply = client::post_json(
            &gw.url(),
            crate::support::calls::send(&format!("c{i}")),
            &[],
        )
        .await;
        assert_eq!(reply.status, 200);
    }
    gw.running.flush_traces().await;
    let metrics = client::get(&format!("{}/metrics", gw.admin_url()), &[])
        .await
        .text();
    let failed = metrics
        .lines()
        .find(|l| l.starts_with("a2a_gateway_trace_spans_total{result=\"export_failed\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok());
    assert!(
        failed.is_some_and(|n| n >= 40),
        "two spans a call, all lost: {metrics}"
    );
}

#[tokio::test]
async fn without_telemetry_the_agent_gets_the_clients_traceparent_untouched() {
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &agent.url())], "").await;
    let tp = traceparent();
    let reply = client::post_json(
        &gw.url(),
        crate::support::calls::send("u"),
        &[("traceparent", tp.as_str())],
    )
    .await;
    assert_eq!(reply.status, 200);
    let forwarded = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert_eq!(forwarded.header("traceparent"), Some(tp.as_str()));
}

#[tokio::test]
async fn a_rest_call_is_traced_in_its_binding() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&[("echo", &agent.url())], &receiver, "grpc", "").await;
    let body = serde_json::json!({"message": {"messageId": "r1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let tp = traceparent();
    let reply = client::post_json(
        &format!("{}message:send", gw.url()),
        body.to_string(),
        &[("traceparent", tp.as_str())],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    gw.running.flush_traces().await;
    let spans = receiver.until(PROMPT, |s| s.len() >= 2).await;
    let server = one(&spans, SpanKind::Server);
    assert_eq!(server.parent_id(), PARENT);
    assert_eq!(server.attr("a2a.binding").as_deref(), Some("http+json"));
    assert_eq!(server.attr("a2a.method").as_deref(), Some("SendMessage"));
    assert_eq!(server.attr("a2a.protocol.version").as_deref(), Some("1.0"));
    assert_eq!(server.attr("rpc.system"), None);
    // The mock speaks JSON-RPC only: the REST call went as JSON-RPC.
    assert_eq!(server.attr("a2a.agent.binding").as_deref(), Some("jsonrpc"));
}
