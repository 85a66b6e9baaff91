//! The JSON-RPC front door: read the body once (bounded), validate the
//! envelope, method and params, pick the upstream, forward the original
//! bytes, and relay the answer (SSE event by event) while learning which
//! upstream owns the tasks it mentions.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::value::RawValue;

use crate::a2a::dialect::Binding;
use crate::a2a::model::{read, Params};
use crate::a2a::{jsonrpc, methods, validate, Family, Method, Version};
use crate::auth::authz::Target;
use crate::auth::Identity;
use crate::http::body::Body;
use crate::http::error::GatewayError;
use crate::limits::concurrency::StreamPermit;
use crate::routing::{Route, RouteInput};
use crate::state::{AppState, ConnInfo};
use crate::telemetry::access::{Called, Logged, Record};
use crate::upstream::{headers, Caller};

mod agent_params;
mod bridged;
pub mod client_ip;
pub mod endpoint;
pub mod extended_card;
mod forward;
pub mod grpc;
mod grpc03;
mod grpc_agent;
mod grpc_call;
mod grpc_health;
mod grpc_pass;
mod grpc_reflection;
mod grpc_relay;
mod grpc_serve;
mod intake;
pub mod observe;
mod relay;
mod rest;
mod rest_agent;
mod route;
pub mod sse;
mod whole;

pub use intake::origin;
use intake::{check_content_type, client_address, read_body};
pub use rest::refused as rest_refused;
use route::{learn_from_request, route};

/// Unknown method names are echoed in errors; a client can send megabytes.
const MAX_ECHOED_METHOD: usize = 64;

/// A call's body: still on the wire, or read already (a gRPC message,
/// encoded as the JSON-RPC call it is by `grpc`).
enum RequestBody {
    Wire(Incoming),
    Read(Bytes),
}

/// How a call arrived, as the client binding placed it.
enum Arrived {
    JsonRpc,
    Rest(crate::a2a::rest::RestRoute),
    /// A gRPC call: its body is the 1.0 JSON-RPC call, its answer goes
    /// back to `grpc` as JSON-RPC.
    Grpc,
}

/// How the client called: its binding decides how refusals and answers
/// are said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientBinding {
    JsonRpc,
    /// gRPC (`grpc`), which reads the JSON-RPC answer itself.
    Grpc,
    /// HTTP+JSON (`crate::a2a::rest`).
    Rest,
    /// HTTP+JSON 0.3 (`/v1/...`): the 1.0 call it is read as, answered in
    /// 0.3's ProtoJSON (`crate::bridge::v03_rest`).
    Rest03,
}

impl ClientBinding {
    fn of(arrived: &Arrived) -> Self {
        match arrived {
            Arrived::Rest(placed) if placed.v03 => ClientBinding::Rest03,
            Arrived::Rest(_) => ClientBinding::Rest,
            Arrived::JsonRpc => ClientBinding::JsonRpc,
            Arrived::Grpc => ClientBinding::Grpc,
        }
    }

    /// The binding's name in the call's record.
    fn label(self) -> &'static str {
        match self {
            ClientBinding::JsonRpc => "jsonrpc",
            ClientBinding::Grpc => "grpc",
            ClientBinding::Rest | ClientBinding::Rest03 => "http+json",
        }
    }

    /// A forwarded call's answer in this binding: a REST client's is
    /// encoded in REST unless it already is (passed through); a gRPC
    /// client's is read by `grpc`, or went as it came (`GrpcEncoded`).
    async fn answer(self, response: Response<Body>, family: Family) -> Response<Body> {
        let encoded = response.extensions().get::<grpc_agent::GrpcEncoded>();
        if encoded.is_some() || !self.is_rest() {
            return response;
        }
        let v03 = (self == ClientBinding::Rest03).then_some(family);
        rest::answer(response, v03).await
    }

    fn binding(self) -> Binding {
        match self {
            ClientBinding::JsonRpc => Binding::JsonRpc,
            ClientBinding::Grpc => Binding::Grpc,
            ClientBinding::Rest | ClientBinding::Rest03 => Binding::HttpJson,
        }
    }

    /// A refusal in the client's binding (JSON-RPC mirrors the id).
    fn refuse(self, error: GatewayError, id: Option<&RawValue>) -> Response<Body> {
        match self {
            ClientBinding::JsonRpc | ClientBinding::Grpc => error.into_response(id),
            ClientBinding::Rest | ClientBinding::Rest03 => error.into_rest_response(),
        }
    }

    fn is_rest(self) -> bool {
        matches!(self, ClientBinding::Rest | ClientBinding::Rest03)
    }

    /// The version the client speaks: a 0.3 REST call is read as the 1.0
    /// call `called` is.
    fn version(self, called: Version) -> Version {
        match self {
            ClientBinding::Rest03 => Version::V0_3,
            _ => called,
        }
    }
}

