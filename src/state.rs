//! What every request handler shares: the validated config, one pooled
//! client per upstream, the router, and whether the gateway is draining.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::Config;
use crate::routing::Router;
use crate::upstream::Upstream;

pub struct AppState {
    pub config: Config,
    pub upstreams: Vec<Upstream>,
    pub router: Router,
    draining: AtomicBool,
}

impl AppState {
    pub fn new(config: Config) -> Self {
        let upstreams = config.upstreams.iter().map(Upstream::new).collect();
        let router = Router::new(&config.upstreams, &config.routing);
        Self {
            config,
            upstreams,
            router,
            draining: AtomicBool::new(false),
        }
    }

    /// JSON-RPC is served at `/` and, when the public URL has a path, there
    /// too (for ingresses that do not strip it).
    pub fn is_rpc_path(&self, path: &str) -> bool {
        path == "/"
            || self
                .config
                .server
                .public_url
                .as_ref()
                .is_some_and(|p| p.path == path.trim_end_matches('/'))
    }

    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}

/// Per-connection facts the server attaches to every request.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo {
    pub remote: std::net::SocketAddr,
    /// The address the client connected to (the bound port, never port 0).
    pub local: std::net::SocketAddr,
    pub proto: &'static str,
}
