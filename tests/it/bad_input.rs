//! A catalogue of bad input sent through a real gateway to a real mock
//! upstream. Every case must get the right HTTP status and JSON-RPC code, the
//! request id mirrored byte for byte (or `null` when it could not be read), a
//! message that names the problem, and the upstream must never see it.
use crate::support::calls::rpc_raw;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::support::client::{self, Proto, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bound for raw exchanges and "answered promptly" checks.
const WAIT: Duration = Duration::from_secs(5);

// ------------------------------------------------------------ fixtures

struct Fixture {
    mock: MockAgent,
    gw: TestGateway,
}

/// A Normal mock behind a fresh gateway; `extra` is TOML for the gateway.
async fn fixture(extra: &str) -> Fixture {
    let mock = MockAgent::start(Mode::Normal).await;
    let gw = TestGateway::start(&[("echo", &mock.url())], extra).await;
    Fixture { mock, gw }
}

fn v03_message() -> Value {
    json!({"message": {"kind": "message", "messageId": "m-1", "role": "user",
                       "parts": [{"kind": "text", "text": "hi"}]}})
}

fn v10_message() -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
}

/// A valid `message/send`.
fn valid_send(raw_id: &str) -> String {
    rpc_raw(raw_id, "message/send", v03_message())
}

/// A valid `message/send` padded with insignificant whitespace to `len` bytes.
fn valid_send_of_len(len: usize) -> String {
    let mut body = valid_send("\"sized\"");
    assert!(
        body.len() < len,
        "the unpadded body is already {} bytes",
        body.len()
    );
    body.pop();
    body.push_str(&" ".repeat(len - body.len() - 1));
    body.push('}');
    assert_eq!(body.len(), len);
    body
}

