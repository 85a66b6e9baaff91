//! What a call holds until its answer's body is dropped: its place on an
//! HTTP/2 lane ([`super::lanes`]), or its pooled HTTP/1.1 connection
//! ([`super::pool`]), which goes back to the pool then.
//!
//! It travels inside the answer's body ([`Leased`], the same [`Guarded`]
//! body that holds a call's permits), so it lives exactly as long as that
//! body, wherever the body goes. It used to ride in the response's
//! extensions: that cost every call an extensions map and two boxes besides
//! the lease's own (bench/profile.md).

use hyper::body::Incoming;

use super::lanes::Place;
use super::pool::Returning;
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
pub type Leased = Guarded<Incoming, Option<Lease>>;

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Held::Connection(_) => "Lease(connection)",
            Held::Lane(_) => "Lease(lane)",
        })
    }
}
