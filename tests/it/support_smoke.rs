//! Proves the test support code (mock agent + client) works on its own.
use crate::support::calls::rpc_raw;
use std::time::{Duration, Instant};

use crate::support::client::{self, SseParser};
use crate::support::mock_agent::{MockAgent, Mode, GARBAGE};
use bytes::Bytes;
use http::{StatusCode, Version};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(5);

fn v03_message(text: &str) -> Value {
    json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
                       "parts": [{"kind": "text", "text": text}]}})
}

fn v10_message(text: &str) -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn event_json(event: &str) -> Value {
    serde_json::from_str(event).expect("SSE data is JSON")
}

#[tokio::test]
async fn message_send_over_http1_and_h2_mirrors_id_and_has_03_shape() {
    let mock = MockAgent::start(Mode::Normal).await;
    let body = rpc_raw(r#""req-1""#, "message/send", v03_message("hi"));
    let reply = client::post_json(&mock.url(), body, &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let v = reply.json();
    assert_eq!(v["id"], "req-1");
    assert_eq!(v["result"]["kind"], "task");
    assert_eq!(v["result"]["status"]["state"], "completed");
    assert_eq!(v["result"]["artifacts"][0]["parts"][0]["text"], "echo: hi");

    let body = rpc_raw("1.50", "message/send", v03_message("two"));
    let reply = client::post_json_h2(&mock.url(), body, &[]).await;
    assert_eq!(reply.version, Version::HTTP_2);
    assert!(
        reply.text().contains(r#""id":1.50,"#),
        "raw id kept: {}",
        reply.text()
    );
    assert_eq!(
        reply.json()["result"]["artifacts"][0]["parts"][0]["text"],
        "echo: two"
    );

    let versions: Vec<Version> = mock.requests().iter().map(|r| r.http_version).collect();
    assert_eq!(versions, [Version::HTTP_11, Version::HTTP_2]);
}

#[tokio::test]
async fn other_methods_answer_in_their_version_shape() {
    let mock = MockAgent::start(Mode::Normal).await;
    let url = mock.url();
    let send = |body: String| client::post_json(&url, body, &[]);

    let v = send(rpc_raw("7", "SendMessage", v10_message("x")))
        .await
        .json();
    assert_eq!(v["id"], 7);
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"][0],
        json!({"text": "echo: x"})
    );

    let params = json!({"id": "t-9", "sessionId": "s-1",
        "message": {"role": "user", "parts": [{"type": "text", "text": "old"}]}});
    let v = send(rpc_raw("null", "tasks/send", params)).await.json();
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["result"]["id"], "t-9");
    assert_eq!(v["result"]["artifacts"][0]["parts"][0]["text"], "echo: old");

    let v = send(rpc_raw("1", "GetTask", json!({"id": "t-3"})))
        .await
        .json();
    assert_eq!(
        v["result"],
        json!({"id": "t-3", "contextId": "ctx-0",
                                   "status": {"state": "TASK_STATE_COMPLETED"}})
    );
    let v = send(rpc_raw("2", "tasks/cancel", json!({"id": "t-4"})))
        .await
        .json();
    assert_eq!(v["result"]["kind"], "task");
    assert_eq!(v["result"]["status"]["state"], "canceled");
    let v = send(rpc_raw("3", "ListTasks", json!({}))).await.json();
    assert_eq!(v["result"], json!({"tasks": []}));
    let push = json!({"taskId": "t-1", "url": "https://hook.example/x"});
    let v = send(rpc_raw(
        "4",
        "CreateTaskPushNotificationConfig",
        push.clone(),
    ))
    .await
    .json();
    assert_eq!(v["result"], push);
    let v = send(rpc_raw("5", "GetExtendedAgentCard", json!({})))
        .await
        .json();
    assert_eq!(v["result"]["name"], "Mock Agent");
    let v = send(rpc_raw("6", "nope/nothing", json!({}))).await.json();
    assert_eq!(v["error"]["code"], -32601);
    let v = send("{not json".to_string()).await.json();
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
}

#[tokio::test]
async fn streaming_gives_three_events_then_end() {
    let mock = MockAgent::start(Mode::Normal).await;
    let body = rpc_raw(r#""s-1""#, "message/stream", v03_message("hi"));
    let mut sse = client::post_stream(&mock.url(), body, &[]).await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.headers["content-type"], "text/event-stream");
    let events: Vec<Value> = sse
        .collect_events(WAIT)
        .await
        .iter()
        .map(|e| event_json(e))
        .collect();
    let kinds: Vec<&Value> = events.iter().map(|e| &e["result"]["kind"]).collect();
    assert_eq!(kinds, ["status-update", "artifact-update", "status-update"]);
    assert!(events.iter().all(|e| e["id"] == "s-1"));
    assert_eq!(events[2]["result"]["final"], true);
    assert_eq!(sse.error(), None);

    let body = rpc_raw("9", "SendStreamingMessage", v10_message("hi"));
    let mut sse = client::post_stream(&mock.url(), body, &[]).await;
    let events = sse.collect_events(WAIT).await;
    assert_eq!(events.len(), 3);
    let last = event_json(&events[2]);
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(event_json(&events[1])["result"]["artifactUpdate"].is_object());
}

#[tokio::test]
async fn gate_last_holds_the_last_event_until_released() {
    let mode = Mode::Stream {
        events: 3,
        interval_ms: 10,
        gate_last: true,
    };
    let mock = MockAgent::start(mode).await;
    let body = rpc_raw("1", "message/stream", v03_message("hi"));
    let mut sse = client::post_stream(&mock.url(), body.clone(), &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    assert!(sse.next_event(WAIT).await.is_some());
    let held = sse.try_next_event(Duration::from_millis(300)).await;
    assert!(held.is_err(), "last event must wait for release_stream()");
    mock.release_stream();
    let last = event_json(&sse.next_event(WAIT).await.expect("last event"));
    assert_eq!(last["result"]["final"], true);
    assert_eq!(sse.next_event(WAIT).await, None);

    // A release that comes before the stream reaches the gate is kept.
    mock.release_stream();
    let mut sse = client::post_stream(&mock.url(), body, &[]).await;
    assert_eq!(sse.collect_events(WAIT).await.len(), 3);
    assert!(!mock.stream_closed_by_peer());
}

#[tokio::test]
async fn dropping_an_sse_stream_is_noticed_by_the_mock() {
    let mode = Mode::Stream {
        events: 3,
        interval_ms: 0,
        gate_last: true,
    };
    let mock = MockAgent::start(mode).await;
    let body = rpc_raw("1", "SendStreamingMessage", v10_message("hi"));
    let mut sse = client::post_stream(&mock.url(), body, &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    assert!(!mock.stream_closed_by_peer());
    drop(sse);
    assert!(mock.wait_stream_closed(WAIT).await);
}

#[tokio::test]
async fn reset_mid_stream_ends_the_stream_with_an_error() {
    let mock = MockAgent::start(Mode::ResetMidStream { events_before: 1 }).await;
    let body = rpc_raw("1", "message/stream", v03_message("hi"));
    let mut sse = client::post_stream(&mock.url(), body, &[]).await;
    assert!(sse.next_event(WAIT).await.is_some());
    assert_eq!(sse.next_event(WAIT).await, None);
    assert!(sse.error().is_some(), "an abort is not a clean end");
}

#[tokio::test]
async fn fixed_returns_exact_bytes_for_posts_only() {
    let bytes = Bytes::from_static(b"{ \"odd\" :\t1 }\n\xff");
    let mode = Mode::Fixed {
        status: 502,
        content_type: "text/x-odd".into(),
        body: bytes.clone(),
    };
    let mock = MockAgent::start(mode).await;
    let reply = client::post_json(&mock.url(), "{}", &[]).await;
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY);
    assert_eq!(reply.header("content-type"), Some("text/x-odd"));
    assert_eq!(reply.body, bytes);
    let card = client::get(&format!("{}/.well-known/agent-card.json", mock.url()), &[]).await;
    assert_eq!(card.status, StatusCode::OK);
}

#[tokio::test]
async fn card_is_served_at_both_well_known_paths() {
    let mock = MockAgent::start(Mode::Normal).await;
    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let reply = client::get(&format!("{}{path}", mock.url()), &[]).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        let card = reply.json();
        assert_eq!(card["url"], format!("{}/", mock.url()));
        assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    }
    mock.set_card(None);
    let reply = client::get(&format!("{}/.well-known/agent.json", mock.url()), &[]).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let other = client::get(&format!("{}/elsewhere", mock.url()), &[]).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn garbage_and_close_immediately_fail_fast() {
    let mock = MockAgent::start(Mode::Garbage).await;
    let body = rpc_raw("1", "message/send", v03_message("hi"));
    let error = client::try_post_json(&mock.url(), body.clone(), &[]).await;
    assert!(error.is_err(), "garbage must not parse: {error:?}");
    assert_eq!(
        mock.request_count(),
        1,
        "garbage mode still records the request"
    );
    assert_eq!(mock.requests()[0].body, body.as_bytes());
    let raw = client::raw_http(mock.addr(), b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", WAIT).await;
    assert_eq!(raw, GARBAGE);
    // request_count() counts JSON-RPC POSTs; the raw GET is in all_requests().
    assert_eq!(mock.all_requests().len(), 2);

    mock.set_mode(Mode::CloseImmediately);
    let error = client::try_post_json(&mock.url(), body, &[]).await;
    assert!(error.is_err(), "closed connection must fail: {error:?}");
    assert_eq!(
        mock.all_requests().len(),
        2,
        "nothing is read, so nothing is recorded"
    );
    assert_eq!(mock.connection_count(), 3);
}

#[tokio::test]
async fn hang_records_then_never_answers_and_delay_waits() {
    let mock = MockAgent::start(Mode::Hang).await;
    let request = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}";
    let raw = client::raw_http(mock.addr(), request, Duration::from_millis(300)).await;
    assert!(raw.is_empty());
    assert!(mock.wait_requests(1, WAIT).await);

    mock.set_mode(Mode::Delay { ms: 200 });
    let started = Instant::now();
    let reply = client::post_json(&mock.url(), rpc_raw("1", "ListTasks", json!({})), &[]).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(reply.json()["result"], json!({"tasks": []}));
}

#[tokio::test]
async fn requests_are_recorded_byte_for_byte() {
    let mock = MockAgent::start(Mode::Normal).await;
    let body = "{ \"jsonrpc\":\"2.0\" , \"id\" : 3,\n\"method\":\"message/send\",\"params\":{\"message\":{\"parts\":[{\"kind\":\"text\",\"text\":\"h\u{e9}\"}]}} }";
    let headers = [
        ("authorization", "Bearer t0k"),
        ("content-type", "application/json; charset=utf-8"),
    ];
    let url = format!("{}/a/b?x=1", mock.url());
    let reply = client::post_json(&url, body, &headers).await;
    assert_eq!(
        reply.json()["result"]["artifacts"][0]["parts"][0]["text"],
        "echo: h\u{e9}"
    );
    let recorded = &mock.requests()[0];
    assert_eq!(recorded.method, http::Method::POST);
    assert_eq!(recorded.path_and_query, "/a/b?x=1");
    assert_eq!(recorded.body, body.as_bytes());
    assert_eq!(recorded.header("authorization"), Some("Bearer t0k"));
    assert_eq!(recorded.headers.get_all("content-type").iter().count(), 1);
    assert_eq!(
        recorded.header("content-type"),
        Some("application/json; charset=utf-8")
    );
}

#[test]
fn sse_parser_handles_splits_batches_and_multiline_data() {
    let mut parser = SseParser::new();
    assert!(parser.push(b"data: {\"a\"").is_empty());
    assert!(parser.push(b":1}\n").is_empty());
    assert_eq!(
        parser.push(b"\ndata: two\n\n: comment\n\ndata:three\r\n\r\n"),
        ["{\"a\":1}", "two", "three"]
    );
    let events = client::parse_sse(b"event: x\ndata: l1\ndata: l2\nid: 5\n\ndata: partial");
    assert_eq!(events, ["l1\nl2"]);
}
