//! The validated runtime form of the configuration, which the rest of the
//! gateway uses.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};

#[derive(Debug, Clone)]
pub struct Config {
    pub server: Server,
    /// `None`: plain HTTP (allowed on loopback, or with `server.plaintext`).
    pub tls: Option<crate::tls::TlsSettings>,
    pub push_guard: crate::push_guard::PushGuard,
    /// `None`: webhooks go to the agents (`[push_relay]` is off).
    pub push_relay: Option<crate::push_relay::settings::PushRelay>,
    /// `None`: no authentication (credentials pass through to the agents).
    pub auth: Option<crate::auth::config::Auth>,
    pub authz: crate::auth::config::Authz,
    pub rate_limits: crate::limits::rate::RateLimitSettings,
    pub concurrency: Concurrency,
    pub limits: Limits,
    pub routing: Routing,
    pub card: Card,
    pub card_refresh: CardRefresh,
    pub upstreams: Vec<Upstream>,
    pub log: Log,
    pub telemetry: Telemetry,
    pub console: crate::config::console::Console,
}

/// What the gateway says about itself in the card it publishes; skills,
/// modes and capabilities come from the upstreams.
#[derive(Debug, Clone)]
pub struct Card {
    pub name: String,
    pub description: String,
    pub version: String,
    pub provider: Option<Provider>,
    pub documentation_url: Option<String>,
    pub icon_url: Option<String>,
    /// `Cache-Control: max-age` of the published card.
    pub cache_max_age: Duration,
    /// Serve the authenticated extended card (off until authentication is
    /// configured: it may list more than the public card).
    pub extended_card: bool,
    /// `[card]` sets the identity (name, description, version, provider or
    /// links). When it does not and there is one upstream, the published
    /// card keeps that agent's identity.
    pub identity_configured: bool,
    /// The keys the published cards are signed with (`[card.signing]`).
    pub signing: Option<super::signing::Signing>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub organization: String,
    pub url: String,
}

/// How upstream cards are kept fresh.
#[derive(Debug, Clone)]
pub struct CardRefresh {
    pub interval: Duration,
    /// How long a card is used after its last successful fetch; past it the
    /// upstream's skills leave the published card.
    pub max_staleness: Duration,
    /// Bound on one fetch, and on how long start-up waits for the first round.
    pub timeout: Duration,
    pub ready_when: ReadyWhen,
}

/// When `/readyz` says ready, in terms of upstream cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyWhen {
    /// At least one upstream has a fresh card.
    Any,
    /// Every upstream has a fresh card.
    All,
}

/// Which of an upstream's skills are published, and under what id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillPolicy {
    /// Only these skill ids (by the upstream's own id); `None` means all.
    pub include: Option<Vec<String>>,
    /// Never these (by the upstream's own id).
    pub exclude: Vec<String>,
    /// upstream's id → published id.
    pub rename: std::collections::BTreeMap<String, String>,
}

/// The text matcher for clients that send no routing hint.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchSettings {
    pub enabled: bool,
    /// The best upstream's score must reach this (BM25 units).
    pub min_score: f64,
    /// ... and lead the runner-up upstream by this fraction (0.25 = 25 %).
    pub margin: f64,
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
    /// Plain HTTP on a non-loopback address was asked for explicitly.
    pub plaintext: bool,
    /// Peers whose `X-Forwarded-For` names the client (`crate::call::client_ip`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Every connection begins with a PROXY protocol header (v1 or v2)
    /// whose source address is the client's.
    pub proxy_protocol: bool,
    /// How often freed heap is looked at, and given back to the system when
    /// a burst left enough of it (`crate::memory_release`); `None`: never.
    pub release_memory_interval: Option<Duration>,
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

#[derive(Debug, Clone)]
pub struct Routing {
    pub default_upstream: Option<String>,
    /// Request header naming the skill a client wants.
    pub skill_header: http::HeaderName,
    /// Keys of `params.metadata` / `params.message.metadata` naming a skill.
    pub metadata_keys: Vec<String>,
    pub affinity_ttl: Duration,
    pub affinity_capacity: u64,
    /// Bound on asking upstreams who owns an unknown task.
    pub probe_timeout: Duration,
    pub matcher: MatchSettings,
}

/// Open SSE streams allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct Concurrency {
    pub max_streams: usize,
    pub max_streams_per_caller: usize,
}

/// How calls are spread over an upstream's replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    LeastOutstanding,
    RoundRobin,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Breaker {
    pub failures: u32,
    pub open_for: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    pub name: String,
    /// The first replica's JSON-RPC endpoint (http or https).
    pub url: Uri,
    /// Every replica's endpoint, `url` first.
    pub urls: Vec<Uri>,
    pub balance: Balance,
    pub breaker: Breaker,
    pub max_in_flight: usize,
    pub queue: usize,
    pub queue_timeout: Duration,
    pub connect_timeout: Duration,
    pub response_header_timeout: Duration,
    /// Speak HTTP/2 to this upstream: with prior knowledge (h2c) over
    /// `http://`, by ALPN over `https://` (which otherwise offers only
    /// HTTP/1.1).
    pub http2: bool,
    /// With `http2`: calls one connection carries at most before another
    /// opens (0: one connection per replica, no limit).
    pub http2_streams_per_connection: usize,
    /// Idle HTTP/1.1 connections kept per replica; more are closed as their
    /// answers end (0: a connection per call).
    pub max_idle_connections: usize,
    /// Extra request headers, values resolved (env/file) at load time and
    /// marked sensitive so they never show in logs.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Where its card is, when not at the well-known paths of its origin.
    pub card_url: Option<Uri>,
    pub skills: SkillPolicy,
    /// Pass the client's credentials (Authorization, API key) on to this
    /// agent. Off by default when the gateway authenticates callers.
    pub forward_credentials: bool,
    /// Send the verified caller's identity in this header.
    pub identity_header: Option<HeaderName>,
    /// How `https://` URLs (replicas and card) are verified, and the client
    /// certificate shown to the agent.
    pub tls: crate::tls::upstream::UpstreamTls,
    /// `protocol_versions`: the JSON-RPC versions the agent speaks, which
    /// then win over what its card says.
    pub protocol_versions: Option<Vec<crate::a2a::Version>>,
    /// `card_signature` and `card_trust`: whether the agent's card must be
    /// signed, and by whom.
    pub card_signature: super::card_trust::CardSignature,
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

/// `[telemetry]`, as the file says it; the standard `OTEL_*` variables
/// are read over it when the gateway starts (`crate::telemetry::trace`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// Export is on when an endpoint is set (here or in the environment).
    pub otlp_endpoint: Option<String>,
    pub otlp_protocol: Option<OtlpProtocol>,
    pub service_name: Option<String>,
    /// One of the names `OTEL_TRACES_SAMPLER` takes, with its argument.
    pub sampler: Option<(String, Option<f64>)>,
    /// SSE events recorded on a stream's span; the rest are counted.
    pub max_stream_events: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    Grpc,
    HttpProtobuf,
}

impl OtlpProtocol {
    /// The names `OTEL_EXPORTER_OTLP_PROTOCOL` takes.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "http/json" => {
                Err("\"http/json\" is not supported; use \"grpc\" or \"http/protobuf\"".into())
            }
            other => Err(format!(
                "must be \"grpc\" or \"http/protobuf\", not \"{other}\""
            )),
        }
    }
}

/// The sampler names `OTEL_TRACES_SAMPLER` takes; the ratio ones need an
/// argument in 0..=1.
pub const SAMPLERS: [&str; 6] = [
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
];

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
