//! What every request handler shares: the validated config, one pooled
//! client per upstream, the router, the fleet view, and whether the gateway
//! is draining.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::config::Config;
use crate::limits::concurrency::{InFlight, Streams};
use crate::limits::rate::RateLimits;
use crate::routing::fleet::Fleet;
use crate::routing::Router;
use crate::telemetry::metrics::upstream::UpstreamMeters;
use crate::telemetry::metrics::Metrics;
use crate::telemetry::trace::Tracing;
use crate::upstream::headers::Credentials;
use crate::upstream::Upstream;

/// The current state, swapped whole by a config reload: each request loads
/// it once and keeps that snapshot, so a reload never changes a request
/// half-way.
pub type Shared = Arc<arc_swap::ArcSwap<AppState>>;

pub struct AppState {
    pub config: Config,
    pub upstreams: Vec<Arc<Upstream>>,
    pub router: Router,
    pub fleet: Arc<Fleet>,
    /// `None` when the gateway does not authenticate callers.
    pub auth: Option<Authenticator>,
    /// The credentials the gateway's own schemes consume.
    pub consumed: Option<Credentials>,
    pub rate: Arc<RateLimits>,
    /// In-flight limits, one per upstream (same order).
    pub in_flight: Vec<Arc<InFlight>>,
    pub streams: Arc<Streams>,
    pub metrics: Arc<Metrics>,
    /// Each upstream's request metrics (same order as `upstreams`).
    pub meters: Vec<Arc<UpstreamMeters>>,
    /// Cancelled when the shutdown grace is over: open streams end cleanly.
    pub closing: CancellationToken,
    /// `None` unless traces are exported; kept across reloads (`[telemetry]`
    /// is read once, at start).
    pub tracing: Option<Arc<Tracing>>,
    /// The JWKS of `[card.signing]`'s keys, rendered once per config.
    pub jwks: Option<Arc<crate::card::published::Rendered>>,
    /// The push relay's callback and queues; `None` while it is off.
    pub push_relay: Option<Arc<crate::push_relay::callback::Callback>>,
    /// The console's signed-in sessions, kept across reloads.
    pub console_sessions: Arc<crate::auth::sessions::Sessions>,
    /// The public listener's address once bound (port 0 picks one).
    listening: Arc<std::sync::OnceLock<std::net::SocketAddr>>,
    draining: Arc<AtomicBool>,
}

/// Trace export, when asked for. A setting that cannot be used leaves
/// traces off, logged at error level: telemetry never stops the traffic.
fn start_tracing(config: &Config, metrics: &Metrics) -> Option<Arc<Tracing>> {
    match Tracing::start(&config.telemetry, &metrics.trace_spans) {
        Ok(tracing) => tracing,
        Err(why) => {
            tracing::error!("traces are off: {why}");
            None
        }
    }
}

/// The rate limits, sharing the previous store's connection when its
/// settings are the same. A store client that cannot be made (the config
/// check makes one too, so only in a rare race with a file) leaves the
/// limits in memory, logged at error level.
fn rate_limits(config: &Config, metrics: &Metrics, previous: Option<&AppState>) -> RateLimits {
    let settings = &config.rate_limits;
    let meters = rate_store_meters(metrics);
    RateLimits::with_store(settings, &meters, previous.map(|p| &*p.rate)).unwrap_or_else(|why| {
        tracing::error!("rate limits stay in memory: {why}");
        RateLimits::new(settings)
    })
}

/// The shared rate-limit store's metrics, as handles into `metrics`.
pub fn rate_store_meters(metrics: &Metrics) -> crate::limits::rate::store::Meters {
    crate::limits::rate::store::Meters {
        decisions: metrics.rate_decisions.clone(),
        errors: metrics.rate_store_errors.clone(),
        up: metrics.rate_store_up.clone(),
        duration: metrics.rate_store_duration.clone(),
    }
}

/// Each upstream's pool and in-flight limit: kept from `previous` where
/// its settings are the same, else new.
fn upstreams(
    config: &Config,
    previous: Option<&AppState>,
) -> (Vec<Arc<Upstream>>, Vec<Arc<InFlight>>) {
    let same_upstream = |u: &crate::config::Upstream| {
        let p = previous?;
        let i = p.config.upstreams.iter().position(|old| old == u)?;
        Some((p.upstreams[i].clone(), p.in_flight[i].clone()))
    };
    config
        .upstreams
        .iter()
        .map(|u| {
            same_upstream(u).unwrap_or_else(|| {
                let limit = InFlight::new(&u.name, u.max_in_flight, u.queue, u.queue_timeout);
                (Arc::new(Upstream::new(u)), Arc::new(limit))
            })
        })
        .unzip()
}

