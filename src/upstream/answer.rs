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
pub type Leased = Guarded<AgentBody, Option<Lease>>;

#[derive(Debug)]
pub enum AgentBody {
    Hyper(Incoming),
    /// Boxed: inline it would make every answer larger than hyper's body,
    /// and every move of a unary answer dearer (measured: ~400 instructions
    /// of `memcpy` a call).
    Stream(Box<StreamBody>),
}

impl From<Incoming> for AgentBody {
    fn from(body: Incoming) -> Self {
        AgentBody::Hyper(body)
    }
}

impl Body for AgentBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // Both are `Unpin`.
        match self.get_mut() {
            AgentBody::Hyper(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            AgentBody::Stream(body) => Pin::new(body.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AgentBody::Hyper(body) => body.is_end_stream(),
            AgentBody::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AgentBody::Hyper(body) => body.size_hint(),
            AgentBody::Stream(body) => body.size_hint(),
        }
    }
}
