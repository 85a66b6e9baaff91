//! The HTTP+JSON 1.0 face of the mock agent ([`super::mock_agent::MockAgent::set_rest`]):
//! a REST request as the JSON-RPC 1.0 call the mock already answers, and
//! its answers in the REST shape (the result alone, errors as a
//! `google.rpc.Status`, stream events as `data: <StreamResponse>`).
//! Written from the proto's `google.api.http` routes, not from the
//! gateway's code, so that the gateway is checked against it.

use http::{Method, StatusCode};
use serde_json::{json, Map, Value};

/// The JSON-RPC 1.0 method and params of a REST request (`path` is under
/// the interface's prefix, maybe after a `/{tenant}`); or the status and
/// message to refuse it with.
pub fn call_of(
    method: &Method,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<(String, Value), (StatusCode, String)> {
    let routed = route_of(method, path, query, body);
    let tenant = path.trim_start_matches('/').split_once('/');
    match (routed, tenant) {
        (Err((StatusCode::NOT_FOUND, _)), Some((tenant, route))) => {
            let (name, mut params) = route_of(method, &format!("/{route}"), query, body)?;
            params["tenant"] = json!(tenant);
            Ok((name, params))
        }
        (routed, _) => routed,
    }
}

fn route_of(
    method: &Method,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<(String, Value), (StatusCode, String)> {
    let not_found = || (StatusCode::NOT_FOUND, format!("no route {method} {path}"));
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut params = Map::new();
    let name = match (method.as_str(), segments.as_slice()) {
        ("POST", ["message:send"]) => "SendMessage",
        ("POST", ["message:stream"]) => "SendStreamingMessage",
        ("GET", ["tasks"]) => "ListTasks",
        (m, ["tasks", rest]) => {
            let (id, name) = match (m, rest.rsplit_once(':')) {
                ("POST", Some((id, "cancel"))) => (id, "CancelTask"),
                ("GET" | "POST", Some((id, "subscribe"))) => (id, "SubscribeToTask"),
                ("GET", None) => (*rest, "GetTask"),
                _ => return Err(not_found()),
            };
            params.insert("id".into(), json!(decode(id)));
            name
        }
        (m, ["tasks", task, "pushNotificationConfigs"]) => {
            params.insert("taskId".into(), json!(decode(task)));
            match m {
                "POST" => "CreateTaskPushNotificationConfig",
                "GET" => "ListTaskPushNotificationConfigs",
                _ => return Err(not_found()),
            }
        }
        (m, ["tasks", task, "pushNotificationConfigs", config]) => {
            params.insert("taskId".into(), json!(decode(task)));
            params.insert("id".into(), json!(decode(config)));
            match m {
                "GET" => "GetTaskPushNotificationConfig",
                "DELETE" => "DeleteTaskPushNotificationConfig",
                _ => return Err(not_found()),
            }
        }
        _ => return Err(not_found()),
    };
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let value = match value.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => json!(value),
        };
        params.insert(key.into_owned(), value);
    }
    if !body.is_empty() {
        let Ok(Value::Object(members)) = serde_json::from_slice::<Value>(body) else {
            return Err((
                StatusCode::BAD_REQUEST,
                "the body is not a JSON object".into(),
            ));
        };
        params.extend(members);
    }
    Ok((name.to_string(), Value::Object(params)))
}

/// A JSON-RPC error code as the REST binding says it.
pub fn status_of(code: i64, message: &str) -> (StatusCode, String) {
    let (status, grpc, reason) = match code {
        -32001 => (StatusCode::NOT_FOUND, "NOT_FOUND", "TASK_NOT_FOUND"),
        -32002 => (
            StatusCode::BAD_REQUEST,
            "FAILED_PRECONDITION",
            "TASK_NOT_CANCELABLE",
        ),
        -32009 => (
            StatusCode::BAD_REQUEST,
            "FAILED_PRECONDITION",
            "VERSION_NOT_SUPPORTED",
        ),
        -32602 => (
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "INVALID_PARAMS",
        ),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "INTERNAL"),
    };
    let body = json!({"error": {"code": status.as_u16(), "status": grpc, "message": message,
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
            "domain": "a2a-protocol.org", "metadata": {"mock": "rest"}}]}});
    (status, body.to_string())
}
