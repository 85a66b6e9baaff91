//! Starts a real gateway on loopback (port 0) from a TOML snippet.

use std::net::SocketAddr;

use a2a_gateway::config::{self, Overrides};
use a2a_gateway::Running;

pub struct TestGateway {
    pub running: Running,
}

impl TestGateway {
    /// `upstreams` as `(name, url)`; `extra` is TOML put before them
    /// (e.g. `[limits]` or `[routing]` sections).
    pub async fn start(upstreams: &[(&str, &str)], extra: &str) -> TestGateway {
        let mut text = settings(extra);
        for (name, url) in upstreams {
            text.push_str(&format!(
                "[[upstreams]]\nname = \"{name}\"\nurl = \"{url}\"\n"
            ));
        }
        Self::from_toml(&text).await
    }

    /// One upstream with keys of its own (`upstream_keys`: TOML lines for
    /// its `[[upstreams]]` table) after the `extra` sections.
    pub async fn one(name: &str, url: &str, upstream_keys: &str, extra: &str) -> TestGateway {
        let mut text = settings(extra);
        text.push_str(&format!(
            "[[upstreams]]\nname = \"{name}\"\nurl = \"{url}\"\n{upstream_keys}\n"
        ));
        Self::from_toml(&text).await
    }

    /// A whole config text; listen addresses are forced to port 0.
    pub async fn from_toml(text: &str) -> TestGateway {
        let overrides = Overrides {
            listen: Some("127.0.0.1:0".into()),
            admin_listen: Some("127.0.0.1:0".into()),
            ..Default::default()
        };
        let config = config::load_with(Some(text), &overrides)
            .unwrap_or_else(|e| panic!("test config is invalid:\n{e}\n---\n{text}"));
        let running = a2a_gateway::build(config)
            .start()
            .await
            .expect("gateway starts");
        TestGateway { running }
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// The JSON-RPC endpoint, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.running.addr())
    }

    pub fn admin_url(&self) -> String {
        format!("http://{}", self.running.admin_addr())
    }

    /// Shuts the gateway down as SIGTERM would; how long that took.
    /// Panics when it takes longer than `limit`.
    pub async fn shut_down_within(self, limit: std::time::Duration) -> std::time::Duration {
        let started = std::time::Instant::now();
        tokio::time::timeout(limit, self.running.shutdown())
            .await
            .unwrap_or_else(|_| panic!("the gateway did not shut down within {limit:?}"));
        started.elapsed()
    }
}

/// `extra`, with the settings every test gateway wants unless `extra` sets
/// them: a short drain, and card fetches at start-up that wait at most 1 s
/// (tests with a hanging upstream should not wait the production default).
fn settings(extra: &str) -> String {
    let mut text = String::new();
    if !extra.contains("[server]") {
        text.push_str("[server]\nshutdown_grace = \"2s\"\n");
    }
    if !extra.contains("[card_refresh]") {
        text.push_str("[card_refresh]\ntimeout = \"1s\"\n");
    }
    text.push_str(extra);
    text.push('\n');
    text
}
