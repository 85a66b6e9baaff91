//! a2a-gateway: one address, one Agent Card and one policy point in front of
//! a fleet of A2A agents. `build` turns a validated `Config` into a
//! `Gateway`; `Gateway::start` binds its listeners. The binary and the
//! integration tests both go through here.

// The stages of a request's way, outermost first, one module a line (each
// comment keeps rustfmt from sorting them): the listeners and the stack
// every request goes through, one call's life, where it goes, the agents
// behind; then what every stage reads, and what runs beside the requests.
//
// Accept: listeners, protocol sniffing, PROXY protocol, drain.
pub mod server;
// TLS on the listener (and for agents: `upstream`).
pub mod tls;
// The stack's vocabulary: the body type, the error enum and its table.
pub mod http;
// The client bindings: each front door reads its request into the call.
pub mod ingress;
// One call, binding-neutral: intake, authorize, admit, route, the plan.
pub mod call;
// The agent bindings: the call sent to an agent, its answer read back.
pub mod egress;
// The answer on its way back: relayed, streamed, encoded for the client.
pub mod relay;
// Who is calling, and what they may use.
pub mod auth;
// Rate and concurrency limits.
pub mod limits;
// The SSRF guard on push webhooks.
pub mod push_guard;
pub mod push_relay;
// Which agent takes the call: skills, task owners, text match.
pub mod routing;
// Version translation between client and agent.
pub mod bridge;
// The agents behind: pools, replicas, breakers, the forwarded request.
pub mod upstream;
// Agent Cards: fetched, aggregated, rewritten, served.
pub mod card;
//
// What every stage reads:
// the protocol's vocabulary (methods, model, validation, protos, SSE).
pub mod a2a;
// The configuration, validated.
pub mod config;
// The state each request shares.
pub mod state;
// Address ranges.
pub mod cidr;
// Durations written in the configuration.
pub mod duration;
// Bounded maps of learned ids.
pub mod recent;
// Metrics, logs, access lines, traces.
pub mod console;
pub mod telemetry;
//
// Beside the requests: memory given back after bursts, and the demo.
pub mod memory_release;
// The demo: the gateway before two sample agents.
pub mod demo;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use arc_swap::ArcSwap;
pub use config::Config;
use state::{AppState, Shared};

pub struct Gateway {
    shared: Shared,
}

pub fn build(config: Config) -> Gateway {
    Gateway {
        shared: Arc::new(ArcSwap::from_pointee(AppState::new(config))),
    }
}

/// The listener's certificate and key, read once before serving.
fn load_tls(settings: Option<&tls::TlsSettings>) -> std::io::Result<Option<Arc<tls::TlsState>>> {
    settings
        .map(|settings| {
            tls::TlsState::load(settings)
                .map_err(|e| std::io::Error::other(format!("cannot load the TLS certificate: {e}")))
        })
        .transpose()
}

impl Gateway {
    /// Binds the proxy and admin listeners (port 0 picks a free port) and
    /// starts serving in the background.
    pub async fn start(self) -> std::io::Result<Running> {
        let state = self.shared.load_full();
        let tls = load_tls(state.config.tls.as_ref())?;
        if let Some(store) = state.rate.store() {
            store.ready().await.map_err(std::io::Error::other)?;
        }
        let server = &state.config.server;
        let listener = TcpListener::bind(server.listen).await?;
        let admin_listener = TcpListener::bind(server.admin_listen).await?;
        let addr = listener.local_addr()?;
        let admin_addr = admin_listener.local_addr()?;
        state.bound(addr);
        let settings = server::Settings::new(server, &state.config.limits);
        // The first card round is awaited (each fetch is bounded by the
        // refresh timeout) so the gateway starts with the skills it can
        // route; a dead upstream delays start-up by that bound at most.
        state.fleet.refresh(&state.upstreams, &state.config).await;
        let refresher = tokio::spawn(refresh_cards(self.shared.clone()));
        let releaser = tokio::spawn(memory_release::run(self.shared.clone()));
        let tls_watcher = tls.as_ref().map(|t| t.watch());
        let (stop_proxy, proxy_rx) = watch::channel(false);
        let (stop_admin, admin_rx) = watch::channel(false);
        let proxy_task = tokio::spawn(server::serve(
            listener,
            server::stack::proxy(self.shared.clone()),
            server::Settings {
                counted: Some(server::Counted {
                    open: state.metrics.connections_open.clone(),
                    accepted: state.metrics.connections.clone(),
                }),
                ..settings.clone()
            },
            tls.clone(),
            proxy_rx,
            state.closing.clone(),
        ));
        let admin_task = tokio::spawn(server::serve(
            admin_listener,
            server::stack::admin(self.shared.clone()),
            // Probes and scrapes come straight from the cluster.
            server::Settings {
                proxy_protocol: false,
                ..settings
            },
            None,
            admin_rx,
            tokio_util::sync::CancellationToken::new(),
        ));
        tracing::info!(%addr, %admin_addr, tls = tls.is_some(), upstreams = state.upstreams.len(), "a2a-gateway listening");
        Ok(Running {
            addr,
            admin_addr,
            shared: self.shared,
            stop_proxy,
            stop_admin,
            proxy_task,
            admin_task,
            refresher,
            releaser,
            tls,
            tls_watcher,
        })
    }
}

