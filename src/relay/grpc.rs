//! A gRPC agent's answer passed through to a gRPC client of its service:
//! every frame (data and trailers) goes on as the agent wrote it. On the
//! way, the messages are cut out of a copy for `on_message` (learning task
//! ids, counting stream events), and the call is bounded as a relayed SSE
//! stream is (`super::sse`): silence past the idle timeout, the gateway's
//! shutdown, the client's `grpc-timeout` or a broken agent end it with
//! trailers carrying the status the one table names. A non-OK status in the
//! agent's own trailers is written to the call's record.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::a2a::grpc::call::next_message;
use crate::http::body::BoxError;
use crate::http::error::codes;
use crate::telemetry::access::StreamEnd;

/// Called with each whole message of the answer (its bytes, unframed).
pub(crate) type OnMessage = Box<dyn FnMut(&[u8]) + Send>;

/// What the relay needs to know besides the agent's body.
pub(crate) struct GrpcRelaySettings {
    pub(crate) upstream: std::sync::Arc<str>,
    /// The call's `X-Request-Id`, so that a failure names its call.
    pub(crate) x_request_id: Box<str>,
    /// A stream's longest silence (a unary answer has none here, as a
    /// relayed unary answer of any binding has none).
    pub(crate) idle_timeout: Option<Duration>,
    /// Messages larger than this are passed on but not looked at.
    pub(crate) max_message_bytes: usize,
    pub(crate) on_message: OnMessage,
    /// The answer's head carried its status (trailers-only): no trailers follow.
    pub(crate) head_status: bool,
    /// The client's `grpc-timeout`, as an instant.
    pub(crate) deadline: Option<Instant>,
    /// Cancelled when the gateway's shutdown grace is over.
    pub(crate) closing: Option<CancellationToken>,
    /// The record's: the code of a status that ended the call in error.
    pub(crate) ended: StreamEnd,
}

pin_project! {
    #[project = Relay]
    pub(crate) struct GrpcRelay<B> {
        #[pin]
        inner: B,
        #[pin]
        idle: Option<Sleep>,
        #[pin]
        deadline: Option<Sleep>,
        // The answer's bytes not yet cut into whole messages.
        pending: BytesMut,
        // A message was over the size looked at: the rest is only passed.
        blind: bool,
        settings: GrpcRelaySettings,
        closing: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
        done: bool,
    }
}

impl<B> GrpcRelay<B> {
    pub(crate) fn new(inner: B, settings: GrpcRelaySettings) -> Self {
        Self {
            inner,
            idle: settings.idle_timeout.map(tokio::time::sleep),
            deadline: settings.deadline.map(tokio::time::sleep_until),
            pending: BytesMut::new(),
            blind: false,
            closing: (settings.closing.clone()).map(|t| Box::pin(t.cancelled_owned())),
            settings,
            done: false,
        }
    }
}

type Polled = Poll<Option<Result<Frame<Bytes>, BoxError>>>;