impl AppState {
    pub fn new(config: Config) -> Self {
        Self::build(config, None)
    }

    /// The state for a reloaded `config`, keeping what did not change:
    /// upstream pools and in-flight limits of upstreams whose settings are
    /// the same, the fleet's cards and task owners, rate-limit budgets and
    /// stream counts when their settings are the same, the metrics.
    pub fn rebuild(config: Config, previous: &AppState) -> Self {
        Self::build(config, Some(previous))
    }

    fn build(config: Config, previous: Option<&AppState>) -> Self {
        let (upstreams, in_flight) = upstreams(&config, previous);
        let metrics = previous.map_or_else(
            || {
                Arc::new(Metrics::with_task_capacity(
                    config.routing.affinity_capacity,
                ))
            },
            |p| p.metrics.clone(),
        );
        let meters = config
            .upstreams
            .iter()
            .map(|u| Arc::new(UpstreamMeters::new(u.name.as_str().into(), metrics.clone())))
            .collect();
        let fleet = match previous {
            Some(p) => p.fleet.clone(),
            None => Arc::new(Fleet::new(&config, metrics.clone())),
        };
        let rate = match previous {
            Some(p) if p.config.rate_limits == config.rate_limits => p.rate.clone(),
            _ => Arc::new(rate_limits(&config, &metrics, previous)),
        };
        let c = &config.concurrency;
        let streams = match previous {
            Some(p) if p.config.concurrency == *c => p.streams.clone(),
            _ => Arc::new(Streams::new(c.max_streams, c.max_streams_per_caller)),
        };
        let tracing = match previous {
            Some(p) => p.tracing.clone(),
            None => start_tracing(&config, &metrics),
        };
        let jwks = (config.card.signing.as_ref()).map(|s| Arc::new(crate::card::jwks::render(s)));
        let push_relay = config.push_relay.as_ref().map(|relay| {
            let observe = crate::telemetry::push::observe(metrics.clone(), tracing.clone());
            let previous = previous.and_then(|p| p.push_relay.as_deref());
            crate::push_relay::start::start(relay, &config.push_guard, observe, previous)
        });
        metrics
            .recent_calls
            .set_capacity(config.console.recent_calls);
        Self {
            tracing,
            jwks,
            push_relay,
            console_sessions: previous
                .map_or_else(Default::default, |p| p.console_sessions.clone()),
            listening: previous.map_or_else(Default::default, |p| p.listening.clone()),
            router: Router::new(&config.upstreams, &config.routing),
            auth: config.auth.as_ref().map(Authenticator::new),
            consumed: config.auth.as_ref().map(Credentials::from_auth),
            closing: previous.map_or_else(CancellationToken::new, |p| p.closing.clone()),
            draining: previous
                .map_or_else(|| Arc::new(AtomicBool::new(false)), |p| p.draining.clone()),
            config,
            upstreams,
            fleet,
            rate,
            in_flight,
            streams,
            metrics,
            meters,
        }
    }

    /// The public listener's address, once bound.
    pub fn listening(&self) -> Option<std::net::SocketAddr> {
        self.listening.get().copied()
    }

