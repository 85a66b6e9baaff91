//! The JSON-RPC front door: read the body once (bounded), validate the
//! envelope, method and params, pick the upstream, forward the original
//! bytes, and relay the answer (SSE event by event) while learning which
//! upstream owns the tasks it mentions.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::request::Parts;
use http::{header, HeaderMap, Request, Response, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::value::RawValue;

use crate::a2a::{jsonrpc, methods, one_pass, Family, Method};
use crate::access::{Called, Logged, Record};
use crate::auth::authz::Target;
use crate::auth::Identity;
use crate::body::{Body, ReadError};
use crate::card::extended;
use crate::config::Limits;
use crate::error::GatewayError;
use crate::limits::concurrency::{Guarded, StreamPermit};
use crate::observe::Observed;
use crate::routing::{learn, probe, request, Decision, Route, RouteInput, Rule};
use crate::sketch::Sketch;
use crate::sse::{RelaySettings, SseRelay};
use crate::state::{AppState, ConnInfo};
use crate::upstream::{headers, Caller, Leased, Origin};
use crate::{cidr, client_ip};

/// Unknown method names are echoed in errors; a client can send megabytes.
const MAX_ECHOED_METHOD: usize = 64;
/// Unary answers larger than this are relayed but not scanned for task ids.
const MAX_LEARNED_BYTES: usize = 1024 * 1024;

/// Handles a JSON-RPC POST; `path_upstream` is set for `/agents/{name}`.
pub async fn handle(
    state: Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
) -> Response<Body> {
    let request_id = request.headers().get(crate::request_id::HEADER);
    let mut record = Record::new(request_id, state.metrics.clone());
    record.client = Some(client_address(&state, conn, request.headers()));
    let response = handle_call(&state, conn, request, path_upstream, &mut record).await;
    record.head(&response);
    response.map(|body| Logged::new(body, record).boxed_unsync())
}

async fn handle_call(
    state: &Arc<AppState>,
    conn: &ConnInfo,
    request: Request<Incoming>,
    path_upstream: Option<usize>,
    record: &mut Record,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    // Credentials first: a caller who may not use the gateway learns
    // nothing about what it would have made of the request.
    let identity = match state.authenticate(&parts, conn).await {
        Ok(identity) => identity,
        Err(e) => {
            count_auth_failure(state, &e);
            return refuse(state, e, &parts, body, record).await;
        }
    };
    record.caller = identity.as_ref().map(|i| i.subject.clone());
    if let Err(e) = check_content_type(&parts.headers) {
        return e.into_response(None);
    }
    let bytes = match read_body(&state.config.limits, &parts.headers, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(None),
    };
    record.request_bytes = bytes.len();
    // What reading the params builds lives here, for as long as the call.
    let arena = crate::sketch::arena();
    let envelope = match one_pass::parse(&bytes, &arena) {
        Ok(env) => env,
        Err(e) => {
            return GatewayError::Rpc {
                code: e.code,
                message: e.message,
            }
            .into_response(e.id)
        }
    };
    let id = envelope.id;
    let Some(method) = methods::lookup(&envelope.method) else {
        record.called = Called::Unknown;
        let name: String = envelope.method.chars().take(MAX_ECHOED_METHOD).collect();
        return GatewayError::MethodNotFound(name).into_response(id);
    };
    record.called = Called::Known(method);
    let params = match envelope.params.validate(method, &arena) {
        Ok(p) => p,
        Err(msg) => return GatewayError::InvalidParams(msg).into_response(id),
    };
    let call = Call {
        parts,
        conn,
        id,
        method,
        params: params.as_ref(),
        identity: identity.as_ref(),
        path_upstream,
    };
    match forward(state, call, bytes.clone(), record).await {
        Ok(response) => response,
        Err(e) => {
            count_rejection(state, &e);
            e.into_response(id)
        }
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
        GatewayError::Forbidden { .. } => {
            state
                .metrics
                .auth_failures
                .with_label_values(&["any", "forbidden"])
                .inc();
            return;
        }
        _ => return,
    };
    state.metrics.rejections.with_label_values(&[limit]).inc();
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
    params: Option<&'a Sketch<'a>>,
    identity: Option<&'a Identity>,
    path_upstream: Option<usize>,
}

async fn forward(
    state: &Arc<AppState>,
    call: Call<'_>,
    bytes: Bytes,
    record: &mut Record,
) -> Result<Response<Body>, GatewayError> {
    let (method, parts) = (call.method, &call.parts);
    state
        .config
        .push_guard
        .check_request(method, call.params)
        .await
        .map_err(GatewayError::InvalidParams)?;
    let origin = origin(state, parts, call.conn);
    let caller = Caller {
        consumed: state.consumed.as_ref(),
        subject: call.identity.map(|i| i.subject.as_str()),
    };
    if method.family == Family::ExtendedCard {
        return Ok(extended::answer(
            state,
            parts,
            call.conn,
            &origin,
            call.id,
            call.path_upstream,
            call.identity,
        )
        .await);
    }
    let input = RouteInput {
        method,
        params: call.params,
        headers: &parts.headers,
        path_upstream: call.path_upstream,
    };
    let routed = route(state, &input, parts, &origin, &caller, call.identity).await;
    state.metrics.routed(routed.as_ref().ok().map(|r| r.rule));
    let route = routed?;
    let owner = state.router.name(route.upstream);
    let meters = &state.meters[route.upstream];
    record.upstream = Some(meters.clone());
    record.skill = route.skill.clone();
    record.rule = route.rule.label();
    authorize(state, &call, &route, &owner)?;
    // Keyed by who is calling: the verified identity, else the client's
    // address (behind a trusted proxy, the one it reports). Made only when
    // a limit asks: most calls meet no per-caller limit.
    let caller_key = || match call.identity {
        Some(who) => format!("id:{}", who.subject),
        None => {
            let mut key = String::with_capacity(24);
            key.push_str("ip:");
            headers::push_ip(&mut key, record.client.unwrap_or(origin.peer.ip()));
            key
        }
    };
    if state.rate.is_configured() {
        state
            .rate
            .check(&caller_key(), &owner, route.skill.as_deref())
            .map_err(GatewayError::RateLimited)?;
    }
    // Streams are bounded per caller and in total; every call by the
    // upstream's in-flight limit (a short queue, then shed).
    let stream = match method.family.streams() {
        true => Some(state.streams.try_open(&caller_key())?),
        false => None,
    };
    let slot = state.in_flight[route.upstream].acquire().await?;
    tracing::debug!(method = method.name, upstream = %owner, rule = route.rule.label(), skill = ?route.skill, "routed");
    if method.family.streams() && state.fleet.view().can_stream(&owner) == Some(false) {
        let why = format!(
            "{} streams, but agent '{owner}' does not support streaming",
            method.name
        );
        return Err(GatewayError::UnsupportedOperation(why));
    }
    learn_from_request(state, method, call.params, &owner);
    let upstream = &state.upstreams[route.upstream];
    let forwarded = (upstream.rpc_call_from(call.parts, bytes, origin, &caller))
        .streaming(method.family.streams());
    let asked = std::time::Instant::now();
    let response = upstream.call(forwarded).await;
    meters
        .upstream_duration()
        .observe(asked.elapsed().as_secs_f64());
    let response = response?;
    let permits = Permits { slot, stream };
    let seen = Sighting {
        skill: route.skill.clone(),
        started: record.started(),
    };
    Ok(relay(
        response, state, owner, call.id, record, permits, seen,
    ))
}

/// 403 unless the authorization rules let this caller use the target.
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

/// The 401/403 answer, mirroring the request id when the body has one.
async fn refuse(
    state: &AppState,
    error: GatewayError,
    parts: &Parts,
    body: Incoming,
    record: &mut Record,
) -> Response<Body> {
    let bytes = read_body(&state.config.limits, &parts.headers, body)
        .await
        .unwrap_or_default();
    record.request_bytes = bytes.len();
    let id = jsonrpc::parse(&bytes).ok().and_then(|e| e.id);
    error.into_response(id)
}

/// Applies the routing rules; resolves an unknown task by probing.
async fn route(
    state: &AppState,
    input: &RouteInput<'_>,
    parts: &Parts,
    origin: &Origin,
    caller: &Caller<'_>,
    identity: Option<&Identity>,
) -> Result<Route, GatewayError> {
    let view = state.fleet.view();
    match state.router.resolve(input, &view, &state.fleet.affinity)? {
        Decision::Route(route) => Ok(route),
        Decision::Probe { task } => {
            // Only agents this caller may use for this method are asked: a
            // probe must not reach an agent on behalf of someone who may
            // not call it, nor tell them whether a task exists there.
            let family = input.method.family.label();
            let candidates: Vec<usize> = (0..state.upstreams.len())
                .filter(|&i| may_use(state, &view, identity, i, family))
                .collect();
            let limit = state.router.settings().probe_timeout;
            let version = input.method.version;
            let client = probe::Client {
                parts,
                origin,
                caller,
            };
            match probe::find_owner(
                &state.upstreams,
                &candidates,
                &client,
                &task,
                version,
                limit,
            )
            .await
            {
                Some(upstream) => {
                    state.metrics.probes.with_label_values(&["found"]).inc();
                    state
                        .fleet
                        .affinity
                        .learn_task(&task, &state.router.name(upstream));
                    Ok(Route {
                        upstream,
                        rule: Rule::Affinity,
                        skill: None,
                    })
                }
                None => {
                    state.metrics.probes.with_label_values(&["not_found"]).inc();
                    Err(GatewayError::TaskNotFound(task))
                }
            }
        }
    }
}

fn may_use(
    state: &AppState,
    view: &crate::fleet::FleetView,
    identity: Option<&Identity>,
    upstream: usize,
    family: &str,
) -> bool {
    let Some(who) = identity else {
        return true;
    };
    let name = state.router.name(upstream);
    let target = Target {
        upstream: &name,
        skill: None,
        family,
    };
    state.config.authz.allows(who, &target, |skill| {
        view.skill(skill).is_some_and(|s| *s.upstream == *name)
    })
}

/// 0.1 clients choose their task and session ids; they belong to the
/// upstream the first call went to.
fn learn_from_request(
    state: &AppState,
    method: &Method,
    params: Option<&Sketch<'_>>,
    owner: &Arc<str>,
) {
    if method.version != crate::a2a::Version::V0_1 || !state.remembers_owners() {
        return;
    }
    if let Some(task) = request::task_ref(method, params) {
        state.fleet.affinity.learn_task(&task.id, owner);
    }
    if let Some(context) = request::context_ref(method, params) {
        state.fleet.affinity.learn_context(&context, owner);
    }
}

/// The client's address, as `crate::client_ip` resolves it.
fn client_address(state: &AppState, conn: &ConnInfo, headers: &HeaderMap) -> IpAddr {
    client_ip::resolve(
        conn.remote().ip(),
        headers,
        &state.config.server.trusted_proxies,
    )
}

/// Where the client request came from, for `X-Forwarded-*`.
pub fn origin(state: &AppState, parts: &Parts, conn: &ConnInfo) -> Origin {
    let peer = conn.remote();
    Origin {
        peer,
        peer_hop: conn.remote_hop().clone(),
        proto: conn.proto,
        host: original_host(parts),
        trusted_peer: cidr::contains(&state.config.server.trusted_proxies, peer.ip()),
    }
}

/// The address the client used: `:authority` on HTTP/2, `Host` on HTTP/1.
fn original_host(parts: &Parts) -> Option<http::HeaderValue> {
    match parts.uri.authority() {
        Some(a) => http::HeaderValue::from_str(a.as_str()).ok(),
        None => parts.headers.get(header::HOST).cloned(),
    }
}

fn check_content_type(headers: &HeaderMap) -> Result<(), GatewayError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Err(GatewayError::UnsupportedMediaType("no Content-Type".into()));
    };
    let text = value.to_str().unwrap_or("");
    let mime = text.split(';').next().unwrap_or("").trim().as_bytes();
    let is = |prefix: &[u8], suffix: &[u8]| {
        mime.len() >= prefix.len() + suffix.len()
            && mime[..prefix.len()].eq_ignore_ascii_case(prefix)
            && mime[mime.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    };
    // `application/a2a+json` and other `+json` types are JSON too.
    if mime.eq_ignore_ascii_case(b"application/json") || is(b"application/", b"+json") {
        Ok(())
    } else {
        let shown: String = text.chars().take(64).collect();
        Err(GatewayError::UnsupportedMediaType(format!("'{shown}'")))
    }
}

