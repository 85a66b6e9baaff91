//! SSE pass-through: complete events go to the client as soon as the
//! upstream sends them (the stream's first events at once, with the response
//! head; after them a burst that has already arrived goes out as one write,
//! see `batch`); silence longer than the idle timeout (between events,
//! not over the stream's life) or a broken upstream ends the stream with one
//! final JSON-RPC error event carrying the request's id.

mod batch;

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use serde_json::value::RawValue;
use tokio::time::{Instant, Sleep};

pub use crate::a2a::sse::EventScanner;

use batch::Batch;

use crate::a2a::jsonrpc;
use crate::http::body::BoxError;
use crate::http::error::{codes, status_body};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Called with each chunk of whole events as it is forwarded.
pub type OnEvents = Box<dyn FnMut(&[u8]) + Send>;

/// Says whole events anew before they are forwarded (`crate::bridge`). An
/// event it cannot rewrite ends the stream, after the events before it, with
/// an InvalidAgentResponse event: the error carries those events and why.
pub type Rewrite = Box<dyn FnMut(&[u8]) -> Result<Bytes, (Bytes, String)> + Send>;

/// `first`, then `second` on what it wrote. When `first` refuses an event,
/// the events it rewrote before it still go through `second`.
pub fn then(mut first: Rewrite, mut second: Rewrite) -> Rewrite {
    Box::new(move |events: &[u8]| match first(events) {
        Ok(encoded) => second(&encoded),
        Err((encoded, why)) => match second(&encoded) {
            Ok(encoded) => Err((encoded, why)),
            Err(e) => Err(e),
        },
    })
}

/// What the relay needs to know besides the upstream body.
pub struct RelaySettings {
    /// Shared with the routing table: a stream holds this for its life.
    pub upstream: std::sync::Arc<str>,
    /// The request id as raw JSON (`None` for a notification).
    pub request_id: Option<Box<RawValue>>,
    /// The call's `X-Request-Id`, so that a stream's failure names its call
    /// (there is no span per request at info: `crate::server::stack`).
    pub x_request_id: Box<str>,
    pub idle_timeout: Duration,
    pub max_event_bytes: usize,
    pub on_events: Option<OnEvents>,
    /// Applied after `on_events`, which sees the agent's own events.
    pub rewrite: Option<Rewrite>,
    /// The client speaks HTTP+JSON: the final error event is a
    /// `google.rpc.Status`, not a JSON-RPC error.
    pub rest: bool,
    /// Cancelled when the gateway's shutdown grace is over: the stream then
    /// ends with a final event telling the client to resubscribe.
    pub closing: Option<CancellationToken>,
    /// Told the code of the gateway's own final error event, for the
    /// call's record.
    pub ended: Option<crate::telemetry::access::StreamEnd>,
}

pin_project! {
    #[project = Relay]
    pub struct SseRelay<B> {
        #[pin]
        inner: B,
        #[pin]
        idle: Sleep,
        pending: BytesMut,
        scanner: EventScanner,
        batch: Batch,
        settings: RelaySettings,
        closing: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
        // Whether any events have been handed on yet (see `Relay::on_data`).
        started: bool,
        done: bool,
    }
}

impl<B> SseRelay<B> {
    pub fn new(inner: B, settings: RelaySettings) -> Self {
        Self {
            inner,
            idle: tokio::time::sleep(settings.idle_timeout),
            pending: BytesMut::new(),
            scanner: EventScanner::default(),
            batch: Batch::default(),
            closing: settings
                .closing
                .clone()
                .map(|t| Box::pin(t.cancelled_owned())),
            settings,
            started: false,
            done: false,
        }
    }
}

/// What `poll_frame` gives its caller.
type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