    /// Records where the public listener was bound (at start).
    pub fn bound(&self, addr: std::net::SocketAddr) {
        let _ = self.listening.set(addr);
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
        conn: &ConnInfo,
    ) -> Result<Option<crate::auth::Identity>, crate::http::error::GatewayError> {
        match &self.auth {
            Some(auth) => auth
                .authenticate(parts, conn.peer.as_deref())
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    /// What an answer (unary or events) tells: task and context owners,
    /// and the task states seen, for the metrics.
    pub fn observe_answer(
        &self,
        seen: &crate::a2a::seen::Seen<'_>,
        owner: &std::sync::Arc<str>,
        skill: Option<&str>,
    ) {
        self.learn_owners(seen, owner);
        self.metrics.task_states_seen(seen, skill.unwrap_or("none"));
    }

    /// As [`AppState::observe_answer`], for a chunk of a stream whose tasks
    /// `tasks` times.
    pub fn observe_events(
        &self,
        seen: &crate::a2a::seen::Seen<'_>,
        owner: &std::sync::Arc<str>,
        skill: Option<&str>,
        tasks: &mut crate::telemetry::metrics::StreamTasks,
    ) {
        self.learn_owners(seen, owner);
        tasks.states_seen(seen, skill.unwrap_or("none"));
    }

    fn learn_owners(&self, seen: &crate::a2a::seen::Seen<'_>, owner: &std::sync::Arc<str>) {
        if self.remembers_owners() {
            self.fleet.affinity.learn(seen, owner);
        }
    }

    /// Whether task and conversation owners are worth learning: with one
    /// upstream every call goes to it, so there is nothing to remember.
    pub fn remembers_owners(&self) -> bool {
        self.upstreams.len() > 1
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
    remote: std::net::SocketAddr,
    /// `remote`'s address as an `X-Forwarded-For` hop: written once for the
    /// connection, not for each of its calls (two allocations a call).
    remote_hop: http::HeaderValue,
    /// The address the client connected to (the bound port, never port 0).
    pub local: std::net::SocketAddr,
    pub proto: &'static str,
    /// The verified client certificate, on a TLS connection that gave one.
    pub peer: Option<std::sync::Arc<crate::tls::PeerCert>>,
}

impl ConnInfo {
    /// A plain connection from `remote`, accepted on `local`.
    pub fn new(remote: std::net::SocketAddr, local: std::net::SocketAddr) -> Self {
        Self {
            remote,
            remote_hop: crate::upstream::headers::hop(remote.ip()),
            local,
            proto: "http",
            peer: None,
        }
    }

    /// The client: the TCP peer, or the source its PROXY header names.
    pub fn remote(&self) -> std::net::SocketAddr {
        self.remote
    }

    /// [`Self::remote`]'s address, as header text.
    pub fn remote_hop(&self) -> &http::HeaderValue {
        &self.remote_hop
    }

    /// The client is another than the TCP peer (a PROXY header said so).
    pub fn set_remote(&mut self, remote: std::net::SocketAddr) {
        self.remote_hop = crate::upstream::headers::hop(remote.ip());
        self.remote = remote;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// `[rate_limits]` shared through a store on a port nobody listens on,
    /// with `on_store_error = "deny"`.
    fn unreachable_store() -> Config {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        crate::config::load_str(&format!(
            "[rate_limits]\nglobal = {{ per_second = 100 }}\n[rate_limits.store]\nurl = \"redis://127.0.0.1:{port}\"\nconnect_timeout = \"200ms\"\non_store_error = \"deny\"\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n"
        ))
        .unwrap()
    }

    // The lock is held across awaits on purpose: the lines are logged there.
    #[allow(clippy::await_holding_lock)]
    #[tokio::test]
    async fn a_rate_store_that_cannot_answer_is_logged_once_not_per_call() {
        let _serial = crate::telemetry::log::capture::serial();
        let capture = crate::telemetry::log::capture::Capture::default();
        let _logging = capture.install(crate::config::LogFormat::Text);
        let state = AppState::new(unreachable_store());
        let store = state.rate.store().unwrap().clone();
        let why = store.ready().await.unwrap_err();
        assert!(
            why.starts_with("rate_limits.store redis://127.0.0.1:"),
            "{why}"
        );
        assert_eq!(store.state(), crate::limits::rate::store::State::Down);
        for _ in 0..50 {
            let started = Instant::now();
            let refused = state.rate.check("ip:1", "a", None).await.unwrap_err();
            assert!(matches!(
                refused,
                crate::http::error::GatewayError::RateStoreUnavailable { .. }
            ));
            assert!(started.elapsed() < Duration::from_millis(50));
        }
        // The probe asks again meanwhile, and says nothing new.
        tokio::time::sleep(crate::limits::rate::store::PROBE_INTERVAL * 3).await;
        let text = capture.text();
        assert_eq!(text.matches("cannot answer").count(), 1, "{text}");
        assert!(
            text.contains("WARN") && text.contains("fallback=\"deny\""),
            "{text}"
        );
        assert_eq!(state.metrics.rate_store_up.get(), 0);
        let denied = state
            .metrics
            .rate_decisions
            .with_label_values(&["deny", "refused"]);
        assert_eq!(denied.get(), 50);
    }
}
