//! An error as the HTTP+JSON binding answers it: the table's HTTP status
//! and a `google.rpc.Status` body with one `google.rpc.ErrorInfo` detail
//! (spec §5.4): `{"error": {"code", "status", "message", "details":
//! [{"@type", "reason", "domain", "metadata"}]}}`.

use http::{header, HeaderValue, Response};
use serde_json::{json, Map, Value};

use super::{ErrorCode, GatewayError};
use crate::http::body::{self, Body};

const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const DOMAIN: &str = "a2a-protocol.org";

impl GatewayError {
    /// The `google.rpc.Status` body of this error.
    pub fn rest_body(&self) -> Value {
        let mapped = self.mapped();
        // ErrorInfo's metadata is a map of strings: the error's data, flat.
        let metadata: Map<String, Value> = match self.data() {
            Some(Value::Object(data)) => data
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => (k, Value::String(s)),
                    other => (k, Value::String(other.to_string())),
                })
                .collect(),
            _ => Map::new(),
        };
        let mut info = json!({"@type": ERROR_INFO, "reason": mapped.reason, "domain": DOMAIN});
        if !metadata.is_empty() {
            info["metadata"] = Value::Object(metadata);
        }
        json!({"error": {
            "code": mapped.http.as_u16(),
            "status": mapped.grpc,
            "message": self.to_string(),
            "details": [info],
        }})
    }

    /// The HTTP+JSON answer to this error.
    pub fn into_rest_response(self) -> Response<Body> {
        let mapped = self.mapped();
        let mut response = Response::new(body::full(self.rest_body().to_string()));
        *response.status_mut() = mapped.http;
        response.extensions_mut().insert(ErrorCode(mapped.rpc_code));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        self.add_headers(headers);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
