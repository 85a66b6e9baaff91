//! JSON-RPC request bodies the tests send most.

use serde::Serialize;
use serde_json::json;

/// The header that makes a call A2A 1.0.
pub const V1: (&str, &str) = ("a2a-version", "1.0");
/// The JSON content type.
pub const JSON: (&str, &str) = ("content-type", "application/json");

/// A JSON-RPC call of `method` with `id` and `params` (any JSON value).
pub fn rpc(id: impl Serialize, method: &str, params: impl Serialize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A JSON-RPC call whose id is `raw_id` written as is (`7`, `"a"`,
/// `null`, `1.50`): for what the gateway mirrors exactly.
pub fn rpc_raw(raw_id: &str, method: &str, params: impl std::fmt::Display) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{params}}}"#)
}

/// A 0.3 call of `method` whose JSON-RPC id is `raw_id` written as is
/// (`7`, `"a"`, `null`), carrying one user message that says `text`.
pub fn call_raw(raw_id: &str, method: &str, text: &str) -> String {
    let message_id = format!("m-{}", raw_id.trim_matches('"'));
    let params = json!({"message": {"kind": "message", "messageId": message_id,
        "role": "user", "parts": [{"kind": "text", "text": text}]}});
    format!(r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{params}}}"#)
}

/// A 0.3 call carrying one user message ("hello"), with a string id.
pub fn message(id: &str, method: &str) -> String {
    call_raw(&json!(id).to_string(), method, "hello")
}

/// A 0.3 `message/send` with a string id.
pub fn send(id: &str) -> String {
    message(id, "message/send")
}

/// A 0.3 `message/send` whose id is `raw_id` written as is, saying "hi".
pub fn send_raw(raw_id: &str) -> String {
    call_raw(raw_id, "message/send", "hi")
}

/// A 0.3 `message/stream` whose id is `raw_id` written as is, saying "hi".
pub fn stream_raw(raw_id: &str) -> String {
    call_raw(raw_id, "message/stream", "hi")
}

/// A gRPC 1.0 `SendMessage` request: one user message (`m-1`) with `text`.
pub fn grpc_send(text: &str) -> a2a_gateway::a2a::grpc::v1::SendMessageRequest {
    use a2a_gateway::a2a::grpc::v1;
    v1::SendMessageRequest {
        message: Some(v1::Message {
            message_id: "m-1".into(),
            role: v1::Role::User as i32,
            parts: vec![v1::Part {
                content: Some(v1::part::Content::Text(text.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}
