//! One access-log line and one set of request metrics per JSON-RPC call,
//! written when the response body is done with — delivered or abandoned —
//! so duration and bytes cover the whole answer, streams included.

use std::fmt;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::metrics::{self, Metrics};

/// A value, or `-` when there is none, as the other fields of the line.
struct OrDash<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// The JSON-RPC error code of a response the gateway made itself (set by
/// `GatewayError::into_response`), so the record can say which error it was.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub i32);

/// What is known about one call, filled in as it goes through the gateway.
pub struct Record {
    pub request_id: String,
    /// The client's address: the peer, or what a trusted proxy reported.
    pub client: Option<IpAddr>,
    pub caller: Option<String>,
    pub method: &'static str,
    pub version: &'static str,
    pub family: &'static str,
    pub skill: Option<String>,
    pub upstream: Option<Arc<str>>,
    pub rule: &'static str,
    pub status: u16,
    pub code: Option<i32>,
    pub request_bytes: usize,
    pub response_bytes: u64,
    started: Instant,
    metrics: Arc<Metrics>,
}

impl Record {
    pub fn new(request_id: &str, metrics: Arc<Metrics>) -> Self {
        Self {
            request_id: request_id.to_string(),
            client: None,
            caller: None,
            method: "-",
            version: "-",
            family: "none",
            skill: None,
            upstream: None,
            rule: "none",
            status: 0,
            code: None,
            request_bytes: 0,
            response_bytes: 0,
            started: Instant::now(),
            metrics,
        }
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// Takes the status and (gateway) error code from the response head.
    pub fn head<B>(&mut self, response: &http::Response<B>) {
        self.status = response.status().as_u16();
        if let Some(ErrorCode(code)) = response.extensions().get::<ErrorCode>() {
            self.code = Some(*code);
        }
    }

    fn emit(&self, outcome: &'static str) {
        let elapsed = self.started.elapsed();
        let upstream = self.upstream.as_deref().unwrap_or("none");
        let skill = self.skill.as_deref().unwrap_or("none");
        // Static text for every status hyper knows: no allocation per call.
        let code = http::StatusCode::from_u16(self.status).ok();
        let status = code.as_ref().map_or("0", http::StatusCode::as_str);
        let m = &self.metrics;
        m.requests
            .with_label_values(&[
                self.version,
                self.family,
                skill,
                upstream,
                status,
                metrics::error_class(self.code),
            ])
            .inc();
        m.request_duration
            .with_label_values(&[self.family, upstream])
            .observe(elapsed.as_secs_f64());
        m.request_bytes
            .with_label_values(&[upstream])
            .inc_by(self.request_bytes as u64);
        m.response_bytes
            .with_label_values(&[upstream])
            .inc_by(self.response_bytes);
        tracing::info!(
            target: "a2a_gateway::access",
            request_id = %self.request_id,
            client = %OrDash(self.client),
            caller = self.caller.as_deref().unwrap_or("-"),
            method = self.method,
            skill,
            upstream,
            rule = self.rule,
            status = self.status,
            code = self.code,
            // Whole microseconds: `0.819`, not `0.8190339999999999`.
            duration_ms = elapsed.as_micros() as f64 / 1000.0,
            request_bytes = self.request_bytes,
            response_bytes = self.response_bytes,
            outcome,
            "access"
        );
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
    }

    impl<B> PinnedDrop for Logged<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(record) = this.record.take() {
                record.emit(if *this.finished { "complete" } else { "aborted" });
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
        let mut record = Record::new("r1", metrics.clone());
        record.family = "send";
        record.version = "0.3";
        record.status = 200;
        let body = Logged::new(Full::new(Bytes::from_static(b"12345")), record);
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len(), 5);
        let text = metrics.render();
        assert!(text.contains(r#"a2a_gateway_requests_total{error="none",family="send",skill="none",status="200",upstream="none",version="0.3"} 1"#), "{text}");
        assert!(
            text.contains(r#"a2a_gateway_response_bytes_total{upstream="none"} 5"#),
            "{text}"
        );
    }
}
