//! The one response body type every handler returns, and its constructors.

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty, Full};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Boxed so unary bodies, relayed upstream bodies and SSE relays share one
/// type; unsync because hyper's `Incoming` only needs `Send`.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}
