//! Stage 4, the answer on its way back: status, end-to-end headers and
//! body unchanged, SSE bodies through the event relay (`sse`), a gRPC
//! agent's frames as they came (`grpc`), a REST client's answer encoded in
//! its binding (`rest`); and the task and context ids seen on the way
//! remembered as owned by the agent that answered.

pub(crate) mod grpc;
pub mod observe;
pub(crate) mod rest;
pub mod sse;
pub(crate) mod whole;

use std::sync::Arc;

use http::{header, HeaderMap, Response, Version};
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use crate::a2a::seen;
use crate::http::body::Body;
use crate::limits::concurrency::{Guarded, Permits};
use crate::relay::observe::Observed;
use crate::relay::sse::{RelaySettings, SseRelay};
use crate::state::AppState;
use crate::telemetry::access::Record;
use crate::upstream::headers;

/// An agent's answer body as the relay takes it.
pub(crate) trait AgentBody:
    http_body::Body<Data = bytes::Bytes, Error = crate::http::body::BoxError> + Send + Unpin + 'static
{
}

impl<B> AgentBody for B where
    B: http_body::Body<Data = bytes::Bytes, Error = crate::http::body::BoxError>
        + Send
        + Unpin
        + 'static
{
}

/// Unary answers larger than this are relayed but not scanned for task ids.
const MAX_LEARNED_BYTES: usize = 1024 * 1024;

/// Passes the upstream's answer on: status, end-to-end headers and body
/// unchanged; SSE bodies go through the event relay. Task and context ids
/// seen on the way are remembered as owned by this upstream.
pub(crate) fn relay<B>(
    response: Response<B>,
    state: &Arc<AppState>,
    owner: Arc<str>,
    id: Option<&RawValue>,
    record: &Record,
    permits: Permits,
    mut context: RelayContext,
) -> Response<Body>
where
    B: AgentBody,
{
    // The body holds the call's pooled connection or HTTP/2 place.
    let (mut parts, body) = response.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers);
    // The client's connection has its own version; hyper writes the right one.
    parts.version = Version::HTTP_11;
    let body = if is_event_stream(&parts.headers) {
        event_stream(
            &mut parts,
            body,
            (state, record),
            owner,
            id,
            permits,
            context,
        )
    } else if let Some(passed) = context.grpc_answer.take() {
        grpc_answer(
            &mut parts, body, state, owner, record, permits, context, passed,
        )
    } else {
        let carried = context.carried();
        let learn = learn_answer(state, owner, &context, record);
        let observed = Observed::new(body, MAX_LEARNED_BYTES, move |bytes| {
            learn(&seen::from_answer(bytes, carried));
        });
        // The answer's errors are boxed already (`upstream::answer::AgentBody`).
        Guarded::new(observed, permits).boxed_unsync()
    };
    Response::from_parts(parts, body)
}

/// An SSE answer through the event relay: each event learned from (and
/// rewritten for the client, when the call was translated), the stream
/// bounded by its idle timeout, holding its stream place until it ends.
fn event_stream<B>(
    parts: &mut http::response::Parts,
    body: B,
    (state, record): (&Arc<AppState>, &Record),
    owner: Arc<str>,
    id: Option<&RawValue>,
    permits: Permits,
    context: RelayContext,
) -> Body
where
    B: AgentBody,
{
    let limits = &state.config.limits;
    parts.headers.remove(header::CONTENT_LENGTH);
    let upstream = owner.clone();
    let open = StreamOpen::new(state.metrics.clone());
    let learn = learn_events(state, owner, &context, record);
    let on_events = Box::new(learn);
    let (rewrite, client) = context.rewrite.unzip();
    // The call's record learns how the stream ended (`Record::head`).
    let ended = crate::telemetry::access::StreamEnd::default();
    parts.extensions.insert(ended.clone());
    if let Some(client) = client {
        crate::bridge::headers::for_client(&mut parts.headers, client);
    }
    let settings = RelaySettings {
        upstream,
        request_id: id.map(ToOwned::to_owned),
        // Only a stream keeps the id (a unary answer's is in the record).
        x_request_id: record.request_id().into(),
        idle_timeout: limits.sse_idle_timeout,
        max_event_bytes: limits.max_sse_event_bytes,
        on_events: Some(on_events),
        rewrite,
        rest: context.rest,
        closing: Some(state.closing.clone()),
        ended: Some(ended.clone()),
    };
    // A stream holds its stream place for its whole life, but not an
    // in-flight slot: streams are bounded by their own limits.
    drop(permits.slot);
    Guarded::new(SseRelay::new(body, settings), (permits.stream, open)).boxed_unsync()
}

/// What a stream's events teach, as they pass: the tasks they show owned
/// by `owner`, the time to the first, each event's kind counted.
fn learn_events(
    state: &Arc<AppState>,
    owner: Arc<str>,
    context: &RelayContext,
    record: &Record,
) -> impl FnMut(&[u8]) + Send + 'static {
    let mut learn = learn_seen(state, owner, context, record);
    let carried = context.carried();
    move |events: &[u8]| learn(&seen::from_events_carried(events, carried))
}

/// What a unary answer, once read, teaches: the tasks it shows owned by
/// `owner`, and the call's trace its task.
fn learn_answer(
    state: &Arc<AppState>,
    owner: Arc<str>,
    context: &RelayContext,
    record: &Record,
) -> impl Fn(&seen::Seen<'_>) + Send + 'static {
    let (learner, trace) = (state.clone(), record.trace.clone());
    let skill = context.skill.clone();
    move |seen: &seen::Seen<'_>| {
        if let Some(trace) = &trace {
            trace.saw(seen, false);
        }
        learner.observe_answer(seen, &owner, skill.as_deref());
    }
}

