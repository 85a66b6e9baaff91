//! Calls to an agent's HTTP+JSON 1.0 interface (`crate::bridge::door`).
//! The call on its way is the 1.0 JSON-RPC call (the client's, or the
//! bridge's translation of it); here it is encoded as the REST request
//! (`crate::a2a::rest_call`), and the agent's REST answer is read back as
//! the JSON-RPC answer the rest of the way expects: a unary answer whole,
//! a stream event by event. The result's bytes are kept as the agent wrote
//! them; a `google.rpc.Status` becomes the JSON-RPC error its reason names
//! (`crate::http::error::table::code_for_rest`).

use bytes::Bytes;
use http::request::Parts;
use http::{header, Response, StatusCode};
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::Value;

use super::params::refusal;
use crate::a2a::jsonrpc::{error_body, result_raw};
use crate::a2a::rest_call::rest_call;
use crate::a2a::{Family, Version};
use crate::bridge::events::map_event_data;
use crate::bridge::v03;
use crate::http::body::{self, Body};
use crate::http::error::table::code_for_rest;
use crate::http::error::GatewayError;
use crate::relay::sse::Rewrite;
use crate::upstream::{Caller, Origin, RpcCall, Upstream};

/// A REST call as the client sent it: what passes through to an agent's
/// HTTP+JSON interface when no translation is needed.
pub(crate) struct RestRequest {
    /// The route's path (under any prefix), without the query.
    pub(crate) path: String,
    pub(crate) body: Bytes,
}

/// The 1.0 call's `params` as the REST call to `upstream`'s
/// interface at `path`, of that `version` (1.0, or 0.3: its routes under
/// `/v1`, its ProtoJSON). A call the REST routes cannot carry is the
/// client's error, naming what.
pub(crate) fn call(
    upstream: &Upstream,
    mut parts: Parts,
    params: Option<Value>,
    family: Family,
    (path, version): (&str, Version),
    origin: Origin,
    caller: &Caller<'_>,
) -> Result<RpcCall, GatewayError> {
    let refused = |why: String| {
        GatewayError::InvalidParams(format!("over the agent's HTTP+JSON interface: {why}"))
    };
    let (params, path) = match version {
        Version::V0_3 => {
            let params =
                v03::rest_agent::params_out(family, params).map_err(|e| refusal(e, refused))?;
            (Some(params), format!("{path}/v1"))
        }
        _ => (params, path.to_string()),
    };
    let rest = rest_call(family, params.as_ref(), &path).map_err(refused)?;
    crate::bridge::headers::for_agent(&mut parts.headers, version);
    let body = match rest.body {
        Some(body) => {
            crate::http::body::set_json(&mut parts.headers);
            Bytes::from(body)
        }
        None => {
            parts.headers.remove(header::CONTENT_TYPE);
            Bytes::new()
        }
    };
    upstream
        .rpc_call_from(parts, body, origin, caller)
        .streaming(family.streams())
        .at_path(rest.method, &rest.path_and_query)
}

/// A REST call to an agent's HTTP+JSON interface at `path` of the
/// client's version: method, route (`sent_path`), query and body as the
/// client sent them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pass(
    upstream: &Upstream,
    parts: Parts,
    (sent_path, body): (&str, &Bytes),
    path: &str,
    origin: Origin,
    caller: &Caller<'_>,
    streams: bool,
) -> Result<RpcCall, GatewayError> {
    let method = parts.method.clone();
    let call = (upstream.rpc_call_from(parts, body.clone(), origin, caller)).streaming(streams);
    let mut target = String::with_capacity(path.len() + sent_path.len() + 64);
    target.push_str(path);
    target.push_str(sent_path);
    if let Some(query) = call.query() {
        target.push('?');
        target.push_str(query);
    }
    call.at_path(method, &target)
}

/// The agent's unary REST answer as a JSON-RPC one with the call's `id`
/// (from a 0.3 agent, `v03` is the call's family: its answer is read into
/// 1.0). An HTTP error that is not A2A's goes as it came, as any agent's
/// does.
pub(crate) async fn answer<B>(
    response: Response<B>,
    id: Option<&RawValue>,
    owner: &str,
    within: std::time::Duration,
    v03: Option<Family>,
) -> Result<Response<Body>, GatewayError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let (mut parts, body) = response.into_parts();
    let mut bytes = crate::relay::whole::read(body, owner, within).await?;
    let id = id.map_or("null", |id| id.get());
    if let (Some(family), true) = (v03, parts.status.is_success()) {
        bytes = read_0_3(&bytes, |v| v03::rest_agent::IN.answer(family, v)).map_err(|why| {
            GatewayError::InvalidAgentResponse {
                upstream: owner.to_string(),
                detail: format!("its HTTP+JSON 0.3 answer: {why}"),
            }
        })?;
    }
    let encoded = match parts.status.is_success() {
        true => result(id, &bytes).ok_or_else(|| GatewayError::InvalidAgentResponse {
            upstream: owner.to_string(),
            detail: format!("its HTTP+JSON answer ({}) is not JSON", parts.status),
        })?,
        false => match error(id, &bytes) {
            Some(encoded) => encoded,
            None => return Ok(Response::from_parts(parts, body::full(bytes))),
        },
    };
    parts.status = StatusCode::OK;
    parts.headers.remove(header::CONTENT_LENGTH);
    crate::http::body::set_json(&mut parts.headers);
    Ok(Response::from_parts(parts, body::full(encoded)))
}