impl<B> Body for SseRelay<B>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(None);
            }
            let step = match this.inner.as_mut().poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let deadline = Instant::now() + this.settings.idle_timeout;
                    this.idle.as_mut().reset(deadline);
                    match frame.into_data() {
                        Ok(data) => this.on_data(data),
                        Err(_) => None, // trailers carry nothing for an SSE client
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    let why = format!("the stream broke before it ended: {e}");
                    Some(this.finish(codes::UPSTREAM_STREAM_BROKEN, &why))
                }
                Poll::Ready(None) => Some(this.end()),
                Poll::Pending => Some(this.on_quiet(cx)),
            };
            if let Some(polled) = step {
                return polled;
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl<B> Relay<'_, B> {
    /// A chunk from the upstream: what to give the client now, or `None`
    /// to read on.
    fn on_data(&mut self, data: Bytes) -> Option<Polled> {
        let Some(events) = take_events(self.pending, self.scanner, data) else {
            if self.pending.len() > self.settings.max_event_bytes {
                let why = format!(
                    "an SSE event exceeded {} bytes",
                    self.settings.max_event_bytes
                );
                return Some(self.finish(codes::UPSTREAM_BAD_RESPONSE, &why));
            }
            return None;
        };
        if let Some(observe) = self.settings.on_events.as_mut() {
            observe(&events);
        }
        let events = match self.settings.rewrite.as_mut().map(|r| r(&events)) {
            None => events,
            Some(Ok(encoded)) => encoded,
            Some(Err((encoded, why))) => {
                self.batch.push(encoded);
                return Some(self.finish(jsonrpc::INVALID_AGENT_RESPONSE, &why));
            }
        };
        self.batch.push(events);
        // The stream's first events go out at once: hyper then writes them
        // with the response head, and time to first event does not wait for
        // the rest of the burst to be gathered.
        if !*self.started || self.batch.is_full() {
            *self.started = true;
            return Some(self.flush());
        }
        None
    }

    /// The upstream has nothing more for now: write what was gathered, or
    /// wait for the next chunk, the shutdown or the idle timeout.
    fn on_quiet(&mut self, cx: &mut Context<'_>) -> Polled {
        if !self.batch.is_empty() {
            // The upstream connection task passes one chunk at a time and
            // has just been asked for the next: give it turns (yield, so we
            // run again after it) while they keep bringing events. Then
            // write the burst at once.
            if self.batch.wants_turn() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return self.flush();
        }
        if let Some(closing) = self.closing.as_mut() {
            if closing.as_mut().poll(cx).is_ready() {
                let why = "the gateway is shutting down; resubscribe to continue";
                return self.finish(codes::SHUTTING_DOWN, why);
            }
        }
        ready!(self.idle.as_mut().poll(cx));
        let why = format!("no event for {:?}", self.settings.idle_timeout);
        self.finish(codes::UPSTREAM_STREAM_IDLE, &why)
    }

    /// The events gathered so far, as one frame.
    fn flush(&mut self) -> Polled {
        Poll::Ready(self.batch.take().map(|b| Ok(Frame::data(b))))
    }

    /// A clean end. A dangling partial event is passed on unchanged, as a
    /// direct connection would have.
    fn end(&mut self) -> Polled {
        *self.done = true;
        let mut rest = self.pending.split().freeze();
        if let (Some(rewrite), false) = (self.settings.rewrite.as_mut(), rest.is_empty()) {
            match rewrite(&rest) {
                Ok(encoded) => rest = encoded,
                Err((encoded, why)) => {
                    self.batch.push(encoded);
                    return self.finish(jsonrpc::INVALID_AGENT_RESPONSE, &why);
                }
            }
        }
        let rest = self.batch.take_with(rest);
        Poll::Ready((!rest.is_empty()).then(|| Ok(Frame::data(rest))))
    }

    /// Ends the stream with one JSON-RPC error event, after any events
    /// still held.
    fn finish(&mut self, code: i32, why: &str) -> Polled {
        *self.done = true;
        let settings = &*self.settings;
        if let Some(ended) = &settings.ended {
            ended.set(code);
        }
        tracing::warn!(request_id = &*settings.x_request_id, upstream = %settings.upstream, code, "{why}");
        let message = match code {
            codes::SHUTTING_DOWN => why.to_string(),
            _ => format!("upstream '{}': {why}", settings.upstream),
        };
        let data = serde_json::json!({ "upstream": &*settings.upstream });
        let body = match settings.rest {
            false => {
                jsonrpc::error_body(settings.request_id.as_deref(), code, &message, Some(&data))
            }
            true => {
                let status = status_body(code.into(), &message.into(), Some(&data));
                Bytes::from(status.to_string())
            }
        };
        let mut event = BytesMut::with_capacity(body.len() + 24);
        if settings.rest {
            event.extend_from_slice(b"event: error\n");
        }
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(&body);
        event.extend_from_slice(b"\n\n");
        Poll::Ready(Some(Ok(Frame::data(self.batch.take_with(event.freeze())))))
    }
}

