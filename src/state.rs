//! What every request handler shares: the validated config, one pooled
//! client per upstream, the router, the fleet view, and whether the gateway
//! is draining.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::auth::Authenticator;
use crate::config::Config;
use crate::fleet::Fleet;
use crate::routing::Router;
use crate::upstream::headers::Credentials;
use crate::upstream::Upstream;

pub struct AppState {
    pub config: Config,
    pub upstreams: Vec<Upstream>,
    pub router: Router,
    pub fleet: Fleet,
    /// `None` when the gateway does not authenticate callers.
    pub auth: Option<Authenticator>,
    /// The credentials the gateway's own schemes consume.
    pub consumed: Option<Credentials>,
    pub rate: crate::limits::rate::RateLimits,
    /// In-flight limits, one per upstream (same order).
    pub in_flight: Vec<crate::limits::concurrency::InFlight>,
    pub streams: crate::limits::concurrency::Streams,
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    draining: AtomicBool,
}

impl AppState {
    pub fn new(config: Config) -> Self {
        let upstreams = config.upstreams.iter().map(Upstream::new).collect();
        let router = Router::new(&config.upstreams, &config.routing);
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::new());
        let fleet = Fleet::new(&config, metrics.clone());
        let auth = config.auth.as_ref().map(Authenticator::new);
        let consumed = config.auth.as_ref().map(Credentials::from_auth);
        let rate = crate::limits::rate::RateLimits::new(&config.rate_limits);
        let in_flight = config
            .upstreams
            .iter()
            .map(|u| {
                crate::limits::concurrency::InFlight::new(
                    &u.name,
                    u.max_in_flight,
                    u.queue,
                    u.queue_timeout,
                )
            })
            .collect();
        let streams = crate::limits::concurrency::Streams::new(
            config.concurrency.max_streams,
            config.concurrency.max_streams_per_caller,
        );
        Self {
            config,
            upstreams,
            router,
            fleet,
            auth,
            consumed,
            rate,
            in_flight,
            streams,
            metrics,
            draining: AtomicBool::new(false),
        }
    }

    /// The request path with the public URL's path prefix removed, so an
    /// ingress that does not strip `/a2a` still reaches `/`, `/agents/…`
    /// and the card paths.
    pub fn local_path<'a>(&self, path: &'a str) -> &'a str {
        let prefix = match &self.config.server.public_url {
            Some(p) if p.path != "/" => p.path.as_str(),
            _ => return path,
        };
        match path.strip_prefix(prefix) {
            Some("") => "/",
            Some(rest) if rest.starts_with('/') => rest,
            _ => path,
        }
    }

    /// The caller's identity; `Ok(None)` when the gateway does not
    /// authenticate.
    pub async fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<crate::auth::Identity>, crate::error::GatewayError> {
        match &self.auth {
            Some(auth) => auth.authenticate(parts).await.map(Some),
            None => Ok(None),
        }
    }

    /// What an answer (unary or events) tells: task and context owners,
    /// and the task states seen, for the metrics.
    pub fn observe_answer(
        &self,
        seen: &crate::routing::learn::Seen,
        owner: &std::sync::Arc<str>,
        skill: Option<&str>,
    ) {
        self.fleet.affinity.learn(seen, owner);
        self.metrics.task_states_seen(seen, skill.unwrap_or("none"));
    }

    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// Per-connection facts the server attaches to every request.
#[derive(Debug, Clone)]
pub struct ConnInfo {
    pub remote: std::net::SocketAddr,
    /// The address the client connected to (the bound port, never port 0).
    pub local: std::net::SocketAddr,
    pub proto: &'static str,
    /// The verified client certificate, on a TLS connection that gave one.
    pub peer: Option<std::sync::Arc<crate::tls::PeerCert>>,
}
