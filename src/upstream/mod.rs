//! One pooled HTTP client per upstream: builds the forwarded request, applies
//! the connect and response-header timeouts, and says who failed when a call
//! does not succeed.

pub mod headers;

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Method, Request, Response, Uri, Version};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::config;
use crate::error::GatewayError;

/// How long an idle pooled connection is kept; under typical upstream
/// keep-alive timeouts so the gateway closes first.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// Who is calling, for credential hygiene and the identity header.
#[derive(Default)]
pub struct Caller<'a> {
    /// The credentials the gateway consumed (`None` without gateway auth).
    pub consumed: Option<&'a headers::Credentials>,
    /// The verified caller.
    pub subject: Option<&'a str>,
}

/// Where the client request came from, for `X-Forwarded-*`.
#[derive(Clone)]
pub struct Origin {
    pub client: SocketAddr,
    pub proto: &'static str,
    pub host: Option<HeaderValue>,
}

pub struct Upstream {
    pub name: String,
    url: Uri,
    http2: bool,
    response_header_timeout: Duration,
    connect_timeout: Duration,
    extra_headers: Vec<(HeaderName, HeaderValue)>,
    card_url: Option<Uri>,
    forward_credentials: bool,
    identity_header: Option<HeaderName>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Upstream {
    pub fn new(cfg: &config::Upstream) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(cfg.connect_timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .http2_only(cfg.http2)
            .build(connector);
        Self {
            name: cfg.name.clone(),
            url: cfg.url.clone(),
            http2: cfg.http2,
            response_header_timeout: cfg.response_header_timeout,
            connect_timeout: cfg.connect_timeout,
            extra_headers: cfg.headers.clone(),
            card_url: cfg.card_url.clone(),
            forward_credentials: cfg.forward_credentials,
            identity_header: cfg.identity_header.clone(),
            client,
        }
    }

    /// The JSON-RPC call as the upstream will see it: the client's body byte
    /// for byte, its end-to-end headers, and the gateway's forwarding headers.
    pub fn rpc_request(&self, client: &Parts, body: Bytes, origin: Origin) -> Request<Full<Bytes>> {
        self.rpc_request_as(client, body, origin, &Caller::default())
    }

    /// The call as the upstream will see it: the client's body byte for
    /// byte, its end-to-end headers less the credentials the gateway
    /// consumed (unless this upstream is to receive them), the gateway's
    /// forwarding headers, and the verified identity where configured.
    pub fn rpc_request_as(
        &self,
        client: &Parts,
        body: Bytes,
        origin: Origin,
        caller: &Caller<'_>,
    ) -> Request<Full<Bytes>> {
        let mut headers = client.headers.clone();
        headers::strip_hop_by_hop(&mut headers);
        // The gateway already read the body; the upstream must not wait for a
        // 100-continue that nobody will act on.
        for name in [header::HOST, header::CONTENT_LENGTH, header::EXPECT] {
            headers.remove(name);
        }
        let mut query = client.uri.query().map(str::to_owned);
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
        headers::add_forwarded(&mut headers, origin.client.ip(), origin.proto, origin.host);
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.target(query.as_deref());
        *request.version_mut() = self.version();
        *request.headers_mut() = headers;
        request
    }

    /// The absolute URI of a path on the upstream's origin (cards live there).
    pub fn origin_uri(&self, path: &str) -> Uri {
        let mut uri = http::uri::Builder::new().path_and_query(path);
        if let (Some(scheme), Some(authority)) = (self.url.scheme(), self.url.authority()) {
            uri = uri.scheme(scheme.clone()).authority(authority.clone());
        }
        uri.build().unwrap_or_else(|_| self.url.clone())
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

    /// Sends a request and waits for the response head, bounded by the
    /// response-header timeout. The body is left to the caller to stream.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, GatewayError> {
        match tokio::time::timeout(self.response_header_timeout, self.client.request(request)).await
        {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(self.classify(&e)),
            Err(_) => Err(GatewayError::UpstreamTimeout {
                upstream: self.name.clone(),
                detail: format!(
                    "no response headers within {:?}",
                    self.response_header_timeout
                ),
            }),
        }
    }

    /// Sends a request and reads a bounded body (cards, probes), the whole
    /// exchange bounded by the response-header timeout or `limit`.
    pub async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
        max_bytes: usize,
        limit: Duration,
    ) -> Result<(http::StatusCode, http::HeaderMap, Bytes), GatewayError> {
        let what = request.uri().path().to_string();
        let run = async {
            let response = self.send(request).await?;
            let (parts, body) = response.into_parts();
            match Limited::new(body, max_bytes).collect().await {
                Ok(body) => Ok((parts.status, parts.headers, body.to_bytes())),
                Err(e) => Err(GatewayError::UpstreamBadResponse {
                    upstream: self.name.clone(),
                    detail: format!("reading {what}: {e}"),
                }),
            }
        };
        match tokio::time::timeout(limit, run).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::UpstreamTimeout {
                upstream: self.name.clone(),
                detail: format!("{what} took longer than {limit:?}"),
            }),
        }
    }

    pub fn card_url(&self) -> Option<&Uri> {
        self.card_url.as_ref()
    }

    fn target(&self, query: Option<&str>) -> Uri {
        let Some(query) = query else {
            return self.url.clone();
        };
        let path = self.url.path();
        let joined = match self.url.query() {
            Some(own) => format!("{path}?{own}&{query}"),
            None => format!("{path}?{query}"),
        };
        let mut parts = self.url.clone().into_parts();
        parts.path_and_query = joined.parse().ok();
        Uri::from_parts(parts).unwrap_or_else(|_| self.url.clone())
    }

    fn version(&self) -> Version {
        if self.http2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        }
    }

    /// Maps a client failure to the party at fault: the request never got an
    /// answer from the upstream, so it is 502/504, never a client error.
    fn classify(&self, e: &hyper_util::client::legacy::Error) -> GatewayError {
        let upstream = self.name.clone();
        let detail = chain(e);
        if e.is_connect() {
            if has_io_kind(e, std::io::ErrorKind::TimedOut) {
                return GatewayError::UpstreamTimeout {
                    upstream,
                    detail: format!("connect timed out after {:?}", self.connect_timeout),
                };
            }
            return GatewayError::UpstreamUnavailable { upstream, detail };
        }
        match find_hyper_error(e) {
            Some(h) if h.is_parse() || h.is_parse_status() || h.is_parse_too_large() => {
                GatewayError::UpstreamBadResponse { upstream, detail }
            }
            Some(h) if h.is_timeout() => GatewayError::UpstreamTimeout { upstream, detail },
            _ => GatewayError::UpstreamUnavailable { upstream, detail },
        }
    }
}

fn sources<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| e.source())
}

fn chain(e: &hyper_util::client::legacy::Error) -> String {
    sources(e)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn has_io_kind(e: &hyper_util::client::legacy::Error, kind: std::io::ErrorKind) -> bool {
    sources(e).any(|s| {
        s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

fn find_hyper_error(e: &hyper_util::client::legacy::Error) -> Option<&hyper::Error> {
    sources(e).find_map(|s| s.downcast_ref::<hyper::Error>())
}
