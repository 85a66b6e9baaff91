//! `GET /admin/calls`: the last calls, newest first, filtered by agent,
//! status and caller; `GET /admin/calls/stream`: each call as it ends,
//! over SSE. Reading either keeps the ring recording
//! (`crate::telemetry::recent_calls`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, HeaderValue, Response, StatusCode};
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::{json_response, param};
use crate::http::body::{Body, BoxError};
use crate::state::AppState;
use crate::telemetry::recent_calls::CallSummary;

/// How often a live stream says it is alive (and renews the look).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What `/admin/calls` selects.
struct Filter {
    upstream: Option<String>,
    status: Option<String>,
    caller: Option<String>,
}

impl Filter {
    fn of(query: Option<&str>) -> Filter {
        let given = |name| param(query, name).filter(|v| !v.is_empty());
        Filter {
            upstream: given("upstream"),
            status: given("status"),
            caller: given("caller"),
        }
    }

    fn keeps(&self, call: &CallSummary) -> bool {
        let status = |wanted: &str| match wanted.strip_suffix("xx") {
            Some(class) => call.status.to_string().starts_with(class),
            None => wanted.parse::<u16>().is_ok_and(|s| s == call.status),
        };
        self.upstream.as_ref().is_none_or(|u| *u == call.upstream)
            && self.status.as_deref().is_none_or(status)
            && (self.caller.as_ref()).is_none_or(|c| {
                call.caller
                    .as_ref()
                    .is_some_and(|who| who.contains(c.as_str()))
            })
    }
}

pub fn list(state: &AppState, query: Option<&str>) -> Response<Body> {
    let recent = &state.metrics.recent_calls;
    recent.look();
    let limit = param(query, "limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(100);
    let filter = Filter::of(query);
    let kept = recent.newest(limit, |c| filter.keeps(c));
    let calls: Vec<&CallSummary> = kept.iter().map(|c| &**c).collect();
    let body =
        json!({"calls": calls, "capacity": recent.capacity(), "recording": recent.recording()});
    json_response(StatusCode::OK, &body)
}

/// SSE: `event: call` with each call's summary, a comment every
/// `KEEP_ALIVE`. Ends when the gateway drains.
pub fn stream(state: &Arc<AppState>) -> Response<Body> {
    state.metrics.recent_calls.look();
    let receiver = state.metrics.recent_calls.subscribe();
    let closing = state.closing.clone();
    let live =
        futures_util::stream::unfold((receiver, state.clone()), move |(mut receiver, state)| {
            let closing = closing.clone();
            async move {
                let event = tokio::select! {
                    _ = closing.cancelled() => return None,
                    got = tokio::time::timeout(KEEP_ALIVE, receiver.recv()) => match got {
                        Ok(Ok(call)) => event(&call),
                        Ok(Err(RecvError::Lagged(n))) => format!(": {n} calls skipped\n\n"),
                        Ok(Err(RecvError::Closed)) => return None,
                        Err(_) => {
                            state.metrics.recent_calls.look();
                            ": keep-alive\n\n".to_string()
                        }
                    },
                };
                let frame: Result<Frame<Bytes>, BoxError> = Ok(Frame::data(Bytes::from(event)));
                Some((frame, (receiver, state)))
            }
        });
    let first =
        futures_util::stream::once(async { Ok(Frame::data(Bytes::from_static(b": calls\n\n"))) });
    let body = StreamBody::new(first.chain(live)).boxed_unsync();
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    *response.status_mut() = StatusCode::OK;
    response
}

fn event(call: &CallSummary) -> String {
    let data = serde_json::to_string(call).unwrap_or_else(|_| "{}".into());
    format!("event: call\ndata: {data}\n\n")
}
