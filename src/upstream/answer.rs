//! An agent's answer body as the gateway reads it: by hyper, or (a stream
//! to an `http://` replica over HTTP/1.1) straight from its socket
//! ([`super::h1_stream`]); and that body holding the call's lease.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::h1_stream::StreamBody;
use super::lease::Lease;
use crate::http::body::BoxError;
use crate::limits::concurrency::Guarded;

/// An upstream answer's body, holding the call's lease until it is dropped.
pub type Leased = Guarded<Answer, Option<Lease>>;

#[derive(Debug)]
pub enum Answer {
    Hyper(Incoming),
    /// Boxed: inline it would make every answer larger than hyper's body,
    /// and every move of a unary answer dearer (measured: ~400 instructions
    /// of `memcpy` a call).
    Stream(Box<StreamBody>),
}

impl From<Incoming> for Answer {
    fn from(body: Incoming) -> Self {
        Answer::Hyper(body)
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // Both are `Unpin`.
        match self.get_mut() {
            Answer::Hyper(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            Answer::Stream(body) => Pin::new(body.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Answer::Hyper(body) => body.is_end_stream(),
            Answer::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Answer::Hyper(body) => body.size_hint(),
            Answer::Stream(body) => body.size_hint(),
        }
    }
}
