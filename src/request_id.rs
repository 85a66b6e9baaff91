//! Request ids for calls that arrive without one: UUID-shaped, unique, and
//! cheap. A random 64-bit prefix chosen once per process plus a counter: no
//! `getrandom` syscall per request (tower-http's `MakeRequestUuid` makes
//! one). Ids only need to be unique across the fleet's logs, not
//! unguessable: they are labels, never credentials.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request};
use tower_http::request_id::{MakeRequestId, RequestId};

/// `X-Request-Id`, as a name made once: a lookup by `&str` checks and
/// lower-cases the name on every call.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone, Copy, Default)]
pub struct MakeSequentialId;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn prefix() -> [u8; 8] {
    static PREFIX: OnceLock<[u8; 8]> = OnceLock::new();
    *PREFIX.get_or_init(|| {
        let random = uuid::Uuid::new_v4();
        let mut out = [0; 8];
        out.copy_from_slice(&random.as_bytes()[..8]);
        out
    })
}

/// The `n`th id of this process.
pub fn nth(n: u64) -> uuid::Uuid {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&prefix());
    bytes[8..].copy_from_slice(&n.to_be_bytes());
    // Marks the layout as version 4 / RFC 4122 variant, as consumers
    // expect of a UUID; this overwrites 4 prefix bits and the counter's
    // top 2 bits, which a process never reaches.
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

impl MakeRequestId for MakeSequentialId {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let id = nth(NEXT.fetch_add(1, Ordering::Relaxed));
        let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
        id.hyphenated().encode_lower(&mut text);
        // Shared from the start: tower-http clones the id into the request's
        // headers and extensions and the response's; a `Bytes` copied from a
        // slice would allocate again at the first clone, to become shared.
        let mut value = HeaderValue::from_maybe_shared(Bytes::from_owner(text)).ok()?;
        never_indexed(&mut value);
        Some(RequestId::new(value))
    }
}

/// Marks an id so that HTTP/2 sends it as a never-indexed literal. It is
/// not a secret: `sensitive` is the one flag h2's HPACK encoder reads. An
/// id differs on every call, so indexing it only fills the connection's
/// table with values that never come again, and before each insert h2 walks
/// every id still in the table comparing values: ~4,000 instructions a
/// response (bench/profile.md). The client's decoder is spared the same
/// churn. Ids a client sends are marked as they arrive (`crate::stack`).
fn never_indexed(value: &mut HeaderValue) {
    value.set_sensitive(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_uuids_with_one_prefix() {
        let (a, b) = (nth(0), nth(1));
        assert_ne!(a, b);
        assert_eq!(a.get_version_num(), 4);
        assert_eq!(a.as_bytes()[..8], b.as_bytes()[..8]);
        let seen: std::collections::HashSet<_> = (0..10_000).map(nth).collect();
        assert_eq!(seen.len(), 10_000);
    }

    #[test]
    fn made_ids_are_header_values_of_uuid_length() {
        let request = Request::new(());
        let mut make = MakeSequentialId;
        let one = make.make_request_id(&request).unwrap();
        let two = make.make_request_id(&request).unwrap();
        assert_eq!(one.header_value().len(), 36);
        assert!(one.header_value().is_sensitive());
        assert_ne!(one.header_value(), two.header_value());
    }
}
