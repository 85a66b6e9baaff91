//! Addressing one request to one replica: a call is built once, without a
//! replica in mind, and each attempt gets its own copy aimed at the replica
//! the balancer picked.

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderMap, HeaderValue, Request, Uri, Version};
use http_body_util::Full;

/// A JSON-RPC call built by [`super::Upstream::rpc_call_as`], not yet aimed
/// at a replica: [`super::Upstream::call`] addresses each attempt to the
/// chosen replica's own endpoint (replicas may differ in path), with the
/// client's query appended. A type of its own rather than a `Request` marked
/// with an extension: the mark cost three allocations on every call.
pub struct RpcCall {
    pub(super) head: Parts,
    pub(super) body: Bytes,
    pub(super) query: Option<String>,
    /// A streaming method: its answer may stay open for a long time.
    pub(super) streams: bool,
    /// Sent to this path on the replica's origin rather than to its
    /// JSON-RPC endpoint (an HTTP+JSON interface, `crate::bridge::door`).
    pub(super) path: Option<Uri>,
    /// The call's spans: each attempt is an event on its client span.
    pub(super) trace: Option<std::sync::Arc<crate::telemetry::trace::CallTrace>>,
}

impl RpcCall {
    pub fn headers_mut(&mut self) -> &mut HeaderMap {
        &mut self.head.headers
    }

