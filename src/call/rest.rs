//! The HTTP+JSON front door. A placed REST call (`crate::a2a::rest`) goes
//! the JSON-RPC call's way as the 1.0 call it is (authentication,
//! validation, routing, limits, the version bridge); this says it as that
//! call on the way in, and its answer in the REST binding on the way out:
//! the result alone as the body, an error as a `google.rpc.Status`, each
//! stream event's result alone.

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use serde_json::{json, Value};

use super::intake::check_content_type;
use super::whole::MAX_ANSWER;
use crate::a2a::rest::{with_body, Refused, RestRoute};
use crate::a2a::{Family, Version};
use crate::bridge::events::map_event_data;
use crate::bridge::headers::VERSION as A2A_VERSION;
use crate::bridge::v03_rest;
use crate::call::sse::{then, Rewrite};
use crate::http::body::{self, Body, ReadError};
use crate::http::error::{status_body, table::for_code, GatewayError};

/// A REST call as the client sent it: what passes through to an agent's
/// HTTP+JSON interface when no translation is needed.
pub(super) struct RestRequest {
    /// The route's path (under any prefix), without the query.
    pub(super) path: String,
    pub(super) body: Bytes,
}

/// Marks an answer already in the REST binding (passed through from a
/// REST agent): [`answer`] leaves it as it is.
#[derive(Clone, Copy)]
pub(super) struct RestEncoded;

/// The placed call as a JSON-RPC request (its body joins the path's
/// params), and the call as sent. A route without a body must come
/// without one.
pub(super) fn request(
    parts: &mut Parts,
    bytes: Bytes,
    mut placed: RestRoute,
) -> Result<(Bytes, Option<RestRequest>), GatewayError> {
    // The 1.0 routes are 1.0 calls, whether or not the client says so: an
    // agent reads a call without `A2A-Version` as 0.3. A 0.3 route's call
    // is written in 1.0 here, headers too (`A2A-Extensions`).
    match placed.v03 {
        true => crate::bridge::headers::for_agent(&mut parts.headers, Version::V1_0),
        false => {
            (parts.headers.entry(A2A_VERSION)).or_insert(HeaderValue::from_static("1.0"));
        }
    }
    if !bytes.is_empty() {
        if !placed.takes_body {
            let message = format!("{} takes no body", parts.method);
            return Err(GatewayError::Rpc {
                code: crate::a2a::jsonrpc::INVALID_REQUEST,
                message,
            });
        }
        check_content_type(&parts.headers).map_err(GatewayError::UnsupportedMediaType)?;
        if let Some(call) = body_alone(&placed, &bytes)? {
            let sent = RestRequest {
                path: placed.path,
                body: bytes,
            };
            return Ok((call, Some(sent)));
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(not_json)?;
        let value = match placed.v03 {
            true => v03_rest::body_in(placed.method.family, value)
                .map_err(|e| GatewayError::InvalidParams(e.to_string()))?,
            false => value,
        };
        with_body(&mut placed, value).map_err(|r| refused(r, parts))?;
    }
    // The inner call's id: REST has none to mirror.
    let call = json!({"jsonrpc": "2.0", "id": "rest", "method": placed.method.name,
        "params": placed.params});
    let sent = Some(RestRequest {
        path: placed.path,
        body: bytes,
    });
    Ok((Bytes::from(call.to_string()), sent))
}

fn not_json(e: serde_json::Error) -> GatewayError {
    GatewayError::Rpc {
        code: crate::a2a::jsonrpc::PARSE_ERROR,
        message: format!("the body is not JSON: {e}"),
    }
}

/// The call when its params are the 1.0 body alone (`message:send` and
/// `message:stream`: no path ids, no query): the body's bytes go into the
/// envelope as they are, once checked to be one JSON object, rather than
/// parsed into a tree and written out again. This made a REST send cost
/// 1.20x a JSON-RPC one in gateway CPU, at the budget's edge (bench/rest.sh).
fn body_alone(placed: &RestRoute, body: &Bytes) -> Result<Option<Bytes>, GatewayError> {
    let alone = !placed.v03 && placed.params.as_object().is_some_and(|p| p.is_empty());
    if !alone {
        return Ok(None);
    }
    let raw: &serde_json::value::RawValue = serde_json::from_slice(body).map_err(not_json)?;
    if !raw.get().starts_with('{') {
        return Err(GatewayError::InvalidParams(
            "the body must be a JSON object".into(),
        ));
    }
    let name = placed.method.name;
    let mut call = Vec::with_capacity(body.len() + name.len() + 56);
    call.extend_from_slice(br#"{"jsonrpc":"2.0","id":"rest","method":""#);
    call.extend_from_slice(name.as_bytes());
    call.extend_from_slice(br#"","params":"#);
    call.extend_from_slice(raw.get().as_bytes());
    call.push(b'}');
    Ok(Some(Bytes::from(call)))
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
/// binding says it, in 0.3's ProtoJSON for a 0.3 route's call of
/// `v03`'s family. A stream was said event by event already (`events`).
pub(super) async fn answer(response: Response<Body>, v03: Option<Family>) -> Response<Body> {
    let encoded = response.extensions().get::<RestEncoded>().is_some();
    if encoded || super::relay::is_event_stream(response.headers()) {
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
        Some(family) if status.is_success() => match v03_rest::answer_out(family, answer) {
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
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
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

/// Each event of a stream as REST says it, after whatever said it before
/// (the bridge); in 0.3's ProtoJSON for a 0.3 route's call (`v03`).
pub(super) fn events(before: Option<(Rewrite, Version)>, v03: bool) -> (Rewrite, Version) {
    let rest: Rewrite = Box::new(move |events: &[u8]| {
        // An error is `event: error` with its google.rpc.Status: what the
        // SDKs' REST clients read as one.
        map_event_data(events, |data| match rest_answer_of(data) {
            Some((status, said)) if !status.is_success() => {
                Ok((Some("error"), said.to_string().into_bytes()))
            }
            Some((_, said)) if v03 => match v03_rest::item_out(said, "event") {
                Ok(said) => Ok((None, said.to_string().into_bytes())),
                Err(e) => Err(format!("an event has no 0.3 form: {e}")),
            },
            Some((_, said)) => Ok((None, said.to_string().into_bytes())),
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

    #[test]
    fn a_send_body_goes_into_the_call_as_it_is() {
        let placed = crate::a2a::rest::place(&http::Method::POST, "/message:send", None).unwrap();
        let body = Bytes::from_static(b" \n {\"message\": {\"x\": 1}} \n");
        let call = body_alone(&placed, &body).unwrap().unwrap();
        assert_eq!(
            call,
            Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":"rest","method":"SendMessage","params":{"message": {"x": 1}}}"#
            )
        );
        let not_object = body_alone(&placed, &Bytes::from_static(b" [1]"));
        assert!(matches!(not_object, Err(GatewayError::InvalidParams(_))));
        let two = body_alone(&placed, &Bytes::from_static(b"{} {}"));
        assert!(
            matches!(two, Err(GatewayError::Rpc { .. })),
            "one value only"
        );
        let with_id = crate::a2a::rest::place(&http::Method::GET, "/tasks/t", None).unwrap();
        assert!(body_alone(&with_id, &Bytes::from_static(b"{}"))
            .unwrap()
            .is_none());
    }

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
