//! Configuration: the TOML file (`file`), the command-line overrides
//! (`overrides`), and the validated runtime form below, which the rest of the
//! gateway uses. Loading reports every problem at once (`load`).

mod file;
mod load;
mod overrides;

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};

pub use load::{load_file, load_str, load_with};
pub use overrides::Overrides;

#[derive(Debug, Clone)]
pub struct Config {
    pub server: Server,
    pub limits: Limits,
    pub routing: Routing,
    pub upstreams: Vec<Upstream>,
    pub log: Log,
}

#[derive(Debug, Clone)]
pub struct Server {
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// Where clients reach the gateway; `None` means "from the request's
    /// Host header", which is right for a sidecar and for local use.
    pub public_url: Option<PublicUrl>,
    pub shutdown_grace: Duration,
    pub http2_max_concurrent_streams: u32,
}

/// The gateway's public address, split so the JSON-RPC path can be served
/// and every URL in a card can be built from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `scheme://authority`, no trailing slash.
    pub origin: String,
    /// The JSON-RPC endpoint path: `/` or e.g. `/a2a` (no trailing slash).
    pub path: String,
}

impl PublicUrl {
    /// The JSON-RPC endpoint clients post to.
    pub fn endpoint(&self) -> String {
        match self.path.as_str() {
            "/" => format!("{}/", self.origin),
            p => format!("{}{}", self.origin, p),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_header_bytes: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub sse_idle_timeout: Duration,
    pub max_sse_event_bytes: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Routing {
    pub default_upstream: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    /// The upstream's JSON-RPC endpoint (http only).
    pub url: Uri,
    pub connect_timeout: Duration,
    pub response_header_timeout: Duration,
    /// Speak HTTP/2 with prior knowledge (h2c) to this upstream.
    pub http2: bool,
    /// Extra request headers, values resolved (env/file) at load time and
    /// marked sensitive so they never show in logs.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct Log {
    pub format: LogFormat,
    pub level: String,
}

/// One problem in a configuration, with the TOML path it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

/// Every problem found, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match e.path.as_str() {
                "" => write!(f, "{}", e.message)?,
                p => write!(f, "{p}: {}", e.message)?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