async fn read_body(
    limits: &Limits,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Bytes, GatewayError> {
    let max = limits.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // Refuse a declared oversize body before reading a byte of it.
    if declared.is_some_and(|len| len > max as u64) {
        return Err(GatewayError::PayloadTooLarge { limit: max });
    }
    let mut read = std::pin::pin!(crate::body::read_to_limit(body, max));
    // A small body has usually arrived with its head: read it without
    // setting up a timer (a clock read and the runtime's handle, made and
    // dropped). A body still on its way is awaited under the timeout; the
    // noop waker of this first poll is replaced at the next one.
    let read = match (&mut read).now_or_never() {
        Some(read) => read,
        None => match tokio::time::timeout(limits.body_read_timeout, read).await {
            Ok(read) => read,
            Err(_) => return Err(GatewayError::BodyTimeout(limits.body_read_timeout)),
        },
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(ReadError::TooLarge) => Err(GatewayError::PayloadTooLarge { limit: max }),
        Err(ReadError::Body(e)) => Err(GatewayError::BodyRead(e.to_string())),
    }
}

/// Passes the upstream's answer on: status, end-to-end headers and body
/// unchanged; SSE bodies go through the event relay. Task and context ids
/// seen on the way are remembered as owned by this upstream.
fn relay(
    response: Response<Leased>,
    state: &Arc<AppState>,
    owner: Arc<str>,
    id: Option<&RawValue>,
    record: &Record,
    permits: Permits,
    seen: Sighting,
) -> Response<Body> {
    let limits = &state.config.limits;
    // The body holds the call's pooled connection or HTTP/2 place.
    let (mut parts, body) = response.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers);
    // The client's connection has its own version; hyper writes the right one.
    parts.version = Version::HTTP_11;
    let learner = state.clone();
    let body = if is_event_stream(&parts.headers) {
        parts.headers.remove(header::CONTENT_LENGTH);
        let upstream = owner.clone();
        let open = StreamOpen::new(state.metrics.clone());
        let mut first = true;
        let mut tasks = crate::metrics::StreamTasks::new(state.metrics.clone());
        let on_events = Box::new(move |events: &[u8]| {
            let observed = learn::from_events(events);
            let metrics = &learner.metrics;
            if std::mem::take(&mut first) {
                metrics
                    .sse_first_event
                    .observe(seen.started.elapsed().as_secs_f64());
            }
            for kind in &observed.kinds {
                metrics.sse_event(kind);
            }
            learner.observe_events(&observed, &owner, seen.skill.as_deref(), &mut tasks);
        });
        let settings = RelaySettings {
            upstream,
            request_id: id.map(ToOwned::to_owned),
            // Only a stream keeps the id (a unary answer's is in the record).
            x_request_id: record.request_id().into(),
            idle_timeout: limits.sse_idle_timeout,
            max_event_bytes: limits.max_sse_event_bytes,
            on_events: Some(on_events),
            closing: Some(state.closing.clone()),
        };
        // A stream holds its stream place for its whole life, but not an
        // in-flight slot: streams are bounded by their own limits.
        drop(permits.slot);
        Guarded::new(SseRelay::new(body, settings), (permits.stream, open)).boxed_unsync()
    } else {
        let observed = Observed::new(body, MAX_LEARNED_BYTES, move |bytes| {
            learner.observe_answer(&learn::from_response(bytes), &owner, seen.skill.as_deref());
        });
        // The answer's errors are boxed already (`upstream::Answer`).
        Guarded::new(observed, permits).boxed_unsync()
    };
    Response::from_parts(parts, body)
}

/// What the relay needs to attribute what it sees.
struct Sighting {
    skill: Option<String>,
    started: std::time::Instant,
}

/// `sse_streams_open` (and `crate::memory_release`) count this stream while
/// it lives.
struct StreamOpen(Arc<crate::metrics::Metrics>, crate::memory_release::Active);

impl StreamOpen {
    fn new(metrics: Arc<crate::metrics::Metrics>) -> Self {
        metrics.sse_open.inc();
        Self(metrics, crate::memory_release::Active::new())
    }
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.sse_open.dec();
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            const SSE: &str = "text/event-stream";
            v.trim_start()
                .get(..SSE.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(SSE))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_are_known_by_media_type_in_any_case() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, http::HeaderValue::from_static(value));
            is_event_stream(&headers)
        };
        assert!(with("text/event-stream"));
        assert!(with(" Text/Event-Stream; charset=utf-8"));
        assert!(!with("application/json"));
        assert!(!with("text/event"));
        assert!(!is_event_stream(&HeaderMap::new()));
    }
}