/// Handles a JSON-RPC POST; `path_upstream` is set for `/agents/{name}`.
pub fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Wire);
    serve(state, conn, request, path_upstream, Arrived::JsonRpc)
}

/// Handles a gRPC call encoded as its 1.0 JSON-RPC call (`grpc`); the answer
/// is in JSON-RPC, for `grpc` to write in gRPC.
pub fn handle_grpc(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Bytes>,
    agent: Option<usize>,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Read);
    serve(state, conn, request, agent, Arrived::Grpc)
}

/// Handles an HTTP+JSON call whose body is read already (a 0.3 gRPC call
/// encoded as its 0.3 REST call: `grpc03`).
fn handle_rest_read(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Bytes>,
    agent: Option<usize>,
    placed: crate::a2a::rest::RestRoute,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Read);
    serve(state, conn, request, agent, Arrived::Rest(placed))
}

/// Handles an HTTP+JSON call that `crate::a2a::rest::place` placed.
pub fn handle_rest(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
    placed: crate::a2a::rest::RestRoute,
) -> impl Future<Output = Response<Body>> + '_ {
    let request = request.map(RequestBody::Wire);
    serve(state, conn, request, path_upstream, Arrived::Rest(placed))
}

async fn serve(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<RequestBody>,
    path_upstream: Option<usize>,
    arrived: Arrived,
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
            let call = handle_call(&state, conn, request, path_upstream, record, arrived);
            call.with_context(trace.context().clone()).await
        }
        None => handle_call(&state, conn, request, path_upstream, record, arrived).await,
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
    arrived: Arrived,
) -> Response<Body> {
    let client_binding = ClientBinding::of(&arrived);
    record.binding = client_binding.label();
    let (mut parts, body) = request.into_parts();
    let identity = match check_caller(state, conn, &parts, record).await {
        Ok(identity) => identity,
        Err(e) => return refuse_unread(state, client_binding, (e, body), &parts, record).await,
    };
    let (bytes, rest_request) = match read_request(state, &mut parts, body, arrived).await {
        Ok(read) => read,
        Err(e) => return client_binding.refuse(e, None),
    };
    record.request_bytes = bytes.len();
    if client_binding == ClientBinding::JsonRpc {
        if let Err(got) = check_content_type(&parts.headers) {
            // Checked after the body is read, so that the answer mirrors its id.
            let id = jsonrpc::parse(&bytes).ok().and_then(|e| e.id);
            return GatewayError::ContentTypeNotSupported(got).into_response(id);
        }
    }
    let (id, method, params, raw_params) = match read_call(&bytes, record) {
        Ok(read) => read,
        Err((e, id)) => return client_binding.refuse(e, id),
    };
    let grpc_request = parts.extensions.remove::<grpc_agent::GrpcRequest>();
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
    let forwarded = match route_and_admit(state, &call, &origin, record).await {
        Ok(Admitted::Routed(routed)) => {
            forward::forward(state, call, bytes.clone(), (routed, origin), record).await
        }
        Ok(Admitted::Answered(response)) => Ok(response),
        Err(e) => Err(e),
    };
    match forwarded {
        Ok(response) => client_binding.answer(response, method.family).await,
        Err(e) => {
            count_rejection(state, &e);
            client_binding.refuse(e, id)
        }
    }
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
        ClientBinding::JsonRpc | ClientBinding::Grpc => {
            refuse(state, error, parts, body, record).await
        }
        ClientBinding::Rest | ClientBinding::Rest03 => error.into_rest_response(),
    }
}

