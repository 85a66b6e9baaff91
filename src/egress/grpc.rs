//! Calls to an agent's gRPC interface (A2A 1.0, `lf.a2a.v1.A2AService`,
//! or 0.3, `a2a.v1.A2AService`; `crate::bridge::door`). The call on its
//! way is the 1.0 JSON-RPC call (the client's, or the bridge's translation
//! of it); here its params, the ProtoJSON of the RPC's request message
//! (written in 0.3 first for a 0.3 agent: `crate::bridge::v03::grpc_agent`),
//! become that message on the wire, sent over HTTP/2 as one gRPC frame. The agent's answer is translated
//! back as the JSON-RPC answer the rest of the way expects: a unary answer
//! whole, a server stream as SSE events, one per message. A non-OK
//! `grpc-status` becomes the JSON-RPC error its `google.rpc.ErrorInfo`
//! reason names, else its code (`crate::http::error::table::code_for_rest`).

use bytes::{Bytes, BytesMut};
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tonic_types::StatusExt;

use super::params::refusal;
use crate::a2a::grpc::call::{answer_json, framed, next_message, request};
use crate::a2a::jsonrpc::{error_body, result_raw};
use crate::a2a::{Family, Version};
use crate::bridge::v03;
use crate::http::body::{self, Body};
use crate::http::error::table::code_for_rest;
use crate::http::error::GatewayError;
use crate::relay::whole;
use crate::upstream::{Caller, Leased, Origin, RpcCall, Upstream};

/// An answer is read whole up to this size, as any agent's.
const MAX_ANSWER: usize = whole::MAX_ANSWER;

/// The 1.0 call's `params` as the gRPC call to the agent's
/// interface of `version` at `at`. A call whose params the RPC's message
/// cannot carry is the client's error, naming what.
#[allow(clippy::too_many_arguments)]
pub(crate) fn call(
    upstream: &Upstream,
    mut parts: Parts,
    params: Option<Value>,
    family: Family,
    (at, version): (&Uri, Version),
    origin: Origin,
    caller: &Caller<'_>,
) -> Result<RpcCall, GatewayError> {
    let refused = |why: String| {
        GatewayError::InvalidParams(format!("over the agent's gRPC interface: {why}"))
    };
    let params = match version {
        Version::V1_0 => params.unwrap_or_else(|| json!({})),
        _ => v03::grpc_agent::params_out(family, params).map_err(|e| refusal(e, refused))?,
    };
    let (rpc_name, message) = request(version, family, params).map_err(refused)?;
    grpc_headers(&mut parts.headers, version);
    let target = target(at, &crate::a2a::grpc::call::path(version, rpc_name))?;
    let call = upstream.rpc_call_from(parts, framed(&message), origin, caller);
    Ok(call.streaming(family.streams()).grpc(target))
}

/// A gRPC client's call, as it came: its path and its frames, for an
/// agent that speaks the same service (`pass`).
#[derive(Clone)]
pub(crate) struct GrpcRequest {
    pub(crate) path: String,
    pub(crate) frames: Bytes,
    /// The client's `grpc-timeout`: the answer is bounded by it.
    pub(crate) deadline: Option<tokio::time::Instant>,
}

/// Marks an answer that is the agent's gRPC answer, passed through: the
/// front door hands it to the client as it is.
#[derive(Clone, Copy)]
pub(crate) struct GrpcEncoded;

/// A gRPC client's call to an agent's gRPC interface of its version: the
/// client's frames to the same RPC, untouched (routing read them already,
/// decoded, on the way in). The answer comes back as the agent wrote it.
pub(crate) fn pass(
    upstream: &Upstream,
    mut parts: Parts,
    (sent, family): (&GrpcRequest, Family),
    (at, version): (&Uri, Version),
    origin: Origin,
    caller: &Caller<'_>,
) -> Result<RpcCall, GatewayError> {
    grpc_headers(&mut parts.headers, version);
    let target = target(at, &sent.path)?;
    let call = upstream.rpc_call_from(parts, sent.frames.clone(), origin, caller);
    Ok(call.streaming(family.streams()).grpc(target))
}

/// Whether a passed-through answer is a gRPC answer; the agent's failure
/// if not.
pub(crate) fn check_passed(response: &Response<Leased>, owner: &str) -> Result<(), GatewayError> {
    match not_grpc(response.headers(), response.status()) {
        None => Ok(()),
        Some(why) => Err(GatewayError::UpstreamBadResponse {
            upstream: owner.to_string(),
            detail: format!("its gRPC answer: {why}"),
        }),
    }
}