/// What a stream's events, once read, teach (`learn_events`).
fn learn_seen(
    state: &Arc<AppState>,
    owner: Arc<str>,
    context: &RelayContext,
    record: &Record,
) -> impl FnMut(&seen::Seen<'_>) + Send + 'static {
    let (learner, trace) = (state.clone(), record.trace.clone());
    let (skill, started) = (context.skill.clone(), context.started);
    let mut first = true;
    let mut tasks = crate::telemetry::metrics::StreamTasks::new(state.metrics.clone());
    move |observed: &seen::Seen<'_>| {
        if let Some(trace) = &trace {
            trace.saw(observed, true);
        }
        let metrics = &learner.metrics;
        if std::mem::take(&mut first) {
            metrics
                .sse_first_event
                .observe(started.elapsed().as_secs_f64());
        }
        for kind in &observed.kinds {
            metrics.sse_event(kind);
        }
        learner.observe_events(observed, &owner, skill.as_deref(), &mut tasks);
    }
}

/// A gRPC agent's answer passed through to a gRPC client of its service
/// (`grpc`): a stream's messages learned from as its events
/// would be, a unary answer's as its result; a stream holds its stream
/// place, not an in-flight slot, and ends with the gateway's shutdown.
#[allow(clippy::too_many_arguments)]
fn grpc_answer<B>(
    parts: &mut http::response::Parts,
    body: B,
    state: &Arc<AppState>,
    owner: Arc<str>,
    record: &Record,
    permits: Permits,
    context: RelayContext,
    passed: GrpcPassed,
) -> Body
where
    B: AgentBody,
{
    use grpc::{GrpcRelay, GrpcRelaySettings, OnMessage};
    let limits = &state.config.limits;
    let (family, version) = (passed.family, passed.version);
    let streams = family.streams();
    let ended = crate::telemetry::access::StreamEnd::default();
    parts.extensions.insert(ended.clone());
    // Read straight from the protobuf (`crate::a2a::grpc::seen`).
    let of_answer =
        move |message: &[u8]| crate::a2a::grpc::seen::of_answer((family, version), message);
    let on_message: OnMessage = match streams {
        true => {
            let mut learn = learn_seen(state, owner.clone(), &context, record);
            Box::new(move |message: &[u8]| learn(&of_answer(message)))
        }
        false => {
            let learn = learn_answer(state, owner.clone(), &context, record);
            Box::new(move |message: &[u8]| learn(&of_answer(message)))
        }
    };
    let settings = GrpcRelaySettings {
        upstream: owner,
        x_request_id: record.request_id().into(),
        idle_timeout: streams.then_some(limits.sse_idle_timeout),
        max_message_bytes: match streams {
            true => limits.max_sse_event_bytes,
            false => MAX_LEARNED_BYTES,
        },
        on_message,
        head_status: parts.headers.contains_key("grpc-status"),
        deadline: passed.deadline,
        closing: streams.then(|| state.closing.clone()),
        ended,
    };
    let relayed = GrpcRelay::new(body, settings);
    match streams {
        true => {
            drop(permits.slot);
            let open = StreamOpen::new(state.metrics.clone());
            Guarded::new(relayed, (permits.stream, open)).boxed_unsync()
        }
        false => Guarded::new(relayed, permits).boxed_unsync(),
    }
}

/// A call to a gRPC agent passed through as the client sent it.
pub(crate) struct GrpcPassed {
    pub(crate) family: crate::a2a::Family,
    /// The service's A2A version (the client's and the agent's).
    pub(crate) version: crate::a2a::Version,
    /// The client's `grpc-timeout`.
    pub(crate) deadline: Option<tokio::time::Instant>,
}

/// What the relay needs to attribute what it sees, and (for a stream the
/// bridge translates) to write it in the client's version.
pub(crate) struct RelayContext {
    pub(crate) skill: Option<String>,
    pub(crate) started: std::time::Instant,
    pub(crate) rewrite: Option<(crate::relay::sse::Rewrite, crate::a2a::Version)>,
    /// The client speaks HTTP+JSON (its final error event is encoded so).
    pub(crate) rest: bool,
    /// The answer is an HTTP+JSON agent's, passed through as it came:
    /// results alone, learned from as they are.
    pub(crate) rest_answer: bool,
    /// The answer is a gRPC agent's, passed through as it came
    /// (`grpc_answer`).
    pub(crate) grpc_answer: Option<GrpcPassed>,
}

impl RelayContext {
    /// How the answer carries its results, for learning from them.
    fn carried(&self) -> seen::Carried {
        match self.rest_answer {
            true => seen::Carried::Alone,
            false => seen::Carried::JsonRpc,
        }
    }
}

impl RelayContext {
    pub(crate) fn new(route: &crate::routing::Route, record: &Record) -> Self {
        Self {
            skill: route.skill.clone(),
            started: record.started(),
            rewrite: None,
            rest: false,
            rest_answer: false,
            grpc_answer: None,
        }
    }
}

/// `sse_streams_open` (and `crate::memory_release`) count this stream while
/// it lives.
struct StreamOpen(
    Arc<crate::telemetry::metrics::Metrics>,
    crate::memory_release::Active,
);

impl StreamOpen {
    fn new(metrics: Arc<crate::telemetry::metrics::Metrics>) -> Self {
        metrics.sse_open.inc();
        Self(metrics, crate::memory_release::Active::new())
    }
}

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.sse_open.dec();
    }
}

pub(crate) fn is_event_stream(headers: &HeaderMap) -> bool {
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
