//! One access-log line and one set of request metrics per call, written
//! when the response body is done with, so duration and bytes cover the
//! whole answer, streams included; or, when the client leaves before there
//! is an answer, when the call is dropped (`abandoned`, status 499).
//!
//! Outcomes: `complete`; `aborted` (the client left mid-answer);
//! `failed` (the agent's answer broke off after its head was passed on, or
//! a stream ended with the gateway's own error event: counted under that
//! error's class); `shutdown` (a stream ended by the drain, counted as
//! `shutting_down`); `abandoned`.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use http::HeaderValue;
use smallvec::SmallVec;

use crate::a2a::{Method, Version};
use crate::http::error::ErrorCode;
use crate::telemetry::metrics::upstream::UpstreamMeters;
use crate::telemetry::metrics::{self, Metrics};
use crate::telemetry::recent_calls::CallSummary;
use crate::telemetry::trace::{CallTrace, Ended};

/// Which method the call named, as far as it was read.
#[derive(Debug, Clone, Copy)]
pub enum Called {
    /// The body was never read as a call (refused before, or malformed).
    Nothing,
    /// A method name the gateway does not know.
    Unknown,
    Known(&'static Method),
}

impl Called {
    fn method(self) -> &'static str {
        match self {
            Called::Known(m) => m.name,
            _ => "-",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Called::Known(m) => m.version.label(),
            _ => "-",
        }
    }

    fn family(self) -> &'static str {
        match self {
            Called::Nothing => "none",
            Called::Unknown => "unknown",
            Called::Known(m) => m.family.label(),
        }
    }
}

/// Set by the SSE relay when it ends a stream with its own error event
/// (the agent died, went idle, the gateway shut down): the code, 0 until
/// then. Travels to the record in the response's extensions.
#[derive(Clone, Default)]
pub struct StreamEnd(pub Arc<AtomicI32>);

impl StreamEnd {
    pub fn set(&self, code: i32) {
        self.0.store(code, Ordering::Relaxed);
    }

    fn code(&self) -> Option<i32> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&c| c != 0)
    }
}

/// The status an abandoned call is counted with: the client closed the
/// request before any answer (nginx's convention).
pub const CLIENT_CLOSED: u16 = 499;

/// What is known about one call, filled in as it goes through the gateway.
pub struct Record {
    /// `X-Request-Id`, copied (a header value can share the connection's
    /// read buffer, which a long stream must not keep alive); inline, as
    /// the gateway's own ids are 36 bytes. Always visible ASCII.
    request_id: SmallVec<[u8; 40]>,
    /// The client's address: the peer, or what a trusted proxy reported.
    pub client: Option<IpAddr>,
    pub caller: Option<String>,
    pub called: Called,
    pub skill: Option<String>,
    /// The upstream the call went to, with its metric handles.
    pub upstream: Option<Arc<UpstreamMeters>>,
    pub rule: &'static str,
    pub status: u16,
    pub code: Option<i32>,
    pub request_bytes: usize,
    pub response_bytes: u64,
    /// The client's A2A version and the agent's, once the call is routed
    /// (the same unless the bridge translated).
    pub versions: Option<(Version, Version)>,
    /// How the client called: `jsonrpc` or `http+json`.
    pub binding: &'static str,
    /// The agent's binding (`jsonrpc` or `http+json`), once routed.
    pub agent_binding: Option<&'static str>,
    /// The call's spans, when traces are exported.
    pub trace: Option<Arc<CallTrace>>,
    /// A stream's end, when the gateway wrote it (`StreamEnd`).
    stream_end: Option<StreamEnd>,
    started: Instant,
    metrics: Arc<Metrics>,
}