/// The gateway still forwards a valid call and relays the upstream's answer.
async fn assert_still_serves(fx: &Fixture) {
    let before = fx.mock.request_count();
    let reply = client::post_json(&fx.gw.url(), valid_send(r#""after""#), &[]).await;
    assert_eq!(reply.status, StatusCode::OK, "valid call: {}", reply.text());
    let v = reply.json();
    assert_eq!(v["id"], "after");
    assert_eq!(v["result"]["kind"], "task", "{v}");
    assert_eq!(
        fx.mock.request_count(),
        before + 1,
        "the valid call reached the upstream"
    );
}

// ------------------------------------------------------------ expectations

/// What the gateway must answer.
#[derive(Clone, Copy, Debug)]
struct Expect {
    status: u16,
    code: i64,
    /// The response `id` as raw JSON text, e.g. `1.50`, `"a"` or `null`.
    id: &'static str,
    /// A substring of `error.message`.
    message: &'static str,
}

impl Expect {
    const fn with_status(self, status: u16) -> Expect {
        Expect { status, ..self }
    }
}

const fn rpc_error(code: i64, id: &'static str, message: &'static str) -> Expect {
    Expect {
        status: 200,
        code,
        id,
        message,
    }
}

const fn parse_error() -> Expect {
    rpc_error(-32700, "null", "invalid JSON")
}

/// One bad request body and the answer it must get.
struct Case {
    body: Bytes,
    want: Expect,
}

fn case(body: impl Into<Vec<u8>>, want: Expect) -> Case {
    Case {
        body: Bytes::from(body.into()),
        want,
    }
}

/// Checks a gateway-made JSON-RPC error response against `want`.
fn check(reply: &Reply, want: &Expect) -> Result<(), String> {
    let text = reply.text();
    if reply.status.as_u16() != want.status {
        return Err(format!(
            "status {} (want {}): {text}",
            reply.status, want.status
        ));
    }
    if reply.header("content-type") != Some("application/json") {
        return Err(format!(
            "content-type {:?}: {text}",
            reply.header("content-type")
        ));
    }
    let members: HashMap<String, Box<RawValue>> = serde_json::from_slice(&reply.body)
        .map_err(|e| format!("body is not a JSON object ({e}): {text}"))?;
    let raw = |name: &str| members.get(name).map(|v| v.get());
    if raw("jsonrpc") != Some("\"2.0\"") {
        return Err(format!("jsonrpc is not \"2.0\": {text}"));
    }
    if raw("id") != Some(want.id) {
        return Err(format!("id {:?} (want {}): {text}", raw("id"), want.id));
    }
    if members.contains_key("result") {
        return Err(format!("an error response has a result: {text}"));
    }
    let error: Value = raw("error")
        .and_then(|e| serde_json::from_str(e).ok())
        .ok_or_else(|| format!("no error object: {text}"))?;
    if error["code"] != want.code {
        return Err(format!(
            "code {} (want {}): {text}",
            error["code"], want.code
        ));
    }
    let message = error["message"].as_str().unwrap_or_default();
    if !message.contains(want.message) {
        return Err(format!("message {message:?} lacks {:?}", want.message));
    }
    Ok(())
}

fn label(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(100) {
        Some((i, _)) => format!("{:?}…", &text[..i]),
        None => format!("{text:?}"),
    }
}

/// Sends every case as `application/json`; reports every mismatch (and any
/// case that reached the upstream) at once.
async fn run_catalogue(fx: &Fixture, cases: &[Case]) {
    let mut failures = Vec::new();
    for case in cases {
        let before = fx.mock.request_count();
        let reply = client::post_json(&fx.gw.url(), case.body.clone(), &[]).await;
        if let Err(why) = check(&reply, &case.want) {
            failures.push(format!("{}: {why}", label(&case.body)));
        }
        if fx.mock.request_count() != before {
            failures.push(format!("{}: reached the upstream", label(&case.body)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n  {}",
        failures.len(),
        cases.len(),
        failures.join("\n  ")
    );
    assert_eq!(
        fx.mock.request_count(),
        0,
        "the upstream saw a rejected request"
    );
}

// ------------------------------------------------------------ catalogues

fn invalid_json_cases() -> Vec<Case> {
    let valid = valid_send("1");
    let truncated = &valid[..valid.len() / 2];
    [
        Vec::new(),
        b"   \r\n\t ".to_vec(),
        b"{".to_vec(),
        truncated.as_bytes().to_vec(),
        format!("{valid} trailing").into_bytes(),
        format!("{valid}}}").into_bytes(),
        format!("{valid}{valid}").into_bytes(),
        b"nonsense".to_vec(),
        br#"{'jsonrpc':'2.0','id':1,'method':'message/send'}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":1,"method":"message/send",}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":NaN,"method":"message/send"}"#.to_vec(),
        br#"{"jsonrpc":"2.0",/* comment */"id":1,"method":"message/send"}"#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"message/send\",\"params\":{\"x\":\"\xff\"}}"
            .to_vec(),
        b"[1,".to_vec(),
        br#"[{"jsonrpc":"2.0","id":1,"method":"message/send"}"#.to_vec(),
    ]
    .into_iter()
    .map(|body| case(body, parse_error()))
    .collect()
}

fn envelope_cases() -> Vec<Case> {
    let invalid = |id, message| rpc_error(-32600, id, message);
    let params = r#""params":{}"#;
    vec![
        // jsonrpc
        case(
            format!(r#"{{"id":1,"method":"message/send",{params}}}"#),
            invalid("1", "jsonrpc"),
        ),
        case(
            format!(r#"{{"jsonrpc":"1.0","id":"a","method":"message/send",{params}}}"#),
            invalid(r#""a""#, "jsonrpc"),
        ),
        case(
            format!(r#"{{"jsonrpc":2.0,"id":1.50,"method":"message/send",{params}}}"#),
            invalid("1.50", "jsonrpc"),
        ),
        case(
            format!(r#"{{"jsonrpc":null,"id":-0,"method":"message/send",{params}}}"#),
            invalid("-0", "jsonrpc"),
        ),
        case(
            format!(r#"{{"jsonrpc":"2.0 ","id":1e3,"method":"message/send",{params}}}"#),
            invalid("1e3", "jsonrpc"),
        ),
        // method
        case(
            format!(r#"{{"jsonrpc":"2.0","id":"m",{params}}}"#),
            invalid(r#""m""#, "method"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":7,"method":42}"#,
            invalid("7", "method"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":7,"method":null}"#,
            invalid("7", "method"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":7,"method":["message/send"]}"#,
            invalid("7", "method"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":7,"method":{"name":"x"}}"#,
            invalid("7", "method"),
        ),
        // params
        case(
            r#"{"jsonrpc":"2.0","id":"p","method":"message/send","params":"hello"}"#,
            invalid(r#""p""#, "params"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"message/send","params":5}"#,
            invalid("12345678901234567890123", "params"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":"a\u0041","method":"message/send","params":true}"#,
            invalid(r#""a\u0041""#, "params"),
        ),
        // id of the wrong type: unreadable, so null
        case(
            format!(r#"{{"jsonrpc":"2.0","id":{{"bad":1}},"method":"message/send",{params}}}"#),
            invalid("null", "id"),
        ),
        case(
            format!(r#"{{"jsonrpc":"2.0","id":[1],"method":"message/send",{params}}}"#),
            invalid("null", "id"),
        ),
        case(
            format!(r#"{{"jsonrpc":"2.0","id":true,"method":"message/send",{params}}}"#),
            invalid("null", "id"),
        ),
        case(
            format!(r#"{{"jsonrpc":"2.0","id":false,"method":"message/send",{params}}}"#),
            invalid("null", "id"),
        ),
        // not a request object
        case(r#""just a string""#, invalid("null", "object")),
        case("42", invalid("null", "object")),
        case("null", invalid("null", "object")),
        case("true", invalid("null", "object")),
        case(format!("[{}]", valid_send("1")), invalid("null", "batch")),
        case(
            format!("[{},{}]", valid_send("1"), valid_send("2")),
            invalid("null", "batch"),
        ),
        case("[]", invalid("null", "batch")),
        case(" \n [ ] ", invalid("null", "batch")),
        // Duplicate members could be read differently by the upstream
        // (which `method` counts?), so they are refused outright.
        case(
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","method":"message/send","params":{"id":"t"}}"#,
            invalid("null", "duplicate"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get","params":{"id":"t"}}"#,
            invalid("null", "duplicate"),
        ),
    ]
}

fn unknown_method_cases() -> Vec<Case> {
    let not_found = |id, message| rpc_error(-32601, id, message);
    let params = json!({});
    vec![
        case(
            rpc_raw("1", "sendmessage", &params),
            not_found("1", "'sendmessage'"),
        ),
        case(
            rpc_raw(r#""x""#, "message/Send", &params),
            not_found(r#""x""#, "'message/Send'"),
        ),
        case(
            rpc_raw("1.50", "SENDMESSAGE", &params),
            not_found("1.50", "SENDMESSAGE"),
        ),
        case(
            rpc_raw("null", "tasks/list", &params),
            not_found("null", "tasks/list"),
        ),
        case(
            rpc_raw("2", " message/send", &params),
            not_found("2", "' message/send'"),
        ),
        case(
            rpc_raw("3", "", &params),
            not_found("3", "is not an A2A method"),
        ),
        case(
            rpc_raw("4", "rpc.discover", &params),
            not_found("4", "rpc.discover"),
        ),
        // A notification (no id) still gets an answer over HTTP, with id null.
        case(
            r#"{"jsonrpc":"2.0","method":"nope/nothing","params":{}}"#,
            not_found("null", "nope/nothing"),
        ),
        // Quotes and control characters in the name stay valid JSON.
        case(
            r#"{"jsonrpc":"2.0","id":5,"method":"a\"b\n\u0000c"}"#,
            not_found("5", "is not an A2A method"),
        ),
    ]
}

fn invalid_params_cases() -> Vec<Case> {
    let bad = |id, message| rpc_error(-32602, id, message);
    let send_with = |message: Value| json!({ "message": message });
    let v01 = json!({"role": "user", "parts": [{"type": "text", "text": "hi"}]});
    vec![
        // message/send (0.3)
        case(
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send"}"#,
            bad("1", "params is required"),
        ),
        case(
            rpc_raw("2", "message/send", json!({})),
            bad("2", "params.message is required"),
        ),
        case(
            rpc_raw("3", "message/send", json!([v03_message()])),
            bad("3", "params must be an object"),
        ),
        case(
            rpc_raw(
                "4",
                "message/send",
                send_with(json!({"role": "user", "messageId": "m"})),
            ),
            bad("4", "params.message.parts is required"),
        ),
        case(
            rpc_raw(
                "5",
                "message/send",
                send_with(json!({"role": "user", "messageId": "m", "parts": []})),
            ),
            bad("5", "params.message.parts"),
        ),
        case(
            rpc_raw(
                "6",
                "message/send",
                send_with(json!({"role": "user", "messageId": "m", "parts": [{}, 3]})),
            ),
            bad("6", "params.message.parts[1]"),
        ),
        case(
            rpc_raw(
                "7",
                "message/send",
                send_with(json!({"role": "user", "parts": [{}]})),
            ),
            bad("7", "params.message.messageId"),
        ),
        case(
            rpc_raw(
                "8",
                "message/send",
                send_with(json!({"role": "boss", "messageId": "m", "parts": [{}]})),
            ),
            bad("8", "params.message.role"),
        ),
        // SendMessage (1.0)
        case(
            rpc_raw(r#""s""#, "SendMessage", json!({"message": "hi"})),
            bad(r#""s""#, "params.message"),
        ),
        case(
            rpc_raw(
                "1.50",
                "SendMessage",
                send_with(json!({"role": "ROLE_USER", "messageId": "m", "parts": "invalid"})),
            ),
            bad("1.50", "params.message.parts"),
        ),
        case(
            r#"{"jsonrpc":"2.0","id":9,"method":"SendStreamingMessage"}"#,
            bad("9", "params is required"),
        ),
        // tasks/send (0.1): the client picks the task id
        case(
            rpc_raw("10", "tasks/send", json!({ "message": v01 })),
            bad("10", "params.id"),
        ),
        case(
            rpc_raw(
                "11",
                "tasks/sendSubscribe",
                json!({"id": "", "message": v01}),
            ),
            bad("11", "params.id"),
        ),
        // tasks/get and GetTask
        case(
            rpc_raw("12", "tasks/get", json!({})),
            bad("12", "params.id is required"),
        ),
        case(
            rpc_raw("13", "GetTask", json!({"historyLength": 1})),
            bad("13", "params.id is required"),
        ),
        case(
            rpc_raw("14", "GetTask", json!({"id": ""})),
            bad("14", "params.id must not be empty"),
        ),
        case(
            rpc_raw("15", "GetTask", json!({"id": 5})),
            bad("15", "params.id must be a string"),
        ),
        case(
            rpc_raw("16", "tasks/get", json!({"id": "t", "historyLength": -1})),
            bad("16", "params.historyLength"),
        ),
        case(
            rpc_raw("17", "tasks/cancel", json!({})),
            bad("17", "params.id"),
        ),
        // push notification config
        case(
            rpc_raw(
                r#""push""#,
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t", "pushNotificationConfig": {"token": "x"}}),
            ),
            bad(r#""push""#, "params.pushNotificationConfig.url"),
        ),
        case(
            rpc_raw(
                "18",
                "tasks/pushNotificationConfig/set",
                json!({"taskId": "t"}),
            ),
            bad("18", "params.pushNotificationConfig"),
        ),
        case(
            rpc_raw(
                "19",
                "CreateTaskPushNotificationConfig",
                json!({"url": "https://hook"}),
            ),
            bad("19", "params.taskId"),
        ),
    ]
}

/// The negative cases of the A2A conformance suite (TCK).
fn conformance_cases() -> Vec<Case> {
    vec![
        case(
            r#"{"jsonrpc":"aaa","method":"SendMessage","params":{}}"#,
            rpc_error(-32600, "null", "jsonrpc"),
        ),
        case(
            r#"{"jsonrpc":"2.0","params":{}}"#,
            rpc_error(-32600, "null", "method"),
        ),
        case(
            r#"{"jsonrpc":"2.0","method":"SendMessageXXX","id":"3","params":{}}"#,
            rpc_error(-32601, r#""3""#, "SendMessageXXX"),
        ),
        case(
            r#"{"jsonrpc":"2.0","method":"SendMessage","params":{},"id":{"bad":"type"}}"#,
            rpc_error(-32600, "null", "id"),
        ),
        case(
            r#"{"jsonrpc":"2.0","method":"SendMessage","id":"4","params":{"":"not_a_dict"}}"#,
            rpc_error(-32602, r#""4""#, "params.message"),
        ),
        case(
            r#"{"jsonrpc":"2.0","method":"SendMessage","id":"5","params":{"message":{"parts":"invalid"}}}"#,
            rpc_error(-32602, r#""5""#, "params.message"),
        ),
    ]
}

// ------------------------------------------------------------ JSON-RPC level

#[tokio::test]
async fn invalid_json_is_a_parse_error_with_null_id() {
    let fx = fixture("").await;
    run_catalogue(&fx, &invalid_json_cases()).await;
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn envelope_problems_are_invalid_request_mirroring_a_readable_id() {
    let fx = fixture("").await;
    run_catalogue(&fx, &envelope_cases()).await;
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    let fx = fixture("").await;
    run_catalogue(&fx, &unknown_method_cases()).await;
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn a_huge_method_name_is_echoed_truncated() {
    let fx = fixture("").await;
    for unit in ["x", "ü"] {
        let name = unit.repeat(10 * 1024 / unit.len());
        let reply = client::post_json(&fx.gw.url(), rpc_raw("1", &name, json!({})), &[]).await;
        check(&reply, &rpc_error(-32601, "1", "is not an A2A method")).unwrap();
        assert!(
            reply.body.len() < 1024,
            "a 10 KB name must not be echoed whole: {} bytes",
            reply.body.len()
        );
        let message = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            message.contains(&unit.repeat(16)),
            "some of the name is shown: {message}"
        );
    }
    assert_eq!(fx.mock.request_count(), 0);
    assert_still_serves(&fx).await;
}

/// A `message/send` whose data part nests `depth` arrays deep.
fn deeply_nested_send(depth: usize) -> String {
    let data = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    let message = format!(
        r#"{{"kind":"message","messageId":"m-1","role":"user","parts":[{{"kind":"data","data":{{"v":{data}}}}}]}}"#
    );
    format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"message/send","params":{{"message":{message}}}}}"#
    )
}

/// What is inside a data part is the agent's business: structure the gateway
/// does not need must not make it refuse a request an agent would accept
/// (Python's json, under the official SDK, takes ~1000 levels). Absurd depth
/// must not crash it either.
#[tokio::test]
async fn deeply_nested_data_is_forwarded_not_refused() {
    let fx = fixture("").await;
    let body = deeply_nested_send(200);
    let reply = client::post_json(&fx.gw.url(), body.clone(), &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    let requests = fx.mock.requests();
    assert_eq!(
        requests.len(),
        1,
        "a valid message with a 200-deep data part must reach the upstream; the gateway answered {}",
        reply.text()
    );
    assert_eq!(requests[0].body, body.as_bytes());

    let reply = client::post_json(&fx.gw.url(), deeply_nested_send(100_000), &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        reply.json().is_object(),
        "a JSON-RPC answer: {}",
        reply.text()
    );
    let deep_top = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let reply = client::post_json(&fx.gw.url(), deep_top, &[]).await;
    check(&reply, &rpc_error(-32600, "null", "batch")).unwrap();
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn missing_or_wrong_params_are_invalid_params_naming_the_field() {
    let fx = fixture("").await;
    run_catalogue(&fx, &invalid_params_cases()).await;
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn conformance_suite_negative_cases() {
    let fx = fixture("").await;
    run_catalogue(&fx, &conformance_cases()).await;
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn the_whole_catalogue_on_one_gateway_leaves_it_serving() {
    let fx = fixture("").await;
    let all: Vec<Case> = [
        invalid_json_cases(),
        envelope_cases(),
        unknown_method_cases(),
        invalid_params_cases(),
        conformance_cases(),
    ]
    .into_iter()
    .flatten()
    .collect();
    run_catalogue(&fx, &all).await;
    let base = format!("http://{}", fx.gw.addr());
    for (method, path) in [
        (Method::GET, "/"),
        (Method::GET, "/nope"),
        (Method::PUT, "/"),
    ] {
        let url = format!("{base}{path}");
        let reply = client::request(method, &url, Bytes::new(), &[], Proto::Http1).await;
        assert!(reply.status.is_client_error(), "{}", reply.text());
    }
    assert_eq!(fx.mock.request_count(), 0);
    assert_still_serves(&fx).await;
    assert_still_serves(&fx).await;
}

/// A rejected request does not spoil its keep-alive connection: the next
/// request pipelined on the same connection is forwarded normally.
#[tokio::test]
async fn a_rejected_request_leaves_its_connection_usable() {
    let fx = fixture("").await;
    let bad = "{oops";
    let good = valid_send(r#""second""#);
    let request = format!(
        "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{bad}\
         POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{good}",
        bad.len(),
        good.len()
    );
    let raw = client::raw_http(fx.gw.addr(), request.as_bytes(), WAIT).await;
    let (first, rest) = parse_raw_response(&raw).expect("a first response");
    check(&first, &parse_error()).unwrap();
    let (second, _) = parse_raw_response(rest).expect("a second response on the same connection");
    assert_eq!(second.status, StatusCode::OK, "{}", second.text());
    assert_eq!(second.json()["id"], "second");
    assert_eq!(fx.mock.request_count(), 1);
}

// ------------------------------------------------------------ HTTP level

#[tokio::test]
async fn content_type_must_be_json() {
    let fx = fixture("").await;
    let url = fx.gw.url();
    let body = Bytes::from(valid_send("1"));
    // ContentTypeNotSupportedError, the request's id mirrored (HTTP 200, as
    // every A2A error over JSON-RPC).
    let refused = rpc_error(-32005, "1", "content type not supported");
    let no_type = client::request(Method::POST, &url, body.clone(), &[], Proto::Http1).await;
    let mut failures = Vec::new();
    if let Err(why) = check(&no_type, &refused) {
        failures.push(format!("no content-type: {why}"));
    }
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
        "",
    ] {
        let reply = client::post_json(&url, body.clone(), &[("content-type", content_type)]).await;
        if let Err(why) = check(&reply, &refused) {
            failures.push(format!("{content_type:?}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        fx.mock.request_count(),
        0,
        "a refused media type reached the upstream"
    );

    for (i, content_type) in [
        "application/json; charset=utf-8",
        "application/a2a+json",
        "Application/JSON",
        "APPLICATION/vnd.example+JSON ; charset=utf-8",
    ]
    .into_iter()
    .enumerate()
    {
        let reply = client::post_json(&url, body.clone(), &[("content-type", content_type)]).await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "{content_type}: {}",
            reply.text()
        );
        assert_eq!(reply.json()["result"]["kind"], "task", "{content_type}");
        assert_eq!(
            fx.mock.request_count(),
            i + 1,
            "{content_type} reaches the upstream"
        );
        let recorded = fx.mock.requests().pop().unwrap();
        assert_eq!(recorded.header("content-type"), Some(content_type));
    }
}

const SMALL_BODY_LIMIT: &str = "[limits]\nmax_body_bytes = 1024";

#[tokio::test]
async fn a_declared_body_over_the_limit_is_413() {
    let fx = fixture(SMALL_BODY_LIMIT).await;
    let too_large = rpc_error(-32600, "null", "1024").with_status(413);
    let reply = client::post_json(&fx.gw.url(), valid_send_of_len(1025), &[]).await;
    check(&reply, &too_large).unwrap();
    assert_eq!(reply.json()["error"]["data"]["limit"], 1024);

    let reply = client::post_json_h2(&fx.gw.url(), valid_send_of_len(1025), &[]).await;
    check(&reply, &too_large).unwrap();

    // Refused on the header alone: the body is never waited for.
    let head = "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n";
    let (reply, elapsed) = raw_exchange(fx.gw.addr(), &[head.as_bytes()]).await;
    check(&reply, &too_large).unwrap();
    assert_eq!(reply.json()["error"]["data"]["limit"], 1024);
    assert!(
        elapsed < WAIT,
        "answered without waiting for the body ({elapsed:?})"
    );

    assert_eq!(fx.mock.request_count(), 0);
    let exact = valid_send_of_len(1024);
    let reply = client::post_json(&fx.gw.url(), exact.clone(), &[]).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "a body of exactly the limit passes: {}",
        reply.text()
    );
    assert_eq!(reply.json()["id"], "sized");
    assert_eq!(
        fx.mock.requests()[0].body,
        exact.as_bytes(),
        "forwarded byte for byte"
    );
}

#[tokio::test]
async fn a_head_over_the_limit_is_431_and_one_far_over_it_is_refused_by_http() {
    let fx = fixture("[limits]\nmax_header_bytes = 8192").await;
    let too_large = rpc_error(-32600, "null", "8192").with_status(431);
    let over = "o".repeat(9_000);
    for proto in [Proto::Http1, Proto::Http2] {
        let reply = client::request(
            Method::POST,
            &fx.gw.url(),
            Bytes::from(valid_send("1")),
            &[("content-type", "application/json"), ("x-padding", &over)],
            proto,
        )
        .await;
        check(&reply, &too_large).unwrap_or_else(|e| panic!("{proto:?}: {e}"));
        assert_eq!(reply.json()["error"]["data"]["limit"], 8192);
    }

    // More than twice the limit never reaches the gateway: HTTP/1.1's own
    // bare 431, and the connection is closed.
    let far_over = "f".repeat(20_000);
    let head = format!(
        "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\nx-padding: {far_over}\r\ncontent-length: 2\r\n\r\n{{}}"
    );
    let (reply, _) = raw_exchange(fx.gw.addr(), &[head.as_bytes()]).await;
    assert_eq!(reply.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    assert_eq!(fx.mock.request_count(), 0);

    let fits = "i".repeat(7_000);
    let reply = client::post_json(&fx.gw.url(), valid_send("2"), &[("x-padding", &fits)]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert_eq!(
        fx.mock.requests()[0].header("x-padding"),
        Some(fits.as_str()),
        "a head under the limit is forwarded whole"
    );
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    let fx = fixture(SMALL_BODY_LIMIT).await;
    let (reply, _) = raw_exchange(
        fx.gw.addr(),
        &[&chunked_request(&valid_send_of_len(2000), 300)],
    )
    .await;
    check(&reply, &rpc_error(-32600, "null", "1024").with_status(413)).unwrap();
    assert_eq!(reply.json()["error"]["data"]["limit"], 1024);
    assert_eq!(fx.mock.request_count(), 0);

    // Not the size but the framing is wrong: still a JSON-RPC answer.
    let mut malformed = chunked_request(&valid_send("1"), 300);
    let head_end = malformed.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    malformed.splice(head_end..head_end + 2, *b"zz");
    let (reply, _) = raw_exchange(fx.gw.addr(), &[&malformed]).await;
    check(&reply, &rpc_error(-32600, "null", "body").with_status(400)).unwrap();
    assert_eq!(fx.mock.request_count(), 0);

    let exact = valid_send_of_len(1024);
    let (reply, _) = raw_exchange(fx.gw.addr(), &[&chunked_request(&exact, 300)]).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "exactly the limit, chunked: {}",
        reply.text()
    );
    assert_eq!(reply.json()["id"], "sized");
    assert_eq!(fx.mock.requests()[0].body, exact.as_bytes());
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_408() {
    let fx = fixture("[limits]\nbody_read_timeout = \"300ms\"").await;
    let head = "POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n";
    let started = Instant::now();
    let (reply, _) = raw_exchange(
        fx.gw.addr(),
        &[head.as_bytes(), br#"{"jsonrpc":"2.0","id":1,"#],
    )
    .await;
    check(
        &reply,
        &rpc_error(-32600, "null", "not received").with_status(408),
    )
    .unwrap();
    assert!(
        started.elapsed() < WAIT,
        "the body timeout applies ({:?})",
        started.elapsed()
    );
    assert_eq!(fx.mock.request_count(), 0);
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn wrong_http_method_or_path_gets_a_json_rpc_error() {
    let fx = fixture("").await;
    let base = format!("http://{}", fx.gw.addr());
    let json_type = [("content-type", "application/json")];
    let cases: [(Method, &str, u16, Option<&str>, &str); 4] = [
        (Method::GET, "/", 405, Some("POST"), "not allowed"),
        (Method::PUT, "/", 405, Some("POST"), "not allowed"),
        (Method::DELETE, "/", 405, Some("POST"), "not allowed"),
        (
            Method::POST,
            "/.well-known/agent-card.json",
            405,
            Some("GET, HEAD"),
            "not allowed",
        ),
    ];
    let mut failures = Vec::new();
    for (method, path, status, allow, message) in cases {
        let what = format!("{method} {path}");
        let body = Bytes::from(valid_send("1"));
        let reply = client::request(
            method,
            &format!("{base}{path}"),
            body,
            &json_type,
            Proto::Http1,
        )
        .await;
        if let Err(why) = check(
            &reply,
            &rpc_error(-32600, "null", message).with_status(status),
        ) {
            failures.push(format!("{what}: {why}"));
        }
        if allow.is_some() && reply.header("allow") != allow {
            failures.push(format!(
                "{what}: Allow {:?} (want {allow:?})",
                reply.header("allow")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A path that is no route is no JSON-RPC call either (those go to
    // one URL): the HTTP+JSON binding's google.rpc.Status answers it.
    for (method, path) in [(Method::GET, "/nope"), (Method::POST, "/v1/nope")] {
        let body = Bytes::from(valid_send("1"));
        let url = format!("{base}{path}");
        let reply = client::request(method, &url, body, &json_type, Proto::Http1).await;
        assert_eq!(reply.status, 404, "{path}: {}", reply.text());
        let v = reply.json();
        assert_eq!(
            (&v["error"]["code"], &v["error"]["status"]),
            (&json!(404), &json!("NOT_FOUND")),
            "{v}"
        );
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("no route"), "{v}");
    }
    assert_eq!(fx.mock.request_count(), 0);
    assert_still_serves(&fx).await;
}

#[tokio::test]
async fn http2_parse_error_and_valid_call() {
    let fx = fixture("").await;
    let reply = client::post_json_h2(&fx.gw.url(), "{\"jsonrpc\":", &[]).await;
    assert_eq!(reply.version, Version::HTTP_2);
    check(&reply, &parse_error()).unwrap();
    let reply =
        client::post_json_h2(&fx.gw.url(), rpc_raw("2", "GetTask", json!({"id": 5})), &[]).await;
    check(&reply, &rpc_error(-32602, "2", "params.id")).unwrap();
    assert_eq!(fx.mock.request_count(), 0);

    let reply = client::post_json_h2(
        &fx.gw.url(),
        rpc_raw("1.50", "SendMessage", v10_message()),
        &[],
    )
    .await;
    assert_eq!(reply.version, Version::HTTP_2);
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text());
    assert!(
        reply.text().contains(r#""id":1.50"#),
        "raw id kept: {}",
        reply.text()
    );
    assert!(
        reply.json()["result"]["task"].is_object(),
        "{}",
        reply.text()
    );
    assert_eq!(fx.mock.request_count(), 1);
}

// ------------------------------------------------------------ raw HTTP

/// `body` as a chunked HTTP/1.1 request in chunks of `chunk` bytes.
fn chunked_request(body: &str, chunk: usize) -> Vec<u8> {
    let mut out = b"POST / HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    for piece in body.as_bytes().chunks(chunk) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Writes `parts` in order and reads until one whole response is in (it does
/// not wait for the connection to close). Panics after [`WAIT`].
async fn raw_exchange(addr: SocketAddr, parts: &[&[u8]]) -> (Reply, Duration) {
    let started = Instant::now();
    let exchange = async {
        let mut stream = TcpStream::connect(addr)
            .await
            .expect("connect to the gateway");
        for part in parts {
            // The gateway may answer (and close) before it has read everything.
            if stream.write_all(part).await.is_err() {
                break;
            }
        }
        let mut received = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            if let Some((reply, _)) = parse_raw_response(&received) {
                return reply;
            }
            match stream.read(&mut chunk).await {
                Ok(n @ 1..) => received.extend_from_slice(&chunk[..n]),
                _ => panic!(
                    "connection ended before a whole response: {}",
                    label(&received)
                ),
            }
        }
    };
    let reply = tokio::time::timeout(WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("no response within {WAIT:?}"));
    (reply, started.elapsed())
}

/// One complete HTTP/1.1 response (Content-Length or chunked body) at the
/// start of `raw`, and the bytes after it.
fn parse_raw_response(raw: &[u8]) -> Option<(Reply, &[u8])> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).ok()?,
            HeaderValue::from_str(value.trim()).ok()?,
        );
    }
    let rest = &raw[end + 4..];
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    let (body, after) = if chunked {
        dechunk(rest)?
    } else {
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .unwrap_or(0);
        (rest.get(..len)?.to_vec(), &rest[len..])
    };
    let reply = Reply {
        status: StatusCode::from_u16(status).ok()?,
        headers,
        body: Bytes::from(body),
        version: Version::HTTP_11,
    };
    Some((reply, after))
}

fn dechunk(mut raw: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            // No trailers are expected: just the final CRLF.
            return Some((body, raw.get(2..)?));
        }
        body.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}