    /// Records each attempt on `trace`'s client span.
    pub fn traced(mut self, trace: std::sync::Arc<crate::telemetry::trace::CallTrace>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Marks the call as a streaming method's (`message/stream`,
    /// `tasks/resubscribe`): on plain HTTP/1.1 its answer is read without
    /// hyper's per-connection buffers (`super::h1_stream`).
    pub fn streaming(mut self, streams: bool) -> Self {
        self.streams = streams;
        self
    }

    /// The client's query as it will be sent (credentials the gateway
    /// consumed are gone from it).
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// Sends the call as `method` to `path_and_query` on the replica's
    /// origin, with no client query (the path says everything). A path
    /// that is not one is the gateway's own fault.
    pub fn at_path(
        mut self,
        method: http::Method,
        path_and_query: &str,
    ) -> Result<Self, crate::http::error::GatewayError> {
        let uri = path_and_query.parse::<Uri>().map_err(|e| {
            crate::http::error::GatewayError::Internal(format!(
                "'{path_and_query}' is not a path: {e}"
            ))
        })?;
        self.head.method = method;
        self.query = None;
        self.path = Some(uri);
        Ok(self)
    }
}

impl RpcCall {
    /// Sends the call over HTTP/2 as a gRPC call to `target`: a path on
    /// the replica's origin, or an absolute URI elsewhere (a gRPC
    /// interface the agent's card places on another port or host).
    /// `te: trailers` is what gRPC servers require of a client.
    pub fn grpc(mut self, target: Uri) -> Self {
        self.head.method = http::Method::POST;
        self.head.version = http::Version::HTTP_2;
        self.head
            .headers
            .insert(http::header::TE, http::HeaderValue::from_static("trailers"));
        self.query = None;
        self.path = Some(target);
        self
    }
}

/// How a call or request is addressed to a replica.
pub enum Addressing {
    /// The replica's JSON-RPC endpoint plus this query.
    Endpoint(Option<String>),
    /// The replica's origin, keeping the request's path and query (cards).
    Origin,
}

/// Whose `Host` an addressed request carries.
#[derive(Clone, Copy)]
pub enum Host<'a> {
    /// The upstream's configured one, already among the headers: kept.
    Configured,
    /// The replica's [`host_header`] (set here, hyper-util would format it
    /// anew for every HTTP/1.1 call). It replaces any `Host` in the head,
    /// the client's: one overwrite costs less than taking the client's out
    /// first and putting this one in. HTTP/2 carries the authority in the
    /// URI and gets none.
    Replica(Option<&'a HeaderValue>),
}

/// The request for one replica: the same head and body, addressed to it.
pub fn readdress(
    mut parts: Parts,
    body: &Bytes,
    how: &Addressing,
    replica: &Uri,
    host: Host<'_>,
) -> Request<Full<Bytes>> {
    match host {
        Host::Configured => {}
        Host::Replica(Some(host)) if parts.version != Version::HTTP_2 => {
            parts.headers.insert(header::HOST, host.clone());
        }
        Host::Replica(_) => {
            parts.headers.remove(header::HOST);
        }
    }
    parts.uri = match how {
        Addressing::Endpoint(query) => endpoint_target(replica, query.as_deref()),
        Addressing::Origin => {
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            origin_target(replica, path).unwrap_or_else(|| replica.clone())
        }
    };
    Request::from_parts(parts, Full::new(body.clone()))
}

/// The `Host` header for calls to `url`, as hyper-util's client would write
/// it: the host, and the port unless it is the scheme's default.
pub fn host_header(url: &Uri) -> Option<HeaderValue> {
    let host = url.host()?;
    let secure = matches!(url.scheme_str(), Some("https" | "wss"));
    let value = match (url.port_u16(), secure) {
        (Some(443), true) | (Some(80), false) | (None, _) => HeaderValue::from_str(host),
        (Some(port), _) => HeaderValue::from_str(&format!("{host}:{port}")),
    };
    value.ok()
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

/// Makes an absolute URI origin-form (`/path?query`), as HTTP/1.1 to an
/// origin server wants it; hyper's connections write the URI as it is.
pub fn origin_form(uri: &mut Uri) {
    if uri.scheme().is_none() && uri.authority().is_none() {
        return;
    }
    *uri = match uri.path_and_query() {
        Some(path) if path.as_str().starts_with('/') => Uri::from(path.clone()),
        _ => Uri::from_static("/"),
    };
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
    fn the_origin_form_keeps_path_and_query_only() {
        let cases = [
            ("http://10.0.0.2:9002/rpc?v=2&key=1", "/rpc?v=2&key=1"),
            ("http://10.0.0.2:9002", "/"),
            ("/already", "/already"),
        ];
        for (given, want) in cases {
            let mut uri: Uri = given.parse().unwrap();
            origin_form(&mut uri);
            assert_eq!(uri, want, "{given}");
        }
    }

    #[test]
    fn an_rpc_call_goes_to_each_replicas_own_endpoint() {
        let head = parts("http://10.0.0.1:9001/a2a?tenant=x");
        let how = Addressing::Endpoint(Some("key=1".into()));
        let body = Bytes::from_static(b"{}");
        let replica: Uri = "http://10.0.0.2:9002/rpc?v=2".parse().unwrap();
        let request = readdress(head.clone(), &body, &how, &replica, Host::Replica(None));
        assert_eq!(request.uri(), "http://10.0.0.2:9002/rpc?v=2&key=1");
        let bare: Uri = "http://10.0.0.3:9003".parse().unwrap();
        let request = readdress(
            head.clone(),
            &body,
            &Addressing::Endpoint(None),
            &bare,
            Host::Replica(None),
        );
        assert_eq!(request.uri(), "http://10.0.0.3:9003/");
    }

    #[test]
    fn an_origin_request_keeps_its_path_on_the_replica() {
        let head = parts("http://10.0.0.1:9001/.well-known/agent-card.json?x=1");
        let replica: Uri = "http://10.0.0.2:9002/rpc".parse().unwrap();
        let request = readdress(
            head.clone(),
            &Bytes::new(),
            &Addressing::Origin,
            &replica,
            Host::Replica(None),
        );
        assert_eq!(
            request.uri(),
            "http://10.0.0.2:9002/.well-known/agent-card.json?x=1"
        );
    }

    #[test]
    fn the_host_header_is_what_hyper_util_would_write() {
        for (url, host) in [
            ("http://10.0.0.2:9002/rpc", Some("10.0.0.2:9002")),
            ("http://agent.local/rpc", Some("agent.local")),
            ("http://agent.local:80/rpc", Some("agent.local")),
            ("https://agent.local:443/", Some("agent.local")),
            ("https://agent.local:80/", Some("agent.local:80")),
            ("http://agent.local:443/", Some("agent.local:443")),
            ("http://[::1]:8080/", Some("[::1]:8080")),
            ("http://user:pw@agent.local:81/", Some("agent.local:81")),
            ("/relative", None),
        ] {
            let uri: Uri = url.parse().unwrap();
            assert_eq!(
                host_header(&uri).as_ref().map(|v| v.to_str().unwrap()),
                host,
                "{url}"
            );
        }
    }

    #[test]
    fn the_replicas_host_replaces_the_clients_a_configured_one_stays_and_http2_gets_none() {
        let replica: Uri = "http://10.0.0.2:9002/rpc".parse().unwrap();
        let host = host_header(&replica);
        let body = Bytes::new();
        let how = Addressing::Endpoint(None);
        let with_host = |value: &'static str| {
            let mut head = parts("/");
            head.headers
                .insert(header::HOST, HeaderValue::from_static(value));
            head
        };
        let plain = readdress(
            parts("/"),
            &body,
            &how,
            &replica,
            Host::Replica(host.as_ref()),
        );
        assert_eq!(plain.headers()[header::HOST], "10.0.0.2:9002");
        let clients = with_host("gateway.example:8080");
        let replaced = readdress(clients, &body, &how, &replica, Host::Replica(host.as_ref()));
        let hosts: Vec<_> = replaced.headers().get_all(header::HOST).iter().collect();
        assert_eq!(
            hosts,
            ["10.0.0.2:9002"],
            "the client's Host never reaches the agent"
        );
        let hostless = readdress(
            with_host("gateway.example"),
            &body,
            &how,
            &replica,
            Host::Replica(None),
        );
        assert!(hostless.headers().get(header::HOST).is_none());
        let configured = with_host("virtual.example");
        let kept = readdress(configured, &body, &how, &replica, Host::Configured);
        assert_eq!(kept.headers()[header::HOST], "virtual.example");
        let mut h2 = with_host("gateway.example:8080");
        h2.version = Version::HTTP_2;
        let h2 = readdress(h2, &body, &how, &replica, Host::Replica(host.as_ref()));
        assert!(h2.headers().get(header::HOST).is_none());
        let mut h2_configured = with_host("virtual.example");
        h2_configured.version = Version::HTTP_2;
        let h2 = readdress(h2_configured, &body, &how, &replica, Host::Configured);
        assert_eq!(h2.headers()[header::HOST], "virtual.example");
    }
}
