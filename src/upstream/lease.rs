//! What a call holds until its answer's body is dropped: its place on an
//! HTTP/2 lane ([`super::lanes`]), or its pooled HTTP/1.1 connection
//! ([`super::pool`]), which goes back to the pool then.
//!
//! It travels in the response's extensions, which the relay moves into the
//! body it hands the client, so it lives exactly as long as that body.

use std::sync::Arc;

/// Clones share what is held: it is released with the last of them.
#[derive(Clone)]
pub struct Lease(#[allow(dead_code)] Arc<dyn Send + Sync>);

impl Lease {
    /// Holds `what` (released by its `Drop`) until the lease is dropped.
    pub(super) fn new(what: impl Send + Sync + 'static) -> Self {
        Self(Arc::new(what))
    }
}
