//! The TOML file as written by an operator. Every section refuses unknown
//! keys so a typo is an error, not a silently ignored setting. Defaults live
//! here and are mirrored, with comments, in config/gateway.toml.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    pub listen: String,
    pub admin_listen: String,
    pub public_url: Option<String>,
    pub shutdown_grace: String,
    pub http2_max_concurrent_streams: u32,
    pub plaintext: bool,
    pub trusted_proxies: Vec<String>,
    pub proxy_protocol: bool,
    pub release_memory_interval: String,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            admin_listen: "127.0.0.1:9090".into(),
            public_url: None,
            shutdown_grace: "30s".into(),
            http2_max_concurrent_streams: 256,
            plaintext: false,
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
            release_memory_interval: "10s".into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    pub max_body_bytes: u64,
    pub max_header_bytes: u64,
    pub header_read_timeout: String,
    pub body_read_timeout: String,
    pub sse_idle_timeout: String,
    pub max_sse_event_bytes: u64,
}

impl Default for LimitsSection {
    fn default() -> Self {
        Self {
            max_body_bytes: 10 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            header_read_timeout: "10s".into(),
            body_read_timeout: "30s".into(),
            sse_idle_timeout: "5m".into(),
            max_sse_event_bytes: 10 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSection {
    pub default_upstream: Option<String>,
    pub skill_header: String,
    pub metadata_keys: Vec<String>,
    pub affinity_ttl: String,
    pub affinity_capacity: u64,
    pub probe_timeout: String,
    #[serde(rename = "match")]
    pub matcher: MatchSection,
}

impl Default for RoutingSection {
    fn default() -> Self {
        Self {
            default_upstream: None,
            skill_header: "A2A-Skill".into(),
            metadata_keys: vec!["skillId".into()],
            affinity_ttl: "24h".into(),
            affinity_capacity: 100_000,
            probe_timeout: "2s".into(),
            matcher: MatchSection::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchSection {
    pub enabled: bool,
    pub min_score: f64,
    pub margin: f64,
}

impl Default for MatchSection {
    fn default() -> Self {
        Self {
            enabled: true,
            min_score: 1.0,
            margin: 0.25,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CardSection {
    pub name: String,
    pub description: String,
    pub version: String,
    pub provider: Option<ProviderSection>,
    pub documentation_url: Option<String>,
    pub icon_url: Option<String>,
    pub cache_max_age: String,
    pub extended_card: bool,
    /// `[card.signing]`: sign every published card (off without it).
    pub signing: Option<super::signing::SigningSection>,
}

impl Default for CardSection {
    fn default() -> Self {
        Self {
            name: "A2A Gateway".into(),
            description: "One address for a fleet of A2A agents.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: None,
            documentation_url: None,
            icon_url: None,
            cache_max_age: "60s".into(),
            extended_card: false,
            signing: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    pub organization: String,
    pub url: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CardRefreshSection {
    pub interval: String,
    pub max_staleness: String,
    pub timeout: String,
    pub ready_when: String,
}

impl Default for CardRefreshSection {
    fn default() -> Self {
        Self {
            interval: "30s".into(),
            max_staleness: "10m".into(),
            timeout: "5s".into(),
            ready_when: "any".into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    pub format: String,
    pub level: String,
}

impl Default for LogSection {
    fn default() -> Self {
        Self {
            format: "text".into(),
            level: "info".into(),
        }
    }
}

/// `[telemetry]`: trace export. The standard `OTEL_*` variables win over
/// each of these (`crate::telemetry::trace::settings`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySection {
    pub otlp_endpoint: Option<String>,
    pub otlp_protocol: Option<String>,
    pub service_name: Option<String>,
    pub sampler: Option<String>,
    pub sampler_arg: Option<f64>,
    pub max_stream_events: u32,
}

impl Default for TelemetrySection {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            otlp_protocol: None,
            service_name: None,
            sampler: None,
            sampler_arg: None,
            max_stream_events: 32,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSection {
    pub name: String,
    /// One replica's URL, or
    #[serde(default)]
    pub url: Option<String>,
    /// several replicas of the same agent, balanced.
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default = "default_balance")]
    pub balance: String,
    #[serde(default)]
    pub breaker: BreakerSection,
    /// Calls in flight to this upstream at once (all replicas).
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: u32,
    /// Calls that may wait for a slot, and for how long, before 503.
    #[serde(default = "default_queue")]
    pub queue: u32,
    #[serde(default = "default_queue_timeout")]
    pub queue_timeout: String,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: String,
    #[serde(default = "default_response_header_timeout")]
    pub response_header_timeout: String,
    #[serde(default)]
    pub http2: bool,
    /// With http2: calls carried by one connection at most; past that a
    /// new connection opens (0: one connection, no limit).
    #[serde(default = "default_http2_streams_per_connection")]
    pub http2_streams_per_connection: u32,
    /// Idle HTTP/1.1 connections kept open per replica for reuse
    /// (default: `max_in_flight`).
    #[serde(default)]
    pub max_idle_connections: Option<u32>,
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderSource>,
    #[serde(default)]
    pub card_url: Option<String>,
    #[serde(default)]
    pub skills: SkillsSection,
    #[serde(default)]
    pub forward_credentials: bool,
    #[serde(default)]
    pub identity_header: Option<String>,
    /// TLS to this agent's `https://` URLs.
    #[serde(default)]
    pub tls: Option<crate::tls::upstream::UpstreamTlsSection>,
    /// The A2A versions the agent speaks over JSON-RPC ("0.1", "0.3",
    /// "1.0"), when its card does not say or says wrong.
    #[serde(default)]
    pub protocol_versions: Option<Vec<String>>,
    /// "off" (default), "verify" or "required": what is done with the
    /// signature on the agent's own card.
    #[serde(default)]
    pub card_signature: Option<String>,
    /// The keys trusted to sign the agent's card.
    #[serde(default)]
    pub card_trust: Option<super::card_trust::CardTrustSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsSection {
    pub include: Option<Vec<String>>,
    pub exclude: Vec<String>,
    pub rename: BTreeMap<String, String>,
}

fn default_balance() -> String {
    "least_outstanding".into()
}

fn default_max_in_flight() -> u32 {
    1024
}

fn default_queue() -> u32 {
    64
}

fn default_queue_timeout() -> String {
    "1s".into()
}

/// Ejecting a replica that fails consistently.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerSection {
    /// Consecutive failures (refused, reset, timed out, 5xx) that open it.
    pub failures: u32,
    /// How long it stays open before one probe call is let through.
    pub open_for: String,
}

impl Default for BreakerSection {
    fn default() -> Self {
        Self {
            failures: 5,
            open_for: "10s".into(),
        }
    }
}

/// `[concurrency]`: open SSE streams.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConcurrencySection {
    pub max_streams: u32,
    pub max_streams_per_caller: u32,
}

impl Default for ConcurrencySection {
    fn default() -> Self {
        Self {
            max_streams: 10_000,
            max_streams_per_caller: 100,
        }
    }
}

fn default_http2_streams_per_connection() -> u32 {
    100
}

fn default_connect_timeout() -> String {
    "5s".into()
}

// Blocking `message/send` calls to LLM agents can take minutes; this bounds
// the wait for the response headers only, not a stream's life.
fn default_response_header_timeout() -> String {
    "120s".into()
}

/// Where an extra upstream header's value comes from. Secrets belong in the
/// environment or a mounted file, not in the TOML.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum HeaderSource {
    Value(String),
    Env(EnvSource),
    File(FileSource),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSource {
    pub env: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSource {
    pub file: String,
}
