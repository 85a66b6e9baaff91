//! What a call holds until its answer's body is dropped: its place on an
//! HTTP/2 lane ([`super::lanes`]), or its pooled HTTP/1.1 connection
//! ([`super::pool`]), which goes back to the pool then.
//!
//! It travels inside the answer's body ([`Leased`], the same [`Guarded`]
//! body that holds a call's permits), so it lives exactly as long as that
//! body, wherever the body goes. It used to ride in the response's
//! extensions: that cost every call an extensions map and two boxes besides
//! the lease's own (bench/profile.md).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::h1_stream::StreamBody;
use super::lanes::Place;
use super::pool::Returning;
use crate::body::BoxError;
use crate::limits::concurrency::Guarded;

/// Released (its `Drop`) when dropped.
pub struct Lease(#[allow(dead_code)] Held);

// Held for their `Drop` only: never read.
#[allow(dead_code)]
enum Held {
    Connection(Returning),
    Lane(Place),
}

impl Lease {
    pub(super) fn connection(returning: Returning) -> Self {
        Self(Held::Connection(returning))
    }

    pub(super) fn lane(place: Place) -> Self {
        Self(Held::Lane(place))
    }
}

/// An upstream answer's body, holding the call's lease until it is dropped.
pub type Leased = Guarded<Answer, Option<Lease>>;

/// An answer's body as it is read: by hyper, or (a stream to an `http://`
/// replica over HTTP/1.1) straight from its socket ([`super::h1_stream`]).
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

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Held::Connection(_) => "Lease(connection)",
            Held::Lane(_) => "Lease(lane)",
        })
    }
}