impl Record {
    /// `request_id` is the request's `X-Request-Id`, `None` without one.
    pub fn new(request_id: Option<&HeaderValue>, metrics: Arc<Metrics>) -> Self {
        Self {
            request_id: SmallVec::from_slice(
                request_id
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-")
                    .as_bytes(),
            ),
            client: None,
            caller: None,
            called: Called::Nothing,
            skill: None,
            upstream: None,
            rule: "none",
            status: 0,
            code: None,
            request_bytes: 0,
            response_bytes: 0,
            versions: None,
            binding: "jsonrpc",
            agent_binding: None,
            trace: None,
            stream_end: None,
            started: Instant::now(),
            metrics,
        }
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// The call's `X-Request-Id` (`-` without one), for lines that must
    /// name the call.
    pub fn request_id(&self) -> &str {
        std::str::from_utf8(&self.request_id).unwrap_or("-")
    }

    /// Where routing sent the call.
    pub fn routed(
        &mut self,
        meters: &Arc<UpstreamMeters>,
        skill: Option<String>,
        rule: &'static str,
    ) {
        self.upstream = Some(meters.clone());
        self.skill = skill;
        self.rule = rule;
    }

    /// The versions of a routed call: `translated` is (client, agent) when
    /// the bridge translates.
    pub fn versions(&mut self, called: Version, translated: Option<(Version, Version)>) {
        self.versions = Some(translated.unwrap_or((called, called)));
    }

    /// Takes the status and (gateway) error code from the response head.
    pub fn head<B>(&mut self, response: &http::Response<B>) {
        self.status = response.status().as_u16();
        if let Some(ErrorCode(code)) = response.extensions().get::<ErrorCode>() {
            self.code = Some(*code);
        }
        self.stream_end = response.extensions().get::<StreamEnd>().cloned();
    }

    /// A call dropped before it had an answer: the client left.
    pub fn abandoned(mut self) {
        self.status = CLIENT_CLOSED;
        self.emit("abandoned");
    }

    /// The record of a call whose body is done with: delivered in full
    /// (`finished`), cut short by the agent (`broken`), or left by the
    /// client.
    fn done(mut self, finished: bool, broken: bool) {
        let ended = self.stream_end.as_ref().and_then(StreamEnd::code);
        let outcome = match (ended, broken, finished) {
            (Some(code), _, _) => {
                self.code = Some(code);
                match code {
                    crate::http::error::codes::SHUTTING_DOWN => "shutdown",
                    _ => "failed",
                }
            }
            (None, true, _) => {
                self.code = Some(crate::http::error::codes::UPSTREAM_BAD_RESPONSE);
                "failed"
            }
            (None, false, true) => "complete",
            (None, false, false) => "aborted",
        };
        self.emit(outcome);
    }

    fn emit(&self, outcome: &'static str) {
        let elapsed = self.started.elapsed();
        let upstream = self.upstream.as_ref().map_or("none", |u| u.name());
        let skill = self.skill.as_deref().unwrap_or("none");
        self.count(elapsed, upstream, skill);
        if let Some(trace) = &self.trace {
            trace.end(&self.ended(outcome));
        }
        if self.metrics.recent_calls.recording() {
            (self.metrics.recent_calls).push(self.summary(outcome, elapsed));
        }
        if !crate::telemetry::log::access_wanted() {
            return;
        }
        let ids = self.trace.as_ref().map(|t| t.ids());
        crate::telemetry::log::access(&crate::telemetry::log::access_line::Fields {
            request_id: self.request_id(),
            client: self.client,
            caller: self.caller.as_deref().unwrap_or("-"),
            method: self.called.method(),
            binding: self.binding,
            skill,
            upstream,
            rule: self.rule,
            version: self.versions.map_or("-", |(client, _)| client.label()),
            agent_version: self.versions.map_or("-", |(_, agent)| agent.label()),
            status: self.status,
            code: self.code,
            duration: elapsed,
            request_bytes: self.request_bytes as u64,
            response_bytes: self.response_bytes,
            outcome,
            trace: ids.as_ref().map(|(t, s)| (t.as_str(), s.as_str())),
        });
    }

    /// The call as the console's recent calls show it.
    fn summary(&self, outcome: &'static str, elapsed: std::time::Duration) -> CallSummary {
        CallSummary {
            at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            request_id: self.request_id().to_string(),
            method: self.called.method(),
            binding: self.binding,
            version: self.versions.map_or("-", |(client, _)| client.label()),
            agent_version: self.versions.map_or("-", |(_, agent)| agent.label()),
            upstream: (self.upstream.as_ref())
                .map_or_else(|| "none".into(), |u| u.name().to_string()),
            skill: self.skill.clone(),
            status: self.status,
            error: metrics::error_class(self.code),
            code: self.code,
            duration_ms: elapsed.as_secs_f64() * 1000.0,
            outcome,
            trace_id: self.trace.as_ref().map(|t| t.ids().0),
            caller: self.caller.clone(),
            client: self.client.map(|c| c.to_string()),
        }
    }

    /// What the call's spans say of it.
    fn ended(&self, outcome: &'static str) -> Ended<'_> {
        let method = match self.called {
            Called::Known(m) => Some(m.name),
            _ => None,
        };
        Ended {
            method,
            binding: self.binding,
            version: self.versions.map(|(client, _)| client.label()),
            agent: (self.versions)
                .map(|(_, agent)| (self.agent_binding.unwrap_or("jsonrpc"), agent.label())),
            skill: self.skill.as_deref(),
            upstream: self.upstream.as_ref().map(|u| u.name()),
            rule: self.rule,
            caller: self.caller.as_deref(),
            request_id: self.request_id(),
            status: self.status,
            code: self.code,
            error_class: metrics::error_class(self.code),
            outcome,
        }
    }

    /// `requests_total`, the duration and the byte counters.
    fn count(&self, elapsed: std::time::Duration, upstream: &str, skill: &str) {
        let family = self.called.family();
        let m = &self.metrics;
        if let Some((client, agent)) = self.versions.filter(|(c, a)| c != a) {
            m.translated
                .with_label_values(&[client.label(), agent.label(), family])
                .inc();
        }
        match (
            &self.upstream,
            self.called,
            &self.skill,
            self.status,
            self.code,
        ) {
            // Most calls: a kept handle, not a lookup of six labels.
            (Some(meters), Called::Known(method), None, 200, None) => {
                meters.answered(method, self.binding).inc();
            }
            _ => {
                // Static text for every status hyper knows: no allocation.
                let code = http::StatusCode::from_u16(self.status).ok();
                let status = code.as_ref().map_or("0", http::StatusCode::as_str);
                m.requests
                    .with_label_values(&[
                        self.called.version(),
                        family,
                        skill,
                        upstream,
                        status,
                        metrics::error_class(self.code),
                        self.binding,
                    ])
                    .inc()
            }
        }
        match (&self.upstream, self.called) {
            (Some(meters), Called::Known(method)) => {
                meters
                    .request_duration(method.family)
                    .observe(elapsed.as_secs_f64());
                meters.request_bytes().inc_by(self.request_bytes as u64);
                meters.response_bytes().inc_by(self.response_bytes);
            }
            // Refused before routing: rare, so looked up by label.
            _ => {
                m.request_duration
                    .with_label_values(&[family, upstream])
                    .observe(elapsed.as_secs_f64());
                m.request_bytes
                    .with_label_values(&[upstream])
                    .inc_by(self.request_bytes as u64);
                m.response_bytes
                    .with_label_values(&[upstream])
                    .inc_by(self.response_bytes);
            }
        }
    }
}

pin_project! {
    /// The response body, counting bytes; the record is written when it is
    /// dropped (after the last byte, or when the client went away).
    pub struct Logged<B> {
        #[pin]
        inner: B,
        record: Option<Record>,
        finished: bool,
        // The body failed: the agent's answer broke off.
        broken: bool,
    }

    impl<B> PinnedDrop for Logged<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(record) = this.record.take() {
                record.done(*this.finished, *this.broken);
            }
        }
    }
}

