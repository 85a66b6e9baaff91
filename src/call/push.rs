//! The push relay's part of a call, when `[push_relay]` is on: the
//! client's webhooks sealed into callbacks on the gateway before the call
//! goes to its agent, the callbacks in a push-config answer opened back
//! into the client's own webhooks, and deletions remembered
//! (`crate::push_relay`).

use bytes::Bytes;
use http::{header, Response};
use serde_json::value::RawValue;
use serde_json::Value;

use super::client::RawParams;
use super::validated::Call;
use crate::a2a::model::Params;
use crate::a2a::{Family, Method, Version};
use crate::http::body::{self, Body};
use crate::http::error::GatewayError;
use crate::push_guard::webhook_urls;
use crate::push_relay::rewrite::{open_answer, seal_params, Sealing};
use crate::push_relay::seal::ClientConfig;
use crate::state::AppState;
use crate::telemetry::trace::CallTrace;

/// Bound on a push-config answer read to open its callbacks.
const MAX_ANSWER: usize = 1024 * 1024;

/// Whether the relay rewrites this call's params or its answer. Such a
/// call takes the translated way to its agent (its params encoded again),
/// never the pass-through of the client's bytes.
pub(super) fn rewrites(state: &AppState, method: &Method, params: &Params<'_>) -> bool {
    state.push_relay.is_some()
        && match method.family {
            Family::PushSet | Family::PushGet | Family::PushList => true,
            Family::Send | Family::Stream => !webhook_urls(params).is_empty(),
            _ => false,
        }
}

/// The call's params, in the client's version, with each webhook sealed
/// into a callback: `None` when there is none to seal.
pub(super) fn seal(
    state: &AppState,
    call: &Call<'_>,
    (client, agent): (Version, Version),
    trace: Option<&CallTrace>,
) -> Result<Option<Box<RawValue>>, GatewayError> {
    let Some(callback) = &state.push_relay else {
        return Ok(None);
    };
    let family = call.method.family;
    let sealable = matches!(family, Family::Send | Family::Stream | Family::PushSet);
    if !sealable || webhook_urls(call.params).is_empty() {
        return Ok(None);
    }
    let Some(raw) = call.raw_params.get()? else {
        return Ok(None);
    };
    let mut params: Value = serde_json::from_str(raw.get())
        .map_err(|e| GatewayError::Internal(format!("the params could not be read: {e}")))?;
    let task = crate::routing::request::task_ref(call.method, call.params);
    let template = ClientConfig {
        version: client.label().into(),
        binding: call.client_binding.label().into(),
        agent_version: agent.label().into(),
        task_id: task.map(|t| t.id).unwrap_or_default(),
        traceparent: trace.and_then(CallTrace::traceparent),
        ..ClientConfig::default()
    };
    let sealing = Sealing {
        relay: &callback.relay,
        template,
    };
    seal_params(&mut params, family, &sealing).map_err(|why| {
        GatewayError::InvalidParams(format!("the push config cannot be relayed: {why}"))
    })?;
    let text = serde_json::to_string(&params)
        .map_err(|e| GatewayError::Internal(format!("the params could not be written: {e}")))?;
    RawValue::from_string(text)
        .map(Some)
        .map_err(|e| GatewayError::Internal(format!("the params could not be written: {e}")))
}

/// A JSON-RPC client's call again, with its sealed params: the agent
/// answers the client's own id.
pub(super) fn envelope(
    id: Option<&RawValue>,
    method: &Method,
    params: &RawValue,
) -> Result<Bytes, GatewayError> {
    let mut out = Vec::with_capacity(params.get().len() + 64);
    crate::a2a::jsonrpc::write_request(&mut out, id, method.name, &Some(params))
        .map_err(|e| GatewayError::Internal(format!("the call could not be encoded: {e}")))?;
    Ok(Bytes::from(out))
}

/// The params as they go on: sealed when they were.
pub(super) fn params<'a>(sealed: Option<&'a RawValue>, sent: RawParams<'a>) -> RawParams<'a> {
    match sealed {
        Some(params) => RawParams::Read(Some(params)),
        None => sent,
    }
}

/// The config a push-config delete names: its task, and its id.
pub(super) fn deletion(
    state: &AppState,
    method: &Method,
    params: &Params<'_>,
) -> Option<(String, Option<String>)> {
    state.push_relay.as_ref()?;
    let (Family::PushDelete, Params::Task(p)) = (method.family, params) else {
        return None;
    };
    // 1.0 names the task `taskId` and the config `id`; 0.x the task `id`
    // and the config `pushNotificationConfigId`.
    let (task, config) = match &p.task_id {
        Some(task) => (task, p.id.as_ref()),
        None => (p.id.as_ref()?, p.push_notification_config_id.as_ref()),
    };
    Some((task.to_string(), config.map(|c| c.to_string())))
}

/// The answer to a push-config call, in the client's version (JSON-RPC,
/// before the client binding encodes it): callbacks opened back into the
/// client's webhooks, a successful delete remembered.
pub(super) async fn answered(
    state: &AppState,
    (family, owner): (Family, Option<&str>),
    deletion: Option<(String, Option<String>)>,
    response: Response<Body>,
) -> Response<Body> {
    let Some(callback) = &state.push_relay else {
        return response;
    };
    let opens = matches!(family, Family::PushSet | Family::PushGet | Family::PushList);
    if !opens && deletion.is_none() {
        return response;
    }
    let (mut parts, answer) = response.into_parts();
    let bytes = match body::read_to_limit(answer, MAX_ANSWER).await {
        Ok(bytes) => bytes,
        // The agent's answer broke off, or is over the bound: its fault.
        Err(_) => {
            let error = GatewayError::UpstreamBadResponse {
                upstream: owner.unwrap_or("the agent").to_string(),
                detail: format!(
                    "its push-config answer could not be read whole (at most {MAX_ANSWER} bytes)"
                ),
            };
            return error.into_response(None);
        }
    };
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, body::full(bytes));
    };
    if value.get("error").is_some() {
        return Response::from_parts(parts, body::full(bytes));
    }
    if let Some((task, config)) = deletion {
        callback
            .queues
            .shared
            .deleted
            .record(&task, config.as_deref());
        return Response::from_parts(parts, body::full(bytes));
    }
    let opened = match value.get_mut("result") {
        Some(result) => open_answer(result, &callback.relay.sealer),
        None => 0,
    };
    if opened == 0 {
        return Response::from_parts(parts, body::full(bytes));
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    let text = value.to_string();
    Response::from_parts(parts, body::full(text))
}