/// Each event of the agent's REST stream as a JSON-RPC one with `id`
/// (read into 1.0 first from a 0.3 agent: `v03`).
pub(crate) fn events(id: Option<&RawValue>, v03: bool) -> Rewrite {
    let id = id.map_or("null", |id| id.get()).to_string();
    Box::new(move |events: &[u8]| {
        let id = id.as_str();
        map_event_data(events, |data| {
            if is_status(data) {
                let encoded = error(id, data).ok_or("an error event is not JSON")?;
                return Ok((None, encoded));
            }
            let read;
            let data = match v03 {
                true => {
                    read = read_0_3(data, |v| v03::rest_agent::IN.item(v, "event"))?;
                    &read[..]
                }
                false => data,
            };
            let encoded = result(id, data).ok_or("an event of its HTTP+JSON stream is not JSON")?;
            Ok((None, encoded))
        })
        .map_err(|(encoded, why): (Bytes, String)| (encoded, why))
    })
}

/// A 0.3 answer or event, read into 1.0 by `read`.
fn read_0_3(
    bytes: &[u8],
    read: impl FnOnce(Value) -> Result<Value, crate::bridge::Untranslatable>,
) -> Result<Bytes, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let value = read(value).map_err(|e| e.to_string())?;
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// `{"jsonrpc":"2.0","id":ID,"result":RESULT}` (`id` is the call's id as
/// JSON text), the result's bytes as the agent wrote them (checked to be
/// JSON). An empty body is `{}`: the ProtoJSON of `google.protobuf.Empty`
/// (a deleted push config).
fn result(id: &str, result: &[u8]) -> Option<Vec<u8>> {
    let result = match result.iter().all(u8::is_ascii_whitespace) {
        true => b"{}".as_slice(),
        false => {
            serde_json::from_slice::<IgnoredAny>(result).ok()?;
            result
        }
    };
    Some(result_raw(id, result))
}

/// Whether an event is a `google.rpc.Status` (an error the agent ended
/// its stream with): a `StreamResponse` has no `error` member.
fn is_status(data: &[u8]) -> bool {
    serde_json::from_slice::<Value>(data)
        .is_ok_and(|v| v.get("error").is_some_and(Value::is_object))
}

/// A `google.rpc.Status` as the JSON-RPC error it names; its ErrorInfo's
/// metadata is the error's data. `None`: not a `google.rpc.Status`.
fn error(id: &str, status: &[u8]) -> Option<Vec<u8>> {
    let status: Value = serde_json::from_slice(status).ok()?;
    let error = status.get("error")?.as_object()?;
    let info = (error.get("details").and_then(Value::as_array).into_iter())
        .flatten()
        .find(|d| d.get("reason").is_some());
    let reason = info.and_then(|i| i.get("reason")).and_then(Value::as_str);
    let code = code_for_rest(reason, error.get("status").and_then(Value::as_str));
    let message = match error.get("message") {
        Some(Value::String(message)) => message.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let data = (info.and_then(|i| i.get("metadata")))
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()));
    let id = serde_json::from_str::<&RawValue>(id).ok();
    Some(error_body(id, code, &message, data).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id() -> Box<RawValue> {
        RawValue::from_string("7".into()).unwrap()
    }

    const ID: &str = "7";

    #[test]
    fn results_keep_their_bytes_and_errors_become_json_rpc_errors() {
        let encoded = result(ID, br#"{"task": {"id":"t"}}"#).unwrap();
        assert_eq!(
            encoded,
            br#"{"jsonrpc":"2.0","id":7,"result":{"task": {"id":"t"}}}"#
        );
        assert_eq!(
            result("null", b"").unwrap(),
            br#"{"jsonrpc":"2.0","id":null,"result":{}}"#
        );
        assert!(result("null", b"<html>").is_none());
        let status = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"no task t",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
            "reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"id":"t"}}]}}"#;
        let encoded: Value = serde_json::from_slice(&error(ID, status).unwrap()).unwrap();
        assert_eq!(
            encoded,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32001, "message": "no task t",
                "data": {"id": "t"}}})
        );
        let bare = br#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad"}}"#;
        let encoded: Value = serde_json::from_slice(&error("null", bare).unwrap()).unwrap();
        assert_eq!(encoded["error"]["code"], -32602);
        assert!(error("null", b"{\"detail\":\"Not Found\"}").is_none());
    }

    #[test]
    fn stream_events_are_said_one_by_one() {
        let mut rewrite = events(Some(&id()), false);
        let out = rewrite(b"data: {\"task\":{}}\n\nevent: error\ndata: {\"error\":{\"code\":400,\"status\":\"FAILED_PRECONDITION\",\"message\":\"m\",\"details\":[{\"reason\":\"TASK_NOT_CANCELABLE\"}]}}\n\n").unwrap();
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert!(
            text.starts_with("data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"task\":{}}}\n\n"),
            "{text}"
        );
        assert!(text.contains("\"code\":-32002"), "{text}");
        assert!(rewrite(b"data: nope\n\n").is_err());
    }
}
