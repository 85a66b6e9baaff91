//! Every proxied call's `X-Request-Id`: the client's own, or one made here,
//! set on the request (`assign`) and echoed on the answer (`echo`) by
//! `crate::server::stack`. tower-http's `SetRequestId` and
//! `PropagateRequestId` did this, and each also put the id in the request's
//! and the response's extensions, which nothing here reads: two maps and
//! four allocations a call (callgrind, #64).
//!
//! Made ids are UUID-shaped, unique, and cheap: a random 64-bit prefix chosen
//! once per process plus a counter, with no `getrandom` syscall per request
//! (tower-http's `MakeRequestUuid` makes one). Ids only need to be unique
//! across the fleet's logs, not unguessable: they are labels, never
//! credentials.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request};

/// `X-Request-Id`, as a name made once: a lookup by `&str` checks and
/// lower-cases the name on every call.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

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

/// A new id, as a header value.
fn make() -> Option<HeaderValue> {
    let id = nth(NEXT.fetch_add(1, Ordering::Relaxed));
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    id.hyphenated().encode_lower(&mut text);
    // Shared from the start: the value is cloned into the request's headers
    // and the response's; a `Bytes` copied from a slice would allocate again
    // at the first clone, to become shared.
    let mut value = HeaderValue::from_maybe_shared(Bytes::from_owner(text)).ok()?;
    never_indexed(&mut value);
    Some(value)
}

/// Marks an id so that HTTP/2 sends it as a never-indexed literal. It is
/// not a secret: `sensitive` is the one flag h2's HPACK encoder reads. An
/// id differs on every call, so indexing it only fills the connection's
/// table with values that never come again, and before each insert h2 walks
/// every id still in the table comparing values: ~4,000 instructions a
/// response (bench/profile.md). The client's decoder is spared the same
/// churn. Ids a client sends are marked as they arrive (`crate::server::stack`).
fn never_indexed(value: &mut HeaderValue) {
    value.set_sensitive(true);
}

/// Gives a request that carries no id one. A client's id is marked
/// never-indexed with the credentials (`crate::server::stack`).
pub fn assign<B>(mut request: Request<B>) -> Request<B> {
    let headers = request.headers_mut();
    if !headers.contains_key(HEADER) {
        if let Some(id) = make() {
            headers.insert(HEADER, id);
        }
    }
    request
}

/// Sets the request's id on an answer that has none of its own (an id the
/// agent answered with is kept).
pub fn echo(headers: &mut HeaderMap, id: Option<HeaderValue>) {
    if let Some(id) = id {
        if !headers.contains_key(HEADER) {
            headers.insert(HEADER, id);
        }
    }
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
    fn made_ids_are_never_indexed_header_values_of_uuid_length() {
        let (one, two) = (make().unwrap(), make().unwrap());
        assert_eq!(one.len(), 36);
        assert!(one.is_sensitive());
        assert_ne!(one, two);
    }

    /// Runs one request as the stack does: `assign`, a handler that
    /// records the ids it was given and answers with `answer_id`, if any,
    /// then `echo`.
    fn through(
        sent: Option<&str>,
        answer_id: Option<&'static str>,
    ) -> (String, http::Response<()>) {
        let mut request = Request::new(());
        if let Some(id) = sent {
            request.headers_mut().insert(HEADER, id.parse().unwrap());
        }
        let request = assign(request);
        let seen: Vec<String> = request
            .headers()
            .get_all(HEADER)
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            seen.len(),
            1,
            "exactly one id reaches the handler: {seen:?}"
        );
        let mut response = http::Response::new(());
        if let Some(id) = answer_id {
            response
                .headers_mut()
                .insert(HEADER, HeaderValue::from_static(id));
        }
        echo(
            response.headers_mut(),
            request.headers().get(HEADER).cloned(),
        );
        (seen[0].clone(), response)
    }

    fn answered(response: &http::Response<()>) -> Vec<&str> {
        response
            .headers()
            .get_all(HEADER)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    }

    #[test]
    fn a_client_id_reaches_the_handler_and_comes_back() {
        let (seen, response) = through(Some("client-chosen"), None);
        assert_eq!(seen, "client-chosen");
        assert_eq!(answered(&response), ["client-chosen"]);
    }

    #[test]
    fn a_made_id_reaches_the_handler_and_comes_back() {
        let (seen, response) = through(None, None);
        assert_eq!(seen.len(), 36, "{seen}");
        assert_eq!(answered(&response), [seen.as_str()]);
        assert!(response.headers()[HEADER].is_sensitive());
        let (again, _) = through(None, None);
        assert_ne!(again, seen, "each call gets its own id");
    }

    #[test]
    fn an_id_the_answer_carries_is_kept() {
        let (seen, response) = through(Some("client-chosen"), Some("agent-own"));
        assert_eq!(seen, "client-chosen");
        assert_eq!(answered(&response), ["agent-own"]);
    }
}