/// The JSON-RPC code of the error a passed-through answer's head says
/// (trailers-only), for the call's record: the answer itself goes on as
/// it came.
pub(crate) fn head_error(response: &Response<Leased>) -> Option<i32> {
    let status = grpc_status_of(response.headers()).filter(|s| s.code() != tonic::Code::Ok)?;
    Some(crate::http::error::grpc::code_of(&status))
}

/// The headers of a call to a gRPC agent of `version`: the client's, as
/// any agent gets them, encoded as gRPC metadata.
fn grpc_headers(headers: &mut HeaderMap, version: Version) {
    crate::bridge::headers::for_agent(headers, version);
    // gRPC's own metadata is the gateway's to set for the agent, not the
    // client's (`grpc-timeout`, `grpc-encoding`, ...).
    crate::http::hop_by_hop::clear_grpc_metadata(headers, "application/grpc");
    headers.remove(header::ACCEPT);
    headers.remove(header::ACCEPT_ENCODING);
}

/// An RPC's `path` at the agent's gRPC origin `at`.
fn target(at: &Uri, path: &str) -> Result<Uri, GatewayError> {
    let mut parts = at.clone().into_parts();
    let bad = |e: &dyn std::fmt::Display| {
        GatewayError::Internal(format!(
            "'{at}' and '{path}' are not a gRPC call's URI: {e}"
        ))
    };
    parts.path_and_query = Some(http::uri::PathAndQuery::try_from(path).map_err(|e| bad(&e))?);
    Uri::from_parts(parts).map_err(|e| bad(&e))
}

/// The agent's answer message of `family`, in the service of `version`,
/// as the 1.0 result's ProtoJSON (a 0.3 one read into 1.0).
fn result_json(version: Version, family: Family, message: &[u8]) -> Result<Vec<u8>, String> {
    let encoded = answer_json(version, family, message)?;
    if version == Version::V1_0 {
        return Ok(encoded);
    }
    let value: Value = serde_json::from_slice(&encoded).map_err(|e| e.to_string())?;
    let value = match family {
        Family::Stream | Family::Resubscribe => v03::rest_agent::IN.item(value, "event"),
        _ => v03::rest_agent::IN.answer(family, value),
    };
    let value = value.map_err(|e| format!("its 0.3 answer: {e}"))?;
    serde_json::to_vec(&value).map_err(|e| e.to_string())
}

/// The agent's unary gRPC answer (its service of `version`) as a JSON-RPC
/// one with the call's `id`.
pub(crate) async fn answer(
    response: Response<Leased>,
    id: Option<&RawValue>,
    owner: &str,
    within: std::time::Duration,
    (family, version): (Family, Version),
) -> Result<Response<Body>, GatewayError> {
    let id = id.map_or("null", |id| id.get());
    let invalid = |detail: String| GatewayError::UpstreamBadResponse {
        upstream: owner.to_string(),
        detail: format!("its gRPC answer: {detail}"),
    };
    let (mut parts, body) = response.into_parts();
    not_grpc(&parts.headers, parts.status).map_or(Ok(()), |why| Err(invalid(why)))?;
    let encoded = match grpc_status_of(&parts.headers) {
        // Trailers-only: the status is in the head, and no message.
        Some(status) => error(id, &status),
        None => {
            let read = whole::read_with_trailers(body, owner, within, MAX_ANSWER + 5).await?;
            let status = read.1.as_ref().and_then(grpc_status_of);
            let mut data = BytesMut::from(&read.0[..]);
            match status {
                None => return Err(invalid("it ended with no grpc-status".into())),
                Some(status) if status.code() != tonic::Code::Ok => error(id, &status),
                Some(_) => {
                    let message = match next_message(&mut data, MAX_ANSWER).map_err(invalid)? {
                        Some(message) => message,
                        None => return Err(invalid("OK, with no message".into())),
                    };
                    result_raw(
                        id,
                        &result_json(version, family, &message).map_err(invalid)?,
                    )
                }
            }
        }
    };
    parts.status = StatusCode::OK;
    parts.headers = HeaderMap::new();
    crate::http::body::set_json(&mut parts.headers);
    Ok(Response::from_parts(parts, body::full(encoded)))
}

