//! Rate limits with governor. (Being written: see the signatures.)

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// `[rate_limits]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitsSection {
    /// All traffic through the gateway.
    pub global: Option<QuotaSection>,
    /// Each caller on its own: the verified identity, or the client IP for
    /// anonymous callers.
    pub per_caller: Option<QuotaSection>,
    /// All callers of one upstream, by upstream name.
    pub upstreams: BTreeMap<String, QuotaSection>,
    /// All callers of one published skill, by skill id.
    pub skills: BTreeMap<String, QuotaSection>,
    /// Bound on the callers tracked at once (memory stays bounded under a
    /// flood of distinct callers; the least recently seen are forgotten).
    pub max_tracked_callers: Option<u64>,
}

/// A quota: exactly one of per_second / per_minute, and an optional burst
/// (default: the per-period amount).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaSection {
    #[serde(default)]
    pub per_second: Option<u32>,
    #[serde(default)]
    pub per_minute: Option<u32>,
    #[serde(default)]
    pub burst: Option<u32>,
}

/// Why a call was refused: which limit, when to retry, and the IETF
/// `RateLimit-Policy` / `RateLimit` header values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A bounded label: "global", "caller", "upstream", "skill".
    pub limit: &'static str,
    pub retry_after: Duration,
    pub policy: String,
    pub state: String,
}

/// Validated `[rate_limits]` (plain data; the live limiters are built
/// from it by `RateLimits::new`).
#[derive(Debug, Clone, Default)]
pub struct RateLimitSettings {}

/// Validates `[rate_limits]`: `(field, message)` for every problem.
pub fn settings(
    section: &RateLimitsSection,
    upstreams: &[String],
) -> Result<RateLimitSettings, Vec<(String, String)>> {
    let _ = (section, upstreams);
    Ok(RateLimitSettings::default())
}

/// The live limiters.
#[derive(Debug, Default)]
pub struct RateLimits {}

impl RateLimits {
    pub fn new(settings: &RateLimitSettings) -> Self {
        let _ = settings;
        Self {}
    }

    /// Takes one unit from every limit that applies; refuses with the first
    /// exhausted one (and then takes nothing).
    pub fn check(&self, caller: &str, upstream: &str, skill: Option<&str>) -> Result<(), Refusal> {
        let _ = (caller, upstream, skill);
        Ok(())
    }

    /// Callers currently tracked (for tests and metrics).
    pub fn tracked_callers(&self) -> u64 {
        0
    }
}