/// The call's body (bounded) and, for a REST call, the JSON-RPC call it
/// is read as with the request as it came.
async fn read_request(
    state: &AppState,
    parts: &mut Parts,
    body: RequestBody,
    arrived: Arrived,
) -> Result<(Bytes, Option<rest::RestRequest>), GatewayError> {
    let Arrived::Rest(placed) = arrived else {
        return read_rpc_body(state, parts, body).await.map(|b| (b, None));
    };
    let bytes = match body {
        RequestBody::Wire(body) => read_body(&state.config.limits, &parts.headers, body).await?,
        RequestBody::Read(bytes) => bytes,
    };
    rest::request(parts, bytes, placed)
}

/// A JSON-RPC request's body, within the limits.
async fn read_rpc_body(
    state: &AppState,
    parts: &Parts,
    body: RequestBody,
) -> Result<Bytes, GatewayError> {
    match body {
        RequestBody::Wire(body) => read_body(&state.config.limits, &parts.headers, body).await,
        RequestBody::Read(bytes) => Ok(bytes),
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
    Option<&'a RawValue>,
);

/// A call's id, method and validated params, as read from `bytes`; or why
/// not, with the id to mirror.
fn read_call<'a>(
    bytes: &'a [u8],
    record: &mut Record,
) -> Result<ReadCall<'a>, (GatewayError, Option<&'a RawValue>)> {
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
    let params = read::params(method, raw)
        .and_then(|params| validate::check(method, &params).map(|()| params));
    match params {
        Ok(params) => Ok((id, method, params, raw)),
        Err(msg) => Err((GatewayError::InvalidParams(msg), id)),
    }
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

/// The places a call holds until its answer has been delivered.
struct Permits {
    slot: tokio::sync::OwnedSemaphorePermit,
    stream: Option<StreamPermit>,
}

/// A validated call on its way to an upstream.
struct Call<'a> {
    /// The client's head: the forwarded call takes its headers.
    parts: Parts,
    conn: &'a ConnInfo,
    id: Option<&'a RawValue>,
    method: &'static Method,
    params: &'a Params<'a>,
    /// The params as the client sent them (what the bridge translates).
    raw_params: Option<&'a RawValue>,
    identity: Option<&'a Identity>,
    path_upstream: Option<usize>,
    client_binding: ClientBinding,
    /// A REST call as the client sent it.
    rest_request: Option<rest::RestRequest>,
    /// A gRPC unary call as the client sent it.
    grpc_request: Option<grpc_agent::GrpcRequest>,
}

impl Call<'_> {
    /// What routing may look at.
    fn route_input(&self) -> RouteInput<'_> {
        RouteInput {
            method: self.method,
            params: self.params,
            headers: &self.parts.headers,
            path_upstream: self.path_upstream,
        }
    }
}

/// `GetExtendedAgentCard` (1.0), answered by the gateway itself.
async fn answer_extended_card(
    state: &Arc<AppState>,
    call: &Call<'_>,
    origin: &crate::upstream::Origin,
) -> Response<Body> {
    extended_card::answer(
        state,
        &call.parts,
        call.conn,
        origin,
        call.id,
        call.path_upstream,
        call.identity,
    )
    .await
}

/// What happens to a call before it is forwarded.
enum Admitted {
    /// It goes to an agent (`forward`).
    Routed(forward::Routed),
    /// The gateway answered it itself.
    Answered(Response<Body>),
}

/// Who the agent is told is calling, with the call's spans.
fn caller<'a>(
    state: &'a AppState,
    identity: Option<&'a Identity>,
    trace: Option<&'a crate::telemetry::trace::CallTrace>,
) -> Caller<'a> {
    Caller {
        consumed: state.consumed.as_ref(),
        subject: identity.map(|i| i.subject.as_str()),
        trace,
    }
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
            answer_extended_card(state, call, origin).await,
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
        state
            .rate
            .check(&caller_key(), owner, route.skill.as_deref())
            .map_err(GatewayError::RateLimited)?;
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
    let bytes = match body {
        RequestBody::Wire(body) => {
            (read_body(&state.config.limits, &parts.headers, body).await).unwrap_or_default()
        }
        RequestBody::Read(bytes) => bytes,
    };
    record.request_bytes = bytes.len();
    let id = jsonrpc::parse(&bytes).ok().and_then(|e| e.id);
    error.into_response(id)
}
