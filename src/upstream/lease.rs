//! What a call holds until its answer's body is dropped: its place on an
//! HTTP/2 lane ([`super::lanes`]), or its pooled HTTP/1.1 connection
//! ([`super::pool`]), which goes back to the pool then.
//!
//! It travels inside the answer's body (`super::answer::Leased`, the same
//! `Guarded` body that holds a call's permits), so it lives exactly as long as that
//! body, wherever the body goes. It used to ride in the response's
//! extensions: that cost every call an extensions map and two boxes besides
//! the lease's own (bench/profile.md).

/// Released (its `Drop`) when dropped: whatever the call holds, a pooled
/// connection on its way back or a place on a lane. Boxed so that this
/// file names neither (the pool and the lanes make leases; nothing here
/// depends on them): one small allocation a call.
pub struct Lease(#[allow(dead_code)] Box<dyn Send>);

impl Lease {
    /// A lease on `held`, released when the lease is dropped.
    pub(super) fn new(held: impl Send + 'static) -> Self {
        Self(Box::new(held))
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lease")
    }
}
