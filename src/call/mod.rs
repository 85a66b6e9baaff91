//! Stage 2, one call, whatever binding it came in: the caller checked,
//! the body read once (bounded, through the client binding's
//! `ClientSide`), the envelope, method and params validated; then
//! authorize, route, admit, and the plan that forwards it (`forward`).
//! The answer comes back in the client's binding.

use std::sync::Arc;

use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::a2a::model::{one_pass, read, Params};
use crate::a2a::{jsonrpc, methods, validate, Family, Method};
use crate::auth::authz::Target;
use crate::auth::Identity;
use crate::egress::grpc::GrpcRequest;
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::limits::concurrency::Permits;
use crate::routing::Route;
use crate::state::{AppState, ConnInfo};
use crate::telemetry::access::{Called, Logged, Record};
use crate::upstream::headers;

mod bridged;
mod client;
pub mod client_ip;
pub mod endpoint;
pub mod extended_card;
mod forward;
pub(crate) mod intake;
mod probe;
mod push;
mod route;
mod validated;

use client::RawParams;
pub use intake::origin;
use intake::{check_content_type, client_address};
use route::{learn_from_request, route};
use validated::{caller, Call};

pub(crate) use client::{ClientBinding, ClientSide, Decoded, RequestBody};

/// Unknown method names are echoed in errors; a client can send megabytes.
const MAX_ECHOED_METHOD: usize = 64;

/// One call from a client binding's front door (`crate::ingress`):
/// `path_upstream` is the agent its path or metadata names. The call's
/// record is written however the call ends, a client that leaves included.
pub(crate) async fn serve(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<RequestBody>,
    path_upstream: Option<usize>,
    side: impl ClientSide,
) -> Response<Body> {
    let request_id = request.headers().get(crate::http::request_id::HEADER);
    let mut record = Record::new(request_id, state.metrics.clone());
    record.client = Some(client_address(&state, conn, request.headers()));
    let trace = (state.tracing.as_ref()).map(|t| Arc::new(t.call(request.headers())));
    record.trace = trace.clone();
    // A client that leaves before the answer drops this future: the guard
    // still writes the call's record.
    let mut pending = Pending(Some(record));
    let Some(record) = pending.0.as_mut() else {
        return GatewayError::Internal("the call's record is gone".into()).into_response(None);
    };
    // What is logged on the call's way names its trace. The call's future
    // is made where it is awaited: bound first, it was moved (kilobytes).
    let response = match trace {
        Some(trace) => {
            use opentelemetry::context::FutureExt;
            let call = handle_call(&state, conn, request, path_upstream, record, side);
            call.with_context(trace.context().clone()).await
        }
        None => handle_call(&state, conn, request, path_upstream, record, side).await,
    };
    record.head(&response);
    match pending.0.take() {
        Some(record) => response.map(|body| Logged::new(body, record).boxed_unsync()),
        None => response,
    }
}

/// The record of a call not answered yet: written as `abandoned` if the
/// call is dropped first.
struct Pending(Option<Record>);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(record) = self.0.take() {
            record.abandoned();
        }
    }
}

async fn handle_call(
    state: &Arc<AppState>,
    conn: &ConnInfo,
    request: Request<RequestBody>,
    path_upstream: Option<usize>,
    record: &mut Record,
    side: impl ClientSide,
) -> Response<Body> {
    let client_binding = side.binding();
    record.binding = client_binding.label();
    let (mut parts, body) = request.into_parts();
    let identity = match check_caller(state, conn, &parts, record).await {
        Ok(identity) => identity,
        Err(e) => return refuse_unread(state, client_binding, (e, body), &parts, record).await,
    };
    let (decoded, rest_request) = match side.read(state, &mut parts, body).await {
        Ok(read) => read,
        Err(e) => return client_binding.refuse(e, None),
    };
    record.request_bytes = decoded.len();
    if let Some(refused) = refuse_rpc_media_type(&parts, &decoded) {
        return refused;
    }
    let (id, method, params, raw_params) = match read_call(&decoded, record) {
        Ok(read) => read,
        Err((e, id)) => return client_binding.refuse(e, id),
    };
    let grpc_request = parts.extensions.remove::<GrpcRequest>();
    let call = Call {
        parts,
        conn,
        id,
        method,
        params: &params,
        raw_params,
        identity: identity.as_ref(),
        path_upstream,
        client_binding,
        rest_request,
        grpc_request,
    };
    let origin = origin(state, &call.parts, call.conn);
    let deletion = push::deletion(state, method, &params);
    let forwarded = match route_and_admit(state, &call, &origin, record).await {
        // Boxed: forward's future is kilobytes, and inline it made every
        // call's future as large; the whole future is moved (memcpy) five
        // times a call on its way into its box (bench/DIARY.md, #64).
        Ok(Admitted::Routed(routed)) => {
            Box::pin(forward::forward(
                state,
                call,
                &decoded,
                (routed, origin),
                record,
            ))
            .await
        }
        Ok(Admitted::Answered(response)) => Ok(response),
        Err(e) => Err(e),
    };
    match forwarded {
        Ok(response) if state.push_relay.is_some() => {
            let owner = record.upstream.as_ref().map(|u| u.name().to_string());
            let asked = (method.family, owner.as_deref());
            let response = push::answered(state, asked, deletion, response).await;
            client_binding.answer(response, method.family).await
        }
        Ok(response) => client_binding.answer(response, method.family).await,
        Err(e) => {
            count_rejection(state, &e);
            client_binding.refuse(e, id)
        }
    }
}