/// Appends `data` and returns the complete events it finishes, if any. The
/// common case (nothing pending, chunk ends on an event boundary) passes the
/// upstream's buffer through without copying.
fn take_events(pending: &mut BytesMut, scanner: &mut EventScanner, data: Bytes) -> Option<Bytes> {
    if pending.is_empty() {
        let n = scanner.scan(&data);
        if n == data.len() {
            return Some(data);
        }
        pending.extend_from_slice(&data[n..]);
        return (n > 0).then(|| data.slice(..n));
    }
    pending.extend_from_slice(&data);
    let n = scanner.scan(pending);
    (n > 0).then(|| pending.split_to(n).freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;
    use http_body_util::{BodyExt, StreamBody};

    type Chunk = Result<Frame<Bytes>, std::io::Error>;

    fn settings(idle_ms: u64) -> RelaySettings {
        RelaySettings {
            upstream: "up".into(),
            request_id: Some(RawValue::from_string("\"r1\"".into()).unwrap()),
            x_request_id: "x-r1".into(),
            idle_timeout: Duration::from_millis(idle_ms),
            max_event_bytes: 64,
            on_events: None,
            rewrite: None,
            rest: false,
            closing: None,
            ended: None,
        }
    }

    fn body(chunks: Vec<Chunk>) -> StreamBody<stream::Iter<std::vec::IntoIter<Chunk>>> {
        StreamBody::new(stream::iter(chunks))
    }

    fn data(s: &str) -> Chunk {
        Ok(Frame::data(Bytes::copy_from_slice(s.as_bytes())))
    }

    /// A relay over an upstream the test feeds chunk by chunk.
    fn fed_relay() -> (
        tokio::sync::mpsc::UnboundedSender<Chunk>,
        Pin<Box<impl Body<Data = Bytes, Error = BoxError>>>,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
        let chunks = stream::unfold(rx, |mut rx| async { rx.recv().await.map(|c| (c, rx)) });
        let relay = Box::pin(SseRelay::new(StreamBody::new(chunks), settings(60_000)));
        (tx, relay)
    }

    async fn collect(relay: impl Body<Data = Bytes, Error = BoxError>) -> String {
        let bytes = relay.collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn passes_events_unchanged() {
        let relay = SseRelay::new(
            body(vec![data("data: 1\n\nda"), data("ta: 2\n\n")]),
            settings(1000),
        );
        assert_eq!(collect(relay).await, "data: 1\n\ndata: 2\n\n");
    }

    #[allow(clippy::await_holding_lock)] // the line is logged in the await
    #[tokio::test]
    async fn broken_stream_drops_partial_event_and_ends_with_error() {
        let broken: Chunk = Err(std::io::Error::other("reset"));
        let relay = SseRelay::new(
            body(vec![data("data: 1\n\ndata: {\"half"), broken]),
            settings(1000),
        );
        let _serial = crate::telemetry::log::capture::serial();
        let capture = crate::telemetry::log::capture::Capture::default();
        let logging = capture.install(crate::config::LogFormat::Text);
        let out = collect(relay).await;
        drop(logging);
        let logged = capture.text();
        assert!(
            logged.contains(r#"WARN"#) && logged.contains(r#"request_id="x-r1" upstream=up"#),
            "the failure names its call: {logged}"
        );
        assert!(
            out.starts_with(
                "data: 1\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"error\":{\"code\":-32053"
            ),
            "{out}"
        );
        assert!(out.ends_with("}\n\n"));
    }

    #[tokio::test]
    async fn oversized_event_is_refused() {
        let big = format!("data: {}", "x".repeat(100));
        let out = collect(SseRelay::new(body(vec![data(&big)]), settings(1000))).await;
        assert!(out.contains("-32052"), "{out}");
    }

    #[tokio::test]
    async fn a_burst_that_has_arrived_is_one_frame_after_the_first() {
        let mut relay = Box::pin(SseRelay::new(
            body(vec![
                data("data: 1\n\n"),
                data("data: 2\n\n"),
                data("data: 3\n\nda"),
                data("ta: 4\n\n"),
            ]),
            settings(1000),
        ));
        let first = relay.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"data: 1\n\n", "the first event is not held");
        let rest = relay.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&rest[..], b"data: 2\n\ndata: 3\n\ndata: 4\n\n");
        assert!(relay.frame().await.is_none());
    }

    #[tokio::test]
    async fn the_first_event_is_ready_on_the_first_poll() {
        // An upstream with one event in hand and more to come: the relay's
        // first poll must give the event, so hyper writes it with the head.
        let (tx, mut relay) = fed_relay();
        tx.send(data("data: 1\n\n")).unwrap();
        let waker = futures_util::task::noop_waker();
        let polled = relay.as_mut().poll_frame(&mut Context::from_waker(&waker));
        let Poll::Ready(Some(Ok(frame))) = polled else {
            panic!("the first event was held back: {polled:?}");
        };
        assert_eq!(&frame.into_data().unwrap()[..], b"data: 1\n\n");
    }

    #[tokio::test]
    async fn an_event_is_not_held_waiting_for_the_next() {
        let (tx, mut relay) = fed_relay();
        tx.send(data("data: 1\n\n")).unwrap();
        let first = tokio::time::timeout(Duration::from_secs(5), relay.frame())
            .await
            .expect("the event was held back while the upstream was silent");
        assert_eq!(
            &first.unwrap().unwrap().into_data().unwrap()[..],
            b"data: 1\n\n"
        );
        tx.send(data("data: 2\n\n")).unwrap();
        drop(tx);
        let out = collect(relay).await;
        assert_eq!(out, "data: 2\n\n");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_upstream_ends_with_timeout_event() {
        let silent = http_body_util::StreamBody::new(stream::pending::<Chunk>());
        let out = collect(SseRelay::new(silent, settings(50))).await;
        assert!(
            out.contains("-32054") && out.contains("\"id\":\"r1\""),
            "{out}"
        );
    }
}
