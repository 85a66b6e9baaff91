//! Addressing one request to one replica: a call is built once, without a
//! replica in mind, and each attempt gets its own copy aimed at the replica
//! the balancer picked.

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Uri};
use http_body_util::Full;

/// Marks a request built by [`super::Upstream::rpc_request_as`]: `send` addresses
/// it to the chosen replica's own endpoint (replicas may differ in path),
/// with the client's query appended.
#[derive(Clone, Debug)]
pub struct EndpointCall {
    pub query: Option<String>,
}

/// How `send` addresses a request to a replica.
pub enum Addressing {
    /// The replica's JSON-RPC endpoint plus this query.
    Endpoint(Option<String>),
    /// The replica's origin, keeping the request's path and query (cards).
    Origin,
}

/// The request for one replica: the same head and body, addressed to it.
pub fn readdress(
    mut parts: Parts,
    body: &Bytes,
    how: &Addressing,
    replica: &Uri,
) -> Request<Full<Bytes>> {
    parts.uri = match how {
        Addressing::Endpoint(query) => endpoint_target(replica, query.as_deref()),
        Addressing::Origin => {
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            origin_target(replica, path).unwrap_or_else(|| replica.clone())
        }
    };
    Request::from_parts(parts, Full::new(body.clone()))
}

/// A replica's JSON-RPC endpoint with the client's query appended to its own.
pub fn endpoint_target(url: &Uri, query: Option<&str>) -> Uri {
    let Some(query) = query else {
        return url.clone();
    };
    let path = url.path();
    let joined = match url.query() {
        Some(own) => format!("{path}?{own}&{query}"),
        None => format!("{path}?{query}"),
    };
    let mut parts = url.clone().into_parts();
    parts.path_and_query = joined.parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| url.clone())
}

/// `path` (with its query) on a replica's origin.
pub fn origin_target(url: &Uri, path: &str) -> Option<Uri> {
    let mut uri = http::uri::Builder::new().path_and_query(path);
    if let (Some(scheme), Some(authority)) = (url.scheme(), url.authority()) {
        uri = uri.scheme(scheme.clone()).authority(authority.clone());
    }
    uri.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str) -> Parts {
        let request = Request::builder().uri(uri).body(()).unwrap();
        request.into_parts().0
    }

    #[test]
    fn an_rpc_call_goes_to_each_replicas_own_endpoint() {
        let head = parts("http://10.0.0.1:9001/a2a?tenant=x");
        let how = Addressing::Endpoint(Some("key=1".into()));
        let body = Bytes::from_static(b"{}");
        let replica: Uri = "http://10.0.0.2:9002/rpc?v=2".parse().unwrap();
        let request = readdress(head.clone(), &body, &how, &replica);
        assert_eq!(request.uri(), "http://10.0.0.2:9002/rpc?v=2&key=1");
        let bare: Uri = "http://10.0.0.3:9003".parse().unwrap();
        let request = readdress(head.clone(), &body, &Addressing::Endpoint(None), &bare);
        assert_eq!(request.uri(), "http://10.0.0.3:9003/");
    }

    #[test]
    fn an_origin_request_keeps_its_path_on_the_replica() {
        let head = parts("http://10.0.0.1:9001/.well-known/agent-card.json?x=1");
        let replica: Uri = "http://10.0.0.2:9002/rpc".parse().unwrap();
        let request = readdress(head.clone(), &Bytes::new(), &Addressing::Origin, &replica);
        assert_eq!(
            request.uri(),
            "http://10.0.0.2:9002/.well-known/agent-card.json?x=1"
        );
    }
}
