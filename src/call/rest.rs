//! The HTTP+JSON front door. A placed REST call (`crate::a2a::rest`) goes
//! the JSON-RPC call's way as the 1.0 call it is (authentication,
//! validation, routing, limits, the version bridge); this says it as that
//! call on the way in, and its answer in the REST binding on the way out:
//! the result alone as the body, an error as a `google.rpc.Status`, each
//! stream event's result alone.

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::intake::{check_content_type, read_body};
use crate::a2a::rest::{with_body, Placed, Refused};
use crate::a2a::Version;
use crate::bridge::events::map_event_data;
use crate::bridge::headers::VERSION as A2A_VERSION;
use crate::call::sse::Rewrite;
use crate::http::body::{self, Body, ReadError};
use crate::http::error::{status_body, table::for_code, GatewayError};
use crate::state::AppState;

/// A REST answer is read whole before it is said again (as a translated
/// one is, `super::bridged`).
const MAX_ANSWER: usize = 16 * 1024 * 1024;

/// The placed call as a JSON-RPC request: its body joins the path's
/// params. A route without a body must come without one.
pub(super) async fn request(
    state: &AppState,
    parts: &mut Parts,
    body: Incoming,
    mut placed: Placed,
) -> Result<Bytes, GatewayError> {
    // The 1.0 routes are 1.0 calls, whether or not the client says so: an
    // agent reads a call without `A2A-Version` as 0.3.
    (parts.headers.entry(A2A_VERSION)).or_insert(HeaderValue::from_static("1.0"));
    let bytes = read_body(&state.config.limits, &parts.headers, body).await?;
    if !bytes.is_empty() {
        if !placed.takes_body {
            let message = format!("{} takes no body", parts.method);
            return Err(GatewayError::Rpc {
                code: crate::a2a::jsonrpc::INVALID_REQUEST,
                message,
            });
        }
        check_content_type(&parts.headers)?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| GatewayError::Rpc {
            code: crate::a2a::jsonrpc::PARSE_ERROR,
            message: format!("the body is not JSON: {e}"),
        })?;
        with_body(&mut placed, value).map_err(|r| refused(r, parts))?;
    }
    // The inner call's id: REST has none to mirror.
    let call = json!({"jsonrpc": "2.0", "id": "rest", "method": placed.method.name,
        "params": placed.params});
    Ok(Bytes::from(call.to_string()))
}

/// Why a REST call could not be placed, as the gateway's error.
pub fn refused(refused: Refused, parts: &Parts) -> GatewayError {
    let path = || parts.uri.path().chars().take(128).collect();
    match refused {
        Refused::NotFound => GatewayError::NotFound {
            method: parts.method.to_string(),
            path: path(),
            hint: "see the HTTP+JSON routes of A2A 1.0",
        },
        Refused::MethodNotAllowed(allow) => GatewayError::MethodNotAllowed {
            method: parts.method.to_string(),
            path: path(),
            allow,
        },
        Refused::Invalid(why) => GatewayError::InvalidParams(why),
    }
}

/// A unary answer (JSON-RPC, from the agent or the bridge) as the REST
/// binding says it. A stream was said event by event already (`events`).
pub(super) async fn answer(response: Response<Body>) -> Response<Body> {
    if super::relay::is_event_stream(response.headers()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match body::read_to_limit(body, MAX_ANSWER).await {
        Ok(bytes) => bytes,
        Err(ReadError::TooLarge) => {
            let detail = format!("the answer is over {MAX_ANSWER} bytes");
            return agent_failure(detail);
        }
        Err(ReadError::Body(e)) => return agent_failure(format!("the answer broke off: {e}")),
    };
    let Some((status, said)) = said(&bytes) else {
        // Not A2A (an agent's HTTP error page): as it came.
        return Response::from_parts(parts, body::full(bytes));
    };
    if parts.status.is_success() {
        parts.status = status;
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, body::full(said.to_string()))
}

fn agent_failure(detail: String) -> Response<Body> {
    GatewayError::UpstreamBadResponse {
        upstream: "agent".into(),
        detail,
    }
    .into_rest_response()
}

/// A JSON-RPC response as REST says it: the result with 200, or the error
/// as a `google.rpc.Status` with its status.
fn said(bytes: &[u8]) -> Option<(StatusCode, Value)> {
    let mut answer: Value = serde_json::from_slice(bytes).ok()?;
    if let Some(result) = answer.get_mut("result") {
        return Some((StatusCode::OK, result.take()));
    }
    let error = answer.get("error")?;
    let code = error.get("code").and_then(Value::as_i64)?;
    let message = error.get("message").cloned().unwrap_or(Value::Null);
    let status = status_body(code, &message, error.get("data"));
    Some((for_code(code).http, status))
}

/// Each event of a stream as REST says it, after whatever said it before
/// (the bridge); a REST client speaks 1.0.
pub(super) fn events(before: Option<(Rewrite, Version)>) -> (Rewrite, Version) {
    let mut before = before.map(|(rewrite, _)| rewrite);
    let rewrite: Rewrite = Box::new(move |events: &[u8]| {
        let events = match before.as_mut() {
            Some(rewrite) => rewrite(events)?,
            None => Bytes::copy_from_slice(events),
        };
        // An error is `event: error` with its google.rpc.Status: what the
        // SDKs' REST clients read as one.
        map_event_data(&events, |data| match said(data) {
            Some((status, said)) => {
                let event = (!status.is_success()).then_some("error");
                Ok((event, said.to_string().into_bytes()))
            }
            None => Err("an event is not a JSON-RPC response".to_string()),
        })
        .map_err(|(done, why)| (done, why.to_string()))
    });
    (rewrite, Version::V1_0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_the_body_and_errors_a_google_rpc_status() {
        let (status, body) =
            said(br#"{"jsonrpc":"2.0","id":"rest","result":{"task":{"id":"t"}}}"#).unwrap();
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"task": {"id": "t"}}))
        );
        let (status, body) = said(
            br#"{"jsonrpc":"2.0","id":"rest","error":{"code":-32001,"message":"no such task","data":{"upstream":"a"}}}"#,
        )
        .unwrap();
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            body,
            json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "no such task",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
                    "metadata": {"upstream": "a"}}]}})
        );
        assert!(said(b"<html>").is_none());
    }
}