impl<B> Body for GrpcRelay<B>
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        // The client's deadline holds even while the agent keeps talking.
        if let Some(deadline) = this.deadline.as_mut().as_pin_mut() {
            if deadline.poll(cx).is_ready() {
                let status = past_deadline();
                return this.end_with(codes::UPSTREAM_TIMEOUT, status);
            }
        }
        match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(idle), Some(within)) =
                    (this.idle.as_mut().as_pin_mut(), this.settings.idle_timeout)
                {
                    idle.reset(Instant::now() + within);
                }
                let frame = match frame.into_data() {
                    Ok(data) => {
                        this.look_at(&data);
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Err(frame) => frame,
                };
                if let Some(trailers) = frame.trailers_ref() {
                    *this.done = true;
                    this.check_trailers(trailers);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                let why = format!("the answer broke off: {e}");
                this.finish(codes::UPSTREAM_STREAM_BROKEN, &why)
            }
            Poll::Ready(None) if *this.done || this.settings.head_status => {
                *this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(None) => {
                let why = "the answer ended with no grpc-status";
                this.finish(codes::UPSTREAM_STREAM_BROKEN, why)
            }
            Poll::Pending => this.on_quiet(cx),
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
    /// Cuts the whole messages `data` finishes out of a copy.
    fn look_at(&mut self, data: &Bytes) {
        if *self.blind {
            return;
        }
        self.pending.extend_from_slice(data);
        let max = self.settings.max_message_bytes;
        loop {
            match next_message(self.pending, max) {
                Ok(Some(message)) => (self.settings.on_message)(&message),
                Ok(None) => return,
                Err(_) => {
                    // Too large to look at, or not gRPC framing: the
                    // client reads it as the agent wrote it.
                    *self.blind = true;
                    *self.pending = BytesMut::new();
                    return;
                }
            }
        }
    }

    /// The agent's trailers: a status other than OK is the call's error.
    fn check_trailers(&self, trailers: &HeaderMap) {
        let status = tonic::Status::from_header_map(trailers);
        if let Some(status) = status.filter(|s| s.code() != tonic::Code::Ok) {
            let code = crate::http::error::grpc::code_of(&status);
            self.settings.ended.set(code);
        }
    }

    /// Nothing from the agent now: wait for it, the deadline (polled
    /// already), the shutdown or the idle timeout.
    fn on_quiet(&mut self, cx: &mut Context<'_>) -> Polled {
        if let Some(closing) = self.closing.as_mut() {
            if closing.as_mut().poll(cx).is_ready() {
                let why = "the gateway is shutting down; call again to continue";
                return self.finish(codes::SHUTTING_DOWN, why);
            }
        }
        let (Some(idle), Some(within)) =
            (self.idle.as_mut().as_pin_mut(), self.settings.idle_timeout)
        else {
            return Poll::Pending;
        };
        ready!(idle.poll(cx));
        let why = format!("nothing from the agent for {within:?}");
        self.finish(codes::UPSTREAM_STREAM_IDLE, &why)
    }

    /// Ends the answer with the status the table gives `code`.
    fn finish(&mut self, code: i32, why: &str) -> Polled {
        let message = match code {
            codes::SHUTTING_DOWN => why.to_string(),
            _ => format!("upstream '{}': {why}", self.settings.upstream),
        };
        let data = serde_json::json!({ "upstream": &*self.settings.upstream });
        let status = crate::http::error::grpc::status_from_code(code.into(), message, Some(&data));
        self.end_with(code, status)
    }

    fn end_with(&mut self, code: i32, status: tonic::Status) -> Polled {
        *self.done = true;
        self.settings.ended.set(code);
        let settings = &*self.settings;
        tracing::warn!(request_id = &*settings.x_request_id, upstream = %settings.upstream, code, "{}", status.message());
        let mut trailers = HeaderMap::new();
        match status.add_header(&mut trailers) {
            Ok(()) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Err(e) => Poll::Ready(Some(Err(e.into()))),
        }
    }
}

/// The status of a call past its client's deadline.
pub(crate) fn past_deadline() -> tonic::Status {
    tonic::Status::deadline_exceeded("the call's grpc-timeout passed before its answer was whole")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::grpc::call::framed;
    use futures_util::stream;
    use http_body_util::{BodyExt, StreamBody};
    use std::sync::{Arc, Mutex};

    type Chunk = Result<Frame<Bytes>, std::io::Error>;
    type Relayed = GrpcRelay<StreamBody<stream::Iter<std::vec::IntoIter<Chunk>>>>;

    fn trailers(code: &str) -> Chunk {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", code.parse().unwrap());
        map.insert("grpc-message", "said%20so".parse().unwrap());
        Ok(Frame::trailers(map))
    }

    /// A relay over `chunks`, with what it saw and what it wrote to the record.
    fn relay_of(
        chunks: Vec<Chunk>,
        idle: Option<u64>,
        head_status: bool,
    ) -> (Relayed, Arc<Mutex<Vec<Vec<u8>>>>, StreamEnd) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let ended = StreamEnd::default();
        let saw = seen.clone();
        let settings = GrpcRelaySettings {
            upstream: "up".into(),
            x_request_id: "x-r1".into(),
            idle_timeout: idle.map(Duration::from_millis),
            max_message_bytes: 16,
            on_message: Box::new(move |m: &[u8]| saw.lock().unwrap().push(m.to_vec())),
            head_status,
            deadline: None,
            closing: None,
            ended: ended.clone(),
        };
        let body = StreamBody::new(stream::iter(chunks));
        (GrpcRelay::new(body, settings), seen, ended)
    }

    /// Every frame of a relay: its data, joined, and its trailers.
    async fn frames<B: Body<Data = Bytes, Error = BoxError>>(
        body: B,
    ) -> (Vec<u8>, Option<HeaderMap>) {
        let mut body = Box::pin(body);
        let (mut data, mut trailers) = (Vec::new(), None);
        while let Some(frame) = body.frame().await {
            let frame = frame.expect("no error frame");
            match frame.into_data() {
                Ok(d) => data.extend_from_slice(&d),
                Err(f) => trailers = f.into_trailers().ok(),
            }
        }
        (data, trailers)
    }

    fn code(trailers: &Option<HeaderMap>) -> Option<&str> {
        let status = trailers.as_ref()?.get("grpc-status")?;
        status.to_str().ok()
    }

    #[tokio::test]
    async fn frames_pass_as_they_came_and_each_message_is_seen_once() {
        let (one, two) = (framed(b"first"), framed(b"second"));
        let mut wire = one.to_vec();
        wire.extend_from_slice(&two);
        // Split inside the second message's head.
        let (a, b) = wire.split_at(one.len() + 2);
        let chunks = vec![
            Ok(Frame::data(Bytes::copy_from_slice(a))),
            Ok(Frame::data(Bytes::copy_from_slice(b))),
            trailers("0"),
        ];
        let (relay, seen, ended) = relay_of(chunks, Some(1000), false);
        let (data, trailers) = frames(relay).await;
        assert_eq!(data, wire);
        assert_eq!(code(&trailers), Some("0"));
        assert_eq!(
            *seen.lock().unwrap(),
            vec![b"first".to_vec(), b"second".to_vec()]
        );
        assert_eq!(ended.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn the_agents_error_in_trailers_goes_on_and_is_told_to_the_record() {
        let chunks = vec![Ok(Frame::data(framed(b"task"))), trailers("5")];
        let (relay, _, ended) = relay_of(chunks, None, false);
        let (_, trailers) = frames(relay).await;
        let trailers = trailers.expect("the agent's trailers");
        assert_eq!(trailers["grpc-status"], "5");
        assert_eq!(
            trailers["grpc-message"], "said%20so",
            "as the agent wrote it"
        );
        let ended = ended.0.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            ended,
            crate::a2a::jsonrpc::TASK_NOT_FOUND,
            "NOT_FOUND: a task not found"
        );
    }

    #[tokio::test]
    async fn a_message_too_large_to_look_at_still_passes() {
        let big = framed(&[7u8; 40]);
        let chunks = vec![Ok(Frame::data(big.clone())), trailers("0")];
        let (relay, seen, _) = relay_of(chunks, None, false);
        let (data, _) = frames(relay).await;
        assert_eq!(data, big.to_vec());
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_end_with_no_status_is_the_agents_broken_answer() {
        let chunks = vec![Ok(Frame::data(framed(b"task")))];
        let (relay, _, ended) = relay_of(chunks, None, false);
        let (_, trailers) = frames(relay).await;
        assert_eq!(code(&trailers), Some("14"), "UNAVAILABLE: {trailers:?}");
        let ended = ended.0.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(ended, codes::UPSTREAM_STREAM_BROKEN);
        // A trailers-only answer carried its status in its head: its end is clean.
        let (relay, _, ended) = relay_of(Vec::new(), None, true);
        assert_eq!(frames(relay).await, (Vec::new(), None));
        assert_eq!(ended.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_broken_agent_ends_the_answer_with_a_status() {
        let broken: Chunk = Err(std::io::Error::other("reset"));
        let chunks = vec![Ok(Frame::data(framed(b"task"))), broken];
        let (relay, seen, _) = relay_of(chunks, None, false);
        let (_, trailers) = frames(relay).await;
        assert_eq!(code(&trailers), Some("14"), "{trailers:?}");
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_ends_at_the_idle_timeout() {
        let silent = StreamBody::new(stream::pending::<Chunk>());
        let ended = StreamEnd::default();
        let settings = GrpcRelaySettings {
            upstream: "up".into(),
            x_request_id: "x-r1".into(),
            idle_timeout: Some(Duration::from_millis(50)),
            max_message_bytes: 16,
            on_message: Box::new(|_: &[u8]| {}),
            head_status: false,
            deadline: None,
            closing: None,
            ended: ended.clone(),
        };
        let (_, trailers) = frames(GrpcRelay::new(silent, settings)).await;
        assert_eq!(
            code(&trailers),
            Some("4"),
            "DEADLINE_EXCEEDED: {trailers:?}"
        );
        let ended = ended.0.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(ended, codes::UPSTREAM_STREAM_IDLE);
    }
}