/// The refusal of a JSON-RPC call whose `Content-Type` is not JSON.
/// Checked after the body is read, so that the refusal mirrors its id.
fn refuse_rpc_media_type(parts: &Parts, decoded: &Decoded) -> Option<Response<Body>> {
    let Decoded::JsonRpc(bytes) = decoded else {
        return None;
    };
    let got = check_content_type(&parts.headers).err()?;
    let id = jsonrpc::parse(bytes).ok().and_then(|e| e.id);
    Some(GatewayError::ContentTypeNotSupported(got).into_response(id))
}

/// The caller's identity, once its credentials pass and it speaks a
/// version the gateway speaks. Checked before anything else: a caller who
/// may not use the gateway learns nothing about what it would have made
/// of the request.
async fn check_caller(
    state: &AppState,
    conn: &ConnInfo,
    parts: &Parts,
    record: &mut Record,
) -> Result<Option<Identity>, GatewayError> {
    let identity = state.authenticate(parts, conn).await.inspect_err(|e| {
        count_auth_failure(state, e);
    })?;
    record.caller = identity.as_ref().map(|i| i.subject.clone());
    // A version the gateway does not speak is no agent's to answer.
    intake::check_version(parts)?;
    Ok(identity)
}

/// A refusal before the call is read, in the client's binding.
async fn refuse_unread(
    state: &AppState,
    client_binding: ClientBinding,
    (error, body): (GatewayError, RequestBody),
    parts: &Parts,
    record: &mut Record,
) -> Response<Body> {
    match client_binding {
        ClientBinding::JsonRpc => refuse(state, error, parts, body, record).await,
        ClientBinding::Grpc => error.into_response(None),
        ClientBinding::Rest | ClientBinding::Rest03 => error.into_rest_response(),
    }
}

/// A push-config call to an agent whose card does not say it sends push
/// notifications: the agent would refuse it, and its webhook need not be
/// checked (or resolved) for nothing.
fn can_push(state: &AppState, method: &Method, owner: &str) -> Result<(), GatewayError> {
    use Family::*;
    let push_config = matches!(method.family, PushSet | PushGet | PushList | PushDelete);
    if push_config && state.fleet.view().can_push(owner) == Some(false) {
        let why = format!("agent '{owner}' does not send push notifications (its card says so)");
        return Err(GatewayError::PushNotificationNotSupported(why));
    }
    Ok(())
}

/// The SSRF guard on the call's webhook URLs, before anyone is contacted.
/// A refused webhook in a push-config call to an agent known without
/// routing (by path, or the only one) that does not send push
/// notifications is answered as the agent would: -32003.
async fn check_webhooks(state: &AppState, call: &Call<'_>) -> Result<(), GatewayError> {
    let guard = &state.config.push_guard;
    let Err(why) = guard.check_request(call.params).await else {
        return Ok(());
    };
    let known = match (call.path_upstream, state.upstreams.len()) {
        (Some(i), _) => Some(i),
        (None, 1) => Some(0),
        _ => None,
    };
    if let Some(i) = known {
        can_push(state, call.method, &state.router.name(i))?;
    }
    Err(GatewayError::InvalidParams(why))
}

/// An agent whose card must be signed (`card_signature = "required"`) is
/// called only while a card with a valid signature is in use.
fn verified(state: &AppState, upstream: usize, owner: &str) -> Result<(), GatewayError> {
    use crate::config::card_trust::SignatureMode;
    let required = (state.config.upstreams.get(upstream))
        .is_some_and(|u| u.card_signature.mode == SignatureMode::Required);
    if !required || state.fleet.view().card_of(owner).is_some() {
        return Ok(());
    }
    let state_now = state.fleet.store.signatures.get(owner);
    let detail = match state_now.as_ref().and_then(|s| s.refusal()) {
        Some(refusal) => format!("its card is refused (card_signature = required): {refusal}"),
        None => "no card with a valid signature from a trusted key has arrived yet".into(),
    };
    Err(GatewayError::UpstreamNotVerified {
        upstream: owner.to_string(),
        detail,
    })
}

