//! The call as an agent will see it: the client's body and end-to-end
//! headers, less what the gateway consumed, plus the forwarding headers,
//! the verified identity and the upstream's configured headers.

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::request::Parts;
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::Full;

use super::address::RpcCall;
use super::agent::{Caller, Upstream};
use super::headers::{self, Origin};

/// Headers the gateway may add to a forwarded call: `X-Forwarded-For`,
/// `-Proto` and `-Host`, `Host`, and the verified identity.
const FORWARDING_HEADERS: usize = 5;
/// Client headers a forwarded call does not keep. The gateway already read
/// the body, so the upstream must not wait for a 100-continue that nobody
/// will act on; `Host` is set for the replica the call goes to.
/// `Content-Length` is hyper's to write (but see
/// [`headers::keep_content_length`]).
const REPLACED: [HeaderName; 3] = [header::HOST, header::CONTENT_LENGTH, header::EXPECT];

fn is_replaced(name: &HeaderName) -> bool {
    REPLACED.contains(name)
}

impl Upstream {
    /// The call as the upstream will see it: the client's body byte for
    /// byte, its end-to-end headers less the credentials the gateway
    /// consumed (unless this upstream is to receive them), the gateway's
    /// forwarding headers, and the verified identity where configured.
    /// The client's head is copied: for probes and the extended card, which
    /// may call several upstreams or still answer from it.
    pub fn rpc_call_as(
        &self,
        client: &Parts,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        // Copied into a map with room for the headers the gateway adds: a
        // clone is sized to the client's headers, and grew (a reallocation
        // and a rehash) at the first forwarding header of every call.
        let room = client.headers.len() + FORWARDING_HEADERS + self.extra_headers.len();
        let mut headers = HeaderMap::with_capacity(room);
        for (name, value) in &client.headers {
            if !is_replaced(name) {
                headers.append(name.clone(), value.clone());
            }
        }
        let query = client.uri.query().map(str::to_owned);
        self.finish_call(headers, query, body, origin, caller)
    }

    /// As [`Upstream::rpc_call_as`], taking the client's head: its headers
    /// are edited in place rather than copied into a new map.
    pub fn rpc_call_from(
        &self,
        mut client: Parts,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        let mut headers = std::mem::take(&mut client.headers);
        // The client's `Host` stays until `readdress` overwrites it (or a
        // configured one does, in `finish_call`).
        headers.remove(header::EXPECT);
        headers::keep_content_length(&mut headers, body.len());
        headers.reserve(FORWARDING_HEADERS + self.extra_headers.len());
        let query = client.uri.query().map(str::to_owned);
        self.finish_call(headers, query, body, origin, caller)
    }

    /// The rest of a call, once the client's headers are in `headers` less
    /// the [`REPLACED`] ones.
    fn finish_call(
        &self,
        mut headers: HeaderMap,
        mut query: Option<String>,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> RpcCall {
        headers::strip_hop_by_hop(&mut headers);
        if let (Some(consumed), false) = (caller.consumed, self.forward_credentials) {
            consumed.strip_headers(&mut headers);
            query = consumed.strip_query(query.as_deref());
        }
        if let Some(name) = &self.identity_header {
            // Never trust a client's own claim to be someone.
            headers.remove(name);
            if let Some(v) = caller.subject.and_then(|s| HeaderValue::from_str(s).ok()) {
                headers.insert(name.clone(), v);
            }
        }
        headers::add_forwarded(&mut headers, origin);
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        // No URI yet: `call` addresses each attempt to its replica.
        let (mut head, ()) = Request::new(()).into_parts();
        head.method = Method::POST;
        head.version = self.version();
        head.headers = headers;
        RpcCall {
            head,
            body,
            query,
            streams: false,
            path: None,
            trace: None,
        }
    }

    /// A plain GET with the upstream's configured headers.
    pub fn get_request(
        &self,
        uri: Uri,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = uri;
        *request.version_mut() = self.version();
        let headers = request.headers_mut();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in self.extra_headers.iter().chain(extra) {
            headers.insert(name.clone(), value.clone());
        }
        request
    }
}
