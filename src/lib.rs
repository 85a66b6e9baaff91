//! a2a-gateway: one address, one Agent Card and one policy point in front of
//! a fleet of A2A agents. `build` turns a validated `Config` into a
//! `Gateway`; `Gateway::start` binds its listeners. The binary and the
//! integration tests both go through here.

pub mod a2a;
pub mod access;
pub mod admin;
pub mod auth;
pub mod body;
pub mod card;
pub mod config;
pub mod demo;
pub mod dispatch;
pub mod error;
pub mod fleet;
pub mod limits;
pub mod metrics;
pub mod observe;
pub mod proxy;
pub mod push_guard;
pub mod routing;
pub mod server;
pub mod sse;
pub mod stack;
pub mod state;
pub mod tls;
pub mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use config::Config;
use state::AppState;

pub struct Gateway {
    state: Arc<AppState>,
}

pub fn build(config: Config) -> Gateway {
    Gateway {
        state: Arc::new(AppState::new(config)),
    }
}

impl Gateway {
    /// Binds the proxy and admin listeners (port 0 picks a free port) and
    /// starts serving in the background.
    pub async fn start(self) -> std::io::Result<Running> {
        let tls = match &self.state.config.tls {
            Some(settings) => Some(tls::TlsState::load(settings).map_err(|e| {
                std::io::Error::other(format!("cannot load the TLS certificate: {e}"))
            })?),
            None => None,
        };
        let server = &self.state.config.server;
        let listener = TcpListener::bind(server.listen).await?;
        let admin_listener = TcpListener::bind(server.admin_listen).await?;
        let addr = listener.local_addr()?;
        let admin_addr = admin_listener.local_addr()?;
        let settings = server::Settings::new(server, &self.state.config.limits);
        // The first card round is awaited (each fetch is bounded by the
        // refresh timeout) so the gateway starts with the skills it can
        // route; a dead upstream delays start-up by that bound at most.
        self.state
            .fleet
            .refresh(&self.state.upstreams, &self.state.config)
            .await;
        let refresher = tokio::spawn(refresh_cards(self.state.clone()));
        let tls_watcher = tls.as_ref().map(|t| t.watch());
        let (stop_proxy, proxy_rx) = watch::channel(false);
        let (stop_admin, admin_rx) = watch::channel(false);
        let proxy_task = tokio::spawn(server::serve(
            listener,
            stack::proxy(self.state.clone()),
            settings.clone(),
            tls.clone(),
            proxy_rx,
        ));
        let admin_task = tokio::spawn(server::serve(
            admin_listener,
            stack::admin(self.state.clone()),
            settings,
            None,
            admin_rx,
        ));
        tracing::info!(%addr, %admin_addr, tls = tls.is_some(), upstreams = self.state.upstreams.len(), "a2a-gateway listening");
        Ok(Running {
            addr,
            admin_addr,
            state: self.state,
            stop_proxy,
            stop_admin,
            proxy_task,
            admin_task,
            refresher,
            tls,
            tls_watcher,
        })
    }
}

/// Keeps upstream cards fresh until the gateway stops.
async fn refresh_cards(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(state.config.card_refresh.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate; start-up just refreshed
    loop {
        tick.tick().await;
        state.fleet.refresh(&state.upstreams, &state.config).await;
    }
}

/// A started gateway. Dropping it stops both listeners (with the usual drain);
/// `shutdown` drains it.
pub struct Running {
    addr: SocketAddr,
    admin_addr: SocketAddr,
    state: Arc<AppState>,
    stop_proxy: watch::Sender<bool>,
    stop_admin: watch::Sender<bool>,
    proxy_task: JoinHandle<()>,
    admin_task: JoinHandle<()>,
    refresher: JoinHandle<()>,
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
        self.state
            .fleet
            .refresh(&self.state.upstreams, &self.state.config)
            .await;
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
        self.state.fleet.affinity.clear();
    }

    /// Graceful stop: readiness turns false, the proxy listener stops
    /// accepting and drains (bounded by the configured grace), then the
    /// admin listener, which kept answering probes meanwhile, stops too.
    pub async fn shutdown(self) {
        self.state.set_draining();
        self.refresher.abort();
        if let Some(watcher) = &self.tls_watcher {
            watcher.abort();
        }
        let _ = self.stop_proxy.send(true);
        let _ = self.proxy_task.await;
        let _ = self.stop_admin.send(true);
        let _ = self.admin_task.await;
    }
}
