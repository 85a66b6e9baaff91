//! An error as the HTTP+JSON binding answers it: the table's HTTP status
//! and a `google.rpc.Status` body with one `google.rpc.ErrorInfo` detail
//! (spec §5.4): `{"error": {"code", "status", "message", "details":
//! [{"@type", "reason", "domain", "metadata"}]}}`.

use http::Response;
use serde_json::{json, Map, Value};

use super::kind::GatewayError;
use crate::http::body::Body;

const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const DOMAIN: &str = "a2a-protocol.org";

/// The `google.rpc.Status` body of an error known by its JSON-RPC code
/// (an agent's, or a stream's end): `crate::http::error::table::for_code`.
pub fn status_body(code: i64, message: &Value, data: Option<&Value>) -> Value {
    let mapped = super::table::for_code(code);
    body(
        mapped.http.as_u16(),
        mapped.grpc,
        mapped.reason,
        message.clone(),
        data,
    )
}

fn body(http: u16, grpc: &str, reason: &str, message: Value, data: Option<&Value>) -> Value {
    let mut info = json!({"@type": ERROR_INFO, "reason": reason, "domain": DOMAIN});
    // ErrorInfo's metadata is a map of strings: the error's data, flat.
    if let Some(Value::Object(data)) = data {
        let metadata: Map<String, Value> = (data.iter())
            .map(|(k, v)| match v {
                Value::String(s) => (k.clone(), Value::String(s.clone())),
                other => (k.clone(), Value::String(other.to_string())),
            })
            .collect();
        info["metadata"] = Value::Object(metadata);
    }
    json!({"error": {"code": http, "status": grpc, "message": message, "details": [info]}})
}

impl GatewayError {
    /// The `google.rpc.Status` body of this error.
    pub fn rest_body(&self) -> Value {
        let mapped = self.mapped();
        let message = Value::String(self.to_string());
        let data = self.data();
        body(
            mapped.http.as_u16(),
            mapped.grpc,
            mapped.reason,
            message,
            data.as_ref(),
        )
    }

    /// The HTTP+JSON answer to this error.
    pub fn into_rest_response(self) -> Response<Body> {
        let mapped = self.mapped();
        self.answer(mapped.http, mapped.rpc_code, self.rest_body().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    #[test]
    fn a_task_not_found_is_a_google_rpc_status() {
        let e = GatewayError::TaskNotFound("t-1".into());
        assert_eq!(
            e.rest_body(),
            json!({"error": {"code": 404, "status": "NOT_FOUND",
                "message": "task 't-1' was not found on any agent",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}})
        );
        let r = e.into_rest_response();
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }

    #[test]
    fn data_becomes_string_metadata_and_headers_are_kept() {
        let e = GatewayError::MethodNotAllowed {
            method: "PUT".into(),
            path: "/message:send".into(),
            allow: "POST",
        };
        let r = e.into_rest_response();
        assert_eq!(r.status(), 405);
        assert_eq!(r.headers()[header::ALLOW], "POST");
        let e = GatewayError::PayloadTooLarge { limit: 10 };
        assert_eq!(
            e.rest_body()["error"]["details"][0]["metadata"],
            json!({"limit": "10"})
        );
    }
}
