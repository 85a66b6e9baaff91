//! JSON-RPC request bodies the tests send most.

use serde_json::json;

/// A 0.3 call carrying one user message ("hello"), with a string id.
pub fn message(id: &str, method: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": method,
        "params": {"message": {"kind": "message", "messageId": format!("m-{id}"),
            "role": "user", "parts": [{"kind": "text", "text": "hello"}]}}
    })
    .to_string()
}

/// A 0.3 `message/send` with a string id.
pub fn send(id: &str) -> String {
    message(id, "message/send")
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