/// A streaming method sent to an agent whose card says it does not stream.
fn can_stream(state: &AppState, method: &Method, owner: &str) -> Result<(), GatewayError> {
    if method.family.streams() && state.fleet.view().can_stream(owner) == Some(false) {
        let why = format!(
            "{} streams, but agent '{owner}' does not support streaming",
            method.name
        );
        return Err(GatewayError::UnsupportedOperation(why));
    }
    Ok(())
}

/// A call's id, method, validated params and the params as sent.
type ReadCall<'a> = (
    Option<&'a RawValue>,
    &'static Method,
    Params<'a>,
    RawParams<'a>,
);

/// A call's id, method and validated params, as decoded; or why not, with
/// the id to mirror. A call another binding decoded takes the gateway's id.
/// A JSON-RPC request is read in one pass when it can be
/// (`crate::a2a::model::one_pass`), else in two, which words refusals.
fn read_call<'a>(
    decoded: &'a Decoded,
    record: &mut Record,
) -> Result<ReadCall<'a>, (GatewayError, Option<&'a RawValue>)> {
    let bytes = match decoded {
        Decoded::JsonRpc(bytes) => bytes,
        Decoded::Params { method, params } => {
            record.called = Called::Known(method);
            let id = jsonrpc::gateway_id();
            let raw: &RawValue = serde_json::from_slice(params).map_err(|e| {
                let why = format!("the call's params could not be read: {e}");
                (GatewayError::Internal(why), id)
            })?;
            let params = checked_params(method, Some(raw)).map_err(|e| (e, id))?;
            return Ok((id, *method, params, RawParams::Read(Some(raw))));
        }
    };
    if let Some(read) = crate::a2a::utf8::text(bytes).and_then(one_pass::read) {
        record.called = Called::Known(read.method);
        if let Err(why) = validate::check(read.method, &read.params) {
            return Err((GatewayError::InvalidParams(why), read.id));
        }
        return Ok((read.id, read.method, read.params, RawParams::InBody(bytes)));
    }
    let envelope = jsonrpc::parse(bytes).map_err(|e| {
        let error = GatewayError::Rpc {
            code: e.code,
            message: e.message,
        };
        (error, e.id)
    })?;
    let id = envelope.id;
    let Some(method) = methods::lookup(&envelope.method) else {
        record.called = Called::Unknown;
        let name: String = envelope.method.chars().take(MAX_ECHOED_METHOD).collect();
        return Err((GatewayError::MethodNotFound(name), id));
    };
    record.called = Called::Known(method);
    let raw = envelope.params;
    match checked_params(method, raw) {
        Ok(params) => Ok((id, method, params, RawParams::Read(raw))),
        Err(e) => Err((e, id)),
    }
}

/// A method's params read and validated.
fn checked_params<'a>(
    method: &Method,
    raw: Option<&'a RawValue>,
) -> Result<Params<'a>, GatewayError> {
    read::params(method, raw)
        .and_then(|params| validate::check(method, &params).map(|()| params))
        .map_err(GatewayError::InvalidParams)
}

/// `auth_failures_total{scheme, reason}`.
fn count_auth_failure(state: &AppState, error: &GatewayError) {
    let (scheme, reason) = match error {
        GatewayError::Unauthenticated { scheme, reason, .. } => (
            scheme.as_str(),
            if reason.starts_with("credentials are required") {
                "missing"
            } else {
                "invalid"
            },
        ),
        GatewayError::Forbidden { .. } => ("any", "insufficient_scope"),
        _ => ("any", "other"),
    };
    state
        .metrics
        .auth_failures
        .with_label_values(&[scheme, reason])
        .inc();
}

/// `rejections_total{limit}` for calls refused by a limit.
fn count_rejection(state: &AppState, error: &GatewayError) {
    let limit = match error {
        GatewayError::RateLimited(r) => r.limit,
        GatewayError::Overloaded { limit, .. } => limit,
        GatewayError::RateStoreUnavailable { .. } => "rate_store",
        GatewayError::Forbidden { .. } => return count_forbidden(state),
        _ => return,
    };
    state.metrics.rejections.with_label_values(&[limit]).inc();
}

/// `auth_failures_total{scheme="any", reason="forbidden"}`.
fn count_forbidden(state: &AppState) {
    state
        .metrics
        .auth_failures
        .with_label_values(&["any", "forbidden"])
        .inc();
}

/// What happens to a call before it is forwarded.
enum Admitted {
    /// It goes to an agent (`forward`).
    Routed(forward::Routed),
    /// The gateway answered it itself.
    Answered(Response<Body>),
}

