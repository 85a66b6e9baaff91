//! The agent's answer on its way back: status, end-to-end headers and body
//! unchanged, SSE bodies through the event relay, and the task and context
//! ids seen on the way remembered as owned by the agent that answered.

use std::sync::Arc;

use http::{header, HeaderMap, Response, Version};
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use super::Permits;
use crate::a2a::seen;
use crate::call::observe::Observed;
use crate::call::sse::{RelaySettings, SseRelay};
use crate::http::body::Body;
use crate::limits::concurrency::Guarded;
use crate::state::AppState;
use crate::telemetry::access::Record;
use crate::upstream::headers;

/// Unary answers larger than this are relayed but not scanned for task ids.
const MAX_LEARNED_BYTES: usize = 1024 * 1024;

/// Passes the upstream's answer on: status, end-to-end headers and body
/// unchanged; SSE bodies go through the event relay. Task and context ids
/// seen on the way are remembered as owned by this upstream.
pub(super) fn relay<B>(
    response: Response<B>,
    state: &Arc<AppState>,
    owner: Arc<str>,
    id: Option<&RawValue>,
    record: &Record,
    permits: Permits,
    sighting: Sighting,
) -> Response<Body>
where
    B: http_body::Body<Data = bytes::Bytes, Error = crate::http::body::BoxError>
        + Send
        + Unpin
        + 'static,
{
    let limits = &state.config.limits;
    // The body holds the call's pooled connection or HTTP/2 place.
    let (mut parts, body) = response.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers);
    // The client's connection has its own version; hyper writes the right one.
    parts.version = Version::HTTP_11;
    let learner = state.clone();
    let trace = record.trace.clone();
    let body = if is_event_stream(&parts.headers) {
        parts.headers.remove(header::CONTENT_LENGTH);
        let upstream = owner.clone();
        let open = StreamOpen::new(state.metrics.clone());
        let mut first = true;
        let mut tasks = crate::telemetry::metrics::StreamTasks::new(state.metrics.clone());
        let rest_answer = sighting.rest_answer;
        let mut as_rpc = rest_answer.then(|| super::rest_agent::events(None, false));
        let on_events = Box::new(move |events: &[u8]| {
            let said;
            let events = match as_rpc.as_mut() {
                Some(say) => {
                    said = say(events).unwrap_or_else(|(said, _)| said);
                    &said[..]
                }
                None => events,
            };
            let observed = seen::from_events(events);
            if let Some(trace) = &trace {
                trace.saw(&observed, true);
            }
            let metrics = &learner.metrics;
            if std::mem::take(&mut first) {
                metrics
                    .sse_first_event
                    .observe(sighting.started.elapsed().as_secs_f64());
            }
            for kind in &observed.kinds {
                metrics.sse_event(kind);
            }
            learner.observe_events(&observed, &owner, sighting.skill.as_deref(), &mut tasks);
        });
        let (rewrite, client) = sighting.rewrite.unzip();
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
            rest: sighting.rest,
            closing: Some(state.closing.clone()),
            ended: Some(ended.clone()),
        };
        // A stream holds its stream place for its whole life, but not an
        // in-flight slot: streams are bounded by their own limits.
        drop(permits.slot);
        Guarded::new(SseRelay::new(body, settings), (permits.stream, open)).boxed_unsync()
    } else {
        let (rest_answer, grpc_answer) = (sighting.rest_answer, sighting.grpc_answer);
        let observed = Observed::new(body, MAX_LEARNED_BYTES, move |bytes| {
            let said;
            let bytes = match (rest_answer, grpc_answer) {
                (true, _) => {
                    said = super::rest_agent::as_result(bytes);
                    &said[..]
                }
                (false, Some(family)) => {
                    said = super::grpc_agent::as_result(family, bytes);
                    &said[..]
                }
                (false, None) => bytes,
            };
            let seen = seen::from_response(bytes);
            if let Some(trace) = &trace {
                trace.saw(&seen, false);
            }
            learner.observe_answer(&seen, &owner, sighting.skill.as_deref());
        });
        // The answer's errors are boxed already (`upstream::Answer`).
        Guarded::new(observed, permits).boxed_unsync()
    };
    Response::from_parts(parts, body)
}

/// What the relay needs to attribute what it sees, and (for a stream the
/// bridge translates) to say it in the client's version.
pub(super) struct Sighting {
    pub(super) skill: Option<String>,
    pub(super) started: std::time::Instant,
    pub(super) rewrite: Option<(crate::call::sse::Rewrite, crate::a2a::Version)>,
    /// The client speaks HTTP+JSON (its final error event is said so).
    pub(super) rest: bool,
    /// The answer is an HTTP+JSON agent's, passed through as it came:
    /// results alone, which are learned from as JSON-RPC results would be.
    pub(super) rest_answer: bool,
    /// The answer is a gRPC agent's to a call of this family, passed
    /// through as it came: its message is learned from as a result.
    pub(super) grpc_answer: Option<crate::a2a::Family>,
}

impl Sighting {
    pub(super) fn new(route: &crate::routing::Route, record: &Record) -> Self {
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

pub(super) fn is_event_stream(headers: &HeaderMap) -> bool {
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
