//! The `Upstream` type: one agent's replicas, clients and settings, built
//! from its config section.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::Uri;
use http_body_util::Full;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::headers::Credentials;
use super::lanes::Lanes;
use super::pool::Pool;
use super::replicas::Replicas;
use crate::config;

/// How long an idle pooled connection is kept; under typical upstream
/// keep-alive timeouts so the gateway closes first.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// Who is calling, for credential hygiene and the identity header.
#[derive(Default)]
pub struct Caller<'a> {
    /// The credentials the gateway consumed (`None` without gateway auth).
    pub consumed: Option<&'a Credentials>,
    /// The verified caller.
    pub subject: Option<&'a str>,
    /// The call's spans, when traces are exported: owner probes get their
    /// own (`crate::call::probe`).
    pub trace: Option<&'a crate::telemetry::trace::CallTrace>,
}

pub struct Upstream {
    pub name: String,
    pub(super) replicas: Replicas,
    pub(super) http2: bool,
    pub(super) response_header_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) extra_headers: Vec<(HeaderName, HeaderValue)>,
    /// `extra_headers` sets `Host`: calls keep it (see `address::Host`).
    pub(super) host_configured: bool,
    pub(super) card_url: Option<Uri>,
    pub(super) forward_credentials: bool,
    pub(super) identity_header: Option<HeaderName>,
    /// HTTP/1.1 calls (a pooled connection each), and everything that is
    /// not a JSON-RPC call (cards, probes).
    pub(super) client: HttpClient,
    /// HTTP/2 calls: spread over as many connections as their streams need.
    pub(super) lanes: Option<Lanes<HttpClient>>,
    /// gRPC calls when the upstream's other calls are HTTP/1.1 (`http2`
    /// off): HTTP/2 only, h2 by ALPN over TLS. It opens no connection
    /// until the first gRPC call.
    pub(super) grpc: HttpClient,
    /// JSON-RPC calls to each `http://` replica over HTTP/1.1 (by replica
    /// index; `None` for TLS replicas, empty with `http2`): the gateway's own
    /// connection list, cheaper than the legacy client's pool.
    pub(super) pools: Vec<Option<Pool>>,
    pub(super) builder: hyper_util::client::legacy::Builder,
    pub(super) connector: HttpsConnector<HttpConnector>,
}

pub(super) type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;
impl Upstream {
    pub fn new(cfg: &config::Upstream) -> Self {
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_idle_timeout(POOL_IDLE)
            // A burst opens a connection per call in flight; past this many
            // idle per replica, each is closed as its answer ends.
            .pool_max_idle_per_host(cfg.max_idle_connections)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .http2_only(cfg.http2);
        let grpc = (builder.clone())
            .http2_only(true)
            .build(connector(cfg, true));
        let connector = connector(cfg, cfg.http2);
        let client = builder.build(connector.clone());
        let replicas = Replicas::new(cfg);
        let lanes = cfg
            .http2
            .then(|| Lanes::new(cfg.http2_streams_per_connection));
        let pools = match cfg.http2 {
            true => Vec::new(),
            false => (replicas.iter())
                .map(|r| {
                    let (idle, timeout) = (cfg.max_idle_connections, POOL_IDLE);
                    Pool::for_url(&r.endpoint, cfg.connect_timeout, idle, timeout)
                })
                .collect(),
        };
        Self {
            name: cfg.name.clone(),
            replicas,
            http2: cfg.http2,
            response_header_timeout: cfg.response_header_timeout,
            connect_timeout: cfg.connect_timeout,
            extra_headers: cfg.headers.clone(),
            host_configured: cfg.headers.iter().any(|(name, _)| name == header::HOST),
            card_url: cfg.card_url.clone(),
            forward_credentials: cfg.forward_credentials,
            identity_header: cfg.identity_header.clone(),
            client,
            lanes,
            grpc,
            pools,
            builder,
            connector,
        }
    }
}

/// TCP with the connect timeout and no Nagle delay, and TLS for `https://`
/// URLs as the upstream's `tls` says, offering h2 by ALPN only with
/// `http2`.
fn connector(cfg: &config::Upstream, http2: bool) -> HttpsConnector<HttpConnector> {
    let mut tcp = HttpConnector::new();
    tcp.set_connect_timeout(Some(cfg.connect_timeout));
    tcp.set_nodelay(true);
    // The TLS layer above takes https; plain TCP must not refuse it.
    tcp.enforce_http(false);
    // HTTP/1.1 sends no ALPN (hyper-rustls sets it, and only for h2).
    let builder = HttpsConnectorBuilder::new()
        .with_tls_config(cfg.tls.client_config())
        .https_or_http();
    let builder = match &cfg.tls.server_name {
        Some(name) => builder.with_server_name_resolver(FixedServerNameResolver::new(name.clone())),
        None => builder,
    };
    match http2 {
        true => builder.enable_http2().wrap_connector(tcp),
        false => builder.enable_http1().wrap_connector(tcp),
    }
}