/// Whether a head is not a gRPC answer: why, if so.
fn not_grpc(headers: &HeaderMap, status: StatusCode) -> Option<String> {
    let grpc = (headers.get(header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    match (status, grpc) {
        (StatusCode::OK, true) => None,
        (status, _) => Some(format!(
            "HTTP {status}, content-type {:?}",
            headers.get(header::CONTENT_TYPE)
        )),
    }
}

/// The status a head or trailers carry, if any.
fn grpc_status_of(headers: &HeaderMap) -> Option<tonic::Status> {
    headers.get("grpc-status")?;
    tonic::Status::from_header_map(headers)
}

/// Whether the agent's answer is a stream to encode as SSE events: an OK
/// gRPC head with no status in it (a refusal is trailers-only).
pub(crate) fn streams(response: &Response<Leased>) -> bool {
    not_grpc(response.headers(), response.status()).is_none()
        && grpc_status_of(response.headers()).is_none()
}

/// The agent's gRPC server stream as SSE events of JSON-RPC answers with
/// the call's `id`: one per message, and a last error event for a non-OK
/// status. A stream that breaks off, or says what cannot be read, ends
/// with the body's error: the relay says it as the stream's end.
pub(crate) fn events(
    response: Response<Leased>,
    id: Option<&RawValue>,
    version: Version,
) -> Response<Body> {
    let id = id.map_or("null", |id| id.get()).to_string();
    let (mut parts, body) = response.into_parts();
    let start = Some((body, BytesMut::new()));
    let stream = futures_util::stream::unfold(start, move |state| {
        let id = id.clone();
        async move {
            let (mut body, mut buffer) = state?;
            loop {
                match next_message(&mut buffer, MAX_ANSWER) {
                    Err(why) => return Some((Err(broke(why)), None)),
                    Ok(Some(message)) => {
                        let encoded = result_json(version, Family::Stream, &message)
                            .map(|json| event(&result_raw(&id, &json)))
                            .map_err(broke);
                        let next = encoded.is_ok().then_some((body, buffer));
                        return Some((encoded.map(http_body::Frame::data), next));
                    }
                    Ok(None) => {}
                }
                match body.frame().await {
                    None => return Some((Err(broke("it ended with no grpc-status".into())), None)),
                    Some(Err(e)) => return Some((Err(e), None)),
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => buffer.extend_from_slice(&data),
                        Err(frame) => {
                            let status = frame.trailers_ref().and_then(grpc_status_of);
                            return match status {
                                Some(s) if s.code() == tonic::Code::Ok => None,
                                Some(s) => {
                                    let encoded = event(&error(&id, &s));
                                    Some((Ok(http_body::Frame::data(encoded)), None))
                                }
                                None => Some((Err(broke("no grpc-status".into())), None)),
                            };
                        }
                    },
                }
            }
        }
    });
    parts.status = StatusCode::OK;
    parts.headers = HeaderMap::new();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    let body = http_body_util::StreamBody::new(stream).boxed_unsync();
    Response::from_parts(parts, body)
}

fn broke(why: String) -> body::BoxError {
    format!("the agent's gRPC stream: {why}").into()
}

/// One SSE event carrying `data`.
fn event(data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(data.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    out.freeze()
}

/// A non-OK status as the JSON-RPC error it names: its ErrorInfo's reason
/// (else its code) gives the error's code, the ErrorInfo's metadata its
/// data.
fn error(id: &str, status: &tonic::Status) -> Vec<u8> {
    let details = status.get_error_details();
    let info = details.error_info();
    let reason = info.map(|i| i.reason.as_str());
    let code = code_for_rest(
        reason,
        Some(crate::http::error::grpc::code_name(status.code())),
    );
    let data = info
        .filter(|i| !i.metadata.is_empty())
        .map(|i| json!(i.metadata));
    let id = serde_json::from_str::<&RawValue>(id).ok();
    error_body(id, code, status.message(), data.as_ref()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_code() {
        let details = tonic_types::ErrorDetails::with_error_info(
            "TASK_NOT_FOUND",
            "a2a-protocol.org",
            [("taskId".to_string(), "t".to_string())],
        );
        let status = tonic::Status::with_error_details(tonic::Code::NotFound, "no task t", details);
        let encoded: Value = serde_json::from_slice(&error("3", &status)).unwrap();
        assert_eq!(
            encoded,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "no task t",
                "data": {"taskId": "t"}}})
        );
        let bare = tonic::Status::unavailable("down");
        let encoded: Value = serde_json::from_slice(&error("null", &bare)).unwrap();
        assert_eq!(encoded["error"]["code"], -32603, "the agent failed");
    }
}