impl<B> Logged<B> {
    pub fn new(inner: B, record: Record) -> Self {
        Self {
            inner,
            record: Some(record),
            finished: false,
            broken: false,
        }
    }
}

impl<B: Body<Data = Bytes>> Body for Logged<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        // What the relay logs while the answer flows names the call's trace.
        let trace = this.record.as_ref().and_then(|r| r.trace.as_ref());
        let _attached = trace.map(|t| t.context().clone().attach());
        let polled = this.inner.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(record)) = (frame.data_ref(), this.record.as_mut()) {
                    record.response_bytes += data.len() as u64;
                }
                // hyper stops polling a body of known length once it says
                // it has ended, so the last frame may be the end.
                if this.inner.is_end_stream() {
                    *this.finished = true;
                }
            }
            Poll::Ready(None) => *this.finished = true,
            Poll::Ready(Some(Err(_))) => *this.broken = true,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};

    #[tokio::test]
    async fn counts_bytes_and_records_once() {
        let metrics = Arc::new(Metrics::new());
        let id = HeaderValue::from_static("r1");
        let mut record = Record::new(Some(&id), metrics.clone());
        record.called = Called::Known(crate::a2a::methods::lookup("message/send").unwrap());
        record.status = 200;
        let body = Logged::new(Full::new(Bytes::from_static(b"12345")), record);
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len(), 5);
        let text = metrics.render();
        assert!(text.contains(r#"a2a_gateway_requests_total{binding="jsonrpc",error="none",family="send",skill="none",status="200",upstream="none",version="0.3"} 1"#), "{text}");
        assert!(
            text.contains(r#"a2a_gateway_response_bytes_total{upstream="none"} 5"#),
            "{text}"
        );
    }
}
