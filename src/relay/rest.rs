//! An answer on its way back to an HTTP+JSON client, encoded in the REST
//! binding: the result alone as the body, an error as a
//! `google.rpc.Status`, each stream event's result alone; in 0.3's
//! ProtoJSON for a call on a 0.3 route.

use http::{header, Response, StatusCode};
use serde_json::Value;

use super::sse::{then, Rewrite};
use crate::a2a::{Family, Version};
use crate::bridge::events::map_event_data;
use crate::bridge::v03;
use crate::http::body::{self, Body, ReadError};
use crate::http::error::{status_body, table::for_code, GatewayError};
use crate::relay::whole::MAX_ANSWER;

/// Marks an answer already in the REST binding (passed through from a
/// REST agent): [`answer`] leaves it as it is.
#[derive(Clone, Copy)]
pub(crate) struct RestEncoded;

/// A unary answer (JSON-RPC, from the agent or the bridge) as the REST
/// binding says it, in 0.3's ProtoJSON for a 0.3 route's call of
/// `v03`'s family. A stream was encoded event by event already (`events`).
pub(crate) async fn answer(response: Response<Body>, v03: Option<Family>) -> Response<Body> {
    let encoded = response.extensions().get::<RestEncoded>().is_some();
    if encoded || crate::relay::is_event_stream(response.headers()) {
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
    let Some((status, answer)) = rest_answer_of(&bytes) else {
        // Not A2A (an agent's HTTP error page): as it came.
        return Response::from_parts(parts, body::full(bytes));
    };
    let answer = match v03 {
        Some(family) if status.is_success() => match v03::rest::OUT.answer(family, answer) {
            Ok(answer) => answer,
            Err(e) => return agent_failure(format!("its answer has no 0.3 form: {e}")),
        },
        _ => answer,
    };
    if v03.is_some() {
        crate::bridge::headers::for_client(&mut parts.headers, Version::V0_3);
    }
    if parts.status.is_success() {
        parts.status = status;
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    crate::http::body::set_json(&mut parts.headers);
    Response::from_parts(parts, body::full(answer.to_string()))
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
fn rest_answer_of(bytes: &[u8]) -> Option<(StatusCode, Value)> {
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

/// Each event of a stream encoded for REST, after whatever rewrote it before
/// (the bridge); in 0.3's ProtoJSON for a 0.3 route's call (`v03`).
pub(crate) fn events(before: Option<(Rewrite, Version)>, v03: bool) -> (Rewrite, Version) {
    let rest: Rewrite = Box::new(move |events: &[u8]| {
        // An error is `event: error` with its google.rpc.Status: what the
        // SDKs' REST clients read as one.
        map_event_data(events, |data| match rest_answer_of(data) {
            Some((status, encoded)) if !status.is_success() => {
                Ok((Some("error"), encoded.to_string().into_bytes()))
            }
            Some((_, encoded)) if v03 => match v03::rest::OUT.item(encoded, "event") {
                Ok(encoded) => Ok((None, encoded.to_string().into_bytes())),
                Err(e) => Err(format!("an event has no 0.3 form: {e}")),
            },
            Some((_, encoded)) => Ok((None, encoded.to_string().into_bytes())),
            None => Err("an event is not a JSON-RPC response".to_string()),
        })
    });
    let rewrite = match before {
        Some((before, _)) => then(before, rest),
        None => rest,
    };
    let client = if v03 { Version::V0_3 } else { Version::V1_0 };
    (rewrite, client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_the_body_and_errors_a_google_rpc_status() {
        let (status, body) =
            rest_answer_of(br#"{"jsonrpc":"2.0","id":"rest","result":{"task":{"id":"t"}}}"#)
                .unwrap();
        assert_eq!(
            (status, body),
            (StatusCode::OK, json!({"task": {"id": "t"}}))
        );
        let (status, body) = rest_answer_of(
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
        assert!(rest_answer_of(b"<html>").is_none());
    }
}