/// Keeps upstream cards fresh until the gateway stops, with the current
/// configuration's interval and upstreams.
async fn refresh_cards(shared: Shared) {
    let interval = shared.load().config.card_refresh.interval;
    tokio::time::sleep(interval).await; // start-up just refreshed
    loop {
        let state = shared.load_full();
        state.fleet.refresh(&state.upstreams, &state.config).await;
        tokio::time::sleep(state.config.card_refresh.interval).await;
    }
}

/// A started gateway. Dropping it stops both listeners (with the usual drain);
/// `shutdown` drains it.
pub struct Running {
    addr: SocketAddr,
    admin_addr: SocketAddr,
    shared: Shared,
    stop_proxy: watch::Sender<bool>,
    stop_admin: watch::Sender<bool>,
    proxy_task: JoinHandle<()>,
    admin_task: JoinHandle<()>,
    refresher: JoinHandle<()>,
    releaser: JoinHandle<()>,
    tls: Option<Arc<tls::TlsState>>,
    tls_watcher: Option<JoinHandle<()>>,
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// Runs one card refresh round now (tests; operators wait for the interval).
    pub async fn refresh_cards(&self) {
        let state = self.shared.load_full();
        state.fleet.refresh(&state.upstreams, &state.config).await;
    }

    /// Exports the finished spans now (tests; the batch goes out on its
    /// own schedule otherwise).
    pub async fn flush_traces(&self) {
        if let Some(tracing) = self.shared.load().tracing.clone() {
            tracing.flush().await;
        }
    }

    /// Re-reads the TLS certificate, key and client CA now, as a file
    /// change or SIGHUP would; on error the previous certificate stays.
    pub fn reload_tls(&self) -> Result<(), String> {
        match &self.tls {
            Some(tls) => tls.reload(),
            None => Err("TLS is not configured".into()),
        }
    }

    /// Forgets every learned task and context owner, as a restart would.
    pub fn forget_affinity(&self) {
        self.shared.load().fleet.affinity.clear();
    }

    /// Applies a reloaded configuration, or counts a refused one. The new
    /// state is swapped in whole: requests in progress finish with the
    /// state they started with, connections stay open, and upstream pools,
    /// cards, task owners and limit budgets carry over where unchanged.
    /// Listener addresses and the TLS file paths need a restart.
    pub fn reload(&self, loaded: Result<Config, config::ConfigErrors>) -> Result<(), String> {
        let previous = self.shared.load_full();
        let config = match loaded {
            Ok(config) => config,
            Err(errors) => {
                previous
                    .metrics
                    .config_reloads
                    .with_label_values(&["failed"])
                    .inc();
                let why = errors.to_string().replace('\n', "; ");
                tracing::error!(
                    "configuration reload refused, the previous configuration stays: {why}"
                );
                return Err(why);
            }
        };
        let old = &previous.config.server;
        if config.server.listen != old.listen
            || config.server.admin_listen != old.admin_listen
            || config.server.proxy_protocol != old.proxy_protocol
        {
            tracing::warn!(
                "listen addresses or server.proxy_protocol changed in the configuration; they take effect on restart"
            );
        }
        if config.telemetry != previous.config.telemetry {
            tracing::warn!("[telemetry] changed in the configuration; it takes effect on restart");
        }
        if config.tls != previous.config.tls {
            tracing::warn!("[tls] settings changed; certificate files are reloaded when they change, new paths take effect on restart");
        }
        let next = Arc::new(AppState::rebuild(config, &previous));
        next.fleet.reconfigure(&next.config);
        self.shared.store(next.clone());
        previous
            .metrics
            .config_reloads
            .with_label_values(&["ok"])
            .inc();
        tracing::info!(upstreams = next.upstreams.len(), "configuration reloaded");
        // Upstreams new to this configuration get their cards now.
        tokio::spawn(async move { next.fleet.refresh(&next.upstreams, &next.config).await });
        Ok(())
    }

    /// Graceful stop: readiness turns false, the proxy listener stops
    /// accepting and drains (bounded by the configured grace; then open
    /// streams end with a final event), then the admin listener, which kept
    /// answering probes meanwhile, stops too.
    pub async fn shutdown(self) {
        let started = std::time::Instant::now();
        self.shared.load().set_draining();
        self.refresher.abort();
        self.releaser.abort();
        if let Some(watcher) = &self.tls_watcher {
            watcher.abort();
        }
        let _ = self.stop_proxy.send(true);
        let _ = self.proxy_task.await;
        // The spans of the calls just drained go out in what is left of the
        // grace (half a second at least).
        let state = self.shared.load_full();
        if let Some(tracing) = state.tracing.clone() {
            let grace = state.config.server.shutdown_grace;
            let left = grace.saturating_sub(started.elapsed());
            tracing
                .shutdown(left.max(std::time::Duration::from_millis(500)))
                .await;
        }
        let _ = self.stop_admin.send(true);
        let _ = self.admin_task.await;
    }
}
