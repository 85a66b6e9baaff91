//! What a call holds until its answer's body is dropped: its place on an
//! HTTP/2 lane ([`super::lanes`]), or its pooled HTTP/1.1 connection
//! ([`super::pool`]), which goes back to the pool then.
//!
//! It travels inside the answer's body ([`Leased`]), so it lives exactly as
//! long as that body, wherever the body goes. It used to ride in the
//! response's extensions: that cost every call an extensions map and two
//! boxes besides the lease's own (bench/profile.md).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::lanes::Place;
use super::pool::Returning;

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

/// An upstream answer's body, with what the call holds until it is dropped.
pub struct Leased {
    body: Incoming,
    _lease: Option<Lease>,
}

impl Leased {
    pub(super) fn new(body: Incoming, lease: Option<Lease>) -> Self {
        Self {
            body,
            _lease: lease,
        }
    }
}

impl std::fmt::Debug for Leased {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leased")
            .field("body", &self.body)
            .field("leased", &self._lease.is_some())
            .finish()
    }
}

impl Body for Leased {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