/// The agent a call goes to, once its webhooks are allowed, this caller
/// may call it there and the call has its places (`admit`); or the
/// gateway's own answer (the extended card).
async fn route_and_admit(
    state: &Arc<AppState>,
    call: &Call<'_>,
    origin: &crate::upstream::Origin,
    record: &mut Record,
) -> Result<Admitted, GatewayError> {
    check_webhooks(state, call).await?;
    if call.method.family == Family::ExtendedCard {
        return Ok(Admitted::Answered(
            extended_card::answer(state, call, origin).await,
        ));
    }
    let caller = caller(state, call.identity, record.trace.as_deref());
    let (method, parts) = (call.method, &call.parts);
    let input = call.route_input();
    let routed = route(state, &input, parts, origin, &caller, call.identity).await;
    let rule = |r: &Route| (r.rule.index(), r.rule.label());
    state.metrics.routed(routed.as_ref().ok().map(rule));
    let route = routed?;
    let owner = state.router.name(route.upstream);
    verified(state, route.upstream, &owner)?;
    let meters = &state.meters[route.upstream];
    record.routed(meters, route.skill.clone(), route.rule.label());
    authorize(state, call, &route, &owner)?;
    let client = record.client.unwrap_or(origin.peer.ip());
    let permits = admit(state, call, &route, &owner, client).await?;
    tracing::debug!(method = method.name, upstream = %owner, rule = route.rule.label(), skill = ?route.skill, "routed");
    can_stream(state, method, &owner)?;
    can_push(state, method, &owner)?;
    learn_from_request(state, method, call.params, &owner);
    if let Some(t) = &record.trace {
        if let Some(task) = crate::routing::request::task_ref(method, call.params) {
            t.task(&task.id);
        }
    }
    Ok(Admitted::Routed(forward::Routed {
        route,
        owner,
        permits,
    }))
}

/// The places a routed call needs before it is sent: within its caller's
/// rate, a stream place for a stream, and an in-flight slot on the upstream
/// (a short queue, then shed).
async fn admit(
    state: &AppState,
    call: &Call<'_>,
    route: &Route,
    owner: &str,
    client: std::net::IpAddr,
) -> Result<Permits, GatewayError> {
    // Keyed by who is calling: the verified identity, else the client's
    // address (behind a trusted proxy, the one it reports). Made only when
    // a limit asks: most calls meet no per-caller limit.
    let caller_key = || match call.identity {
        Some(who) => format!("id:{}", who.subject),
        None => {
            let mut key = String::with_capacity(24);
            key.push_str("ip:");
            headers::push_ip(&mut key, client);
            key
        }
    };
    if state.rate.is_configured() {
        (state.rate)
            .check(&caller_key(), owner, route.skill.as_deref())
            .await?;
    }
    // Streams are bounded per caller and in total; every call by the
    // upstream's in-flight limit (a short queue, then shed).
    let stream = match call.method.family.streams() {
        true => Some(state.streams.try_open(&caller_key())?),
        false => None,
    };
    let slot = state.in_flight[route.upstream].acquire().await?;
    Ok(Permits { slot, stream })
}

/// 403 unless the authorization rules let this caller use the target.
///
/// A call that continues a task its owner alone knows (routed by
/// affinity) is answered as a task nobody has, -32001, when this caller
/// may not make it there: a probe for an unknown task asks only the agents
/// the caller may use and answers the same, so a refusal does not tell
/// that the task exists, nor where.
fn authorize(
    state: &AppState,
    call: &Call<'_>,
    route: &Route,
    owner: &str,
) -> Result<(), GatewayError> {
    let Some(who) = call.identity else {
        return Ok(());
    };
    let view = state.fleet.view();
    let target = Target {
        upstream: owner,
        skill: route.skill.as_deref(),
        family: call.method.family.label(),
    };
    let owned = |skill: &str| view.skill(skill).is_some_and(|s| s.upstream == owner);
    if state.config.authz.allows(who, &target, owned) {
        return Ok(());
    }
    if route.rule == crate::routing::Rule::Affinity {
        if let Some(task) = crate::routing::request::task_ref(call.method, call.params) {
            count_forbidden(state);
            return Err(GatewayError::TaskNotFound(task.id));
        }
    }
    let what = route
        .skill
        .as_deref()
        .map_or_else(|| format!("agent '{owner}'"), |s| format!("skill '{s}'"));
    Err(GatewayError::Forbidden {
        reason: format!(
            "'{}' may not call {} on {what}",
            who.subject, call.method.name
        ),
        challenge: None,
    })
}

/// A refusal before the call is read (401/403, an unspoken version), in
/// JSON-RPC, mirroring the request id when the body has one.
async fn refuse(
    state: &AppState,
    error: GatewayError,
    parts: &Parts,
    body: RequestBody,
    record: &mut Record,
) -> Response<Body> {
    let bytes = body.read(state, parts).await.unwrap_or_default();
    record.request_bytes = bytes.len();
    let id = jsonrpc::parse(&bytes).ok().and_then(|e| e.id);
    error.into_response(id)
}
