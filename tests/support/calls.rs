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
