//! `[rate_limits]`: the sections as written, their checks, and the validated
//! quotas the live limiters (`super::RateLimits`) are built from.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use governor::Quota;
use serde::Deserialize;

use crate::cidr::{problem, Problems};

/// Default bound on the callers tracked at once.
pub const DEFAULT_MAX_TRACKED_CALLERS: u64 = 100_000;

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
    /// A store the gateway's replicas share (`super::store`); without
    /// one, the limits are each replica's own.
    pub store: Option<super::store::StoreSection>,
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

/// The period a quota's amount is replenished over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Second,
    Minute,
}

impl Period {
    /// The window in seconds (the `w` parameter of `RateLimit-Policy`).
    pub fn seconds(self) -> u64 {
        match self {
            Period::Second => 1,
            Period::Minute => 60,
        }
    }
}

/// A validated quota: `amount` per `period`, at most `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaSpec {
    pub period: Period,
    pub amount: NonZeroU32,
    pub burst: NonZeroU32,
}

impl QuotaSpec {
    /// The governor quota: `amount` cells per period, replenished evenly,
    /// with room for `burst`.
    pub fn quota(&self) -> Quota {
        let base = match self.period {
            Period::Second => Quota::per_second(self.amount),
            Period::Minute => Quota::per_minute(self.amount),
        };
        base.allow_burst(self.burst)
    }

    /// Microseconds between two units (the period over the amount), as
    /// the shared store's script takes it.
    pub fn interval_us(&self) -> u64 {
        self.period.seconds() * 1_000_000 / u64::from(self.amount.get())
    }

    /// `RateLimit-Policy` value: `"<label>";q=<amount>;w=<window seconds>`.
    pub fn policy(&self, label: &str) -> String {
        format!("\"{label}\";q={};w={}", self.amount, self.period.seconds())
    }
}

/// Validated `[rate_limits]` (plain data; the live limiters are built
/// from it by `RateLimits::new`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSettings {
    pub global: Option<QuotaSpec>,
    pub per_caller: Option<QuotaSpec>,
    pub upstreams: BTreeMap<String, QuotaSpec>,
    pub skills: BTreeMap<String, QuotaSpec>,
    pub max_tracked_callers: u64,
    pub store: Option<super::store::StoreSettings>,
}

impl Default for RateLimitSettings {
    fn default() -> Self {
        RateLimitSettings {
            global: None,
            per_caller: None,
            upstreams: BTreeMap::new(),
            skills: BTreeMap::new(),
            max_tracked_callers: DEFAULT_MAX_TRACKED_CALLERS,
            store: None,
        }
    }
}

impl RateLimitSettings {
    /// Whether any limit is configured.
    pub fn is_empty(&self) -> bool {
        self.global.is_none()
            && self.per_caller.is_none()
            && self.upstreams.is_empty()
            && self.skills.is_empty()
    }

    /// Every quota divided among `replicas` (rounded up, at least 1): one
    /// replica's share while the shared store cannot answer.
    pub fn shared_by(&self, replicas: NonZeroU32) -> RateLimitSettings {
        let share = |q: &QuotaSpec| QuotaSpec {
            period: q.period,
            amount: q
                .amount
                .get()
                .div_ceil(replicas.get())
                .try_into()
                .unwrap_or(NonZeroU32::MIN),
            burst: q
                .burst
                .get()
                .div_ceil(replicas.get())
                .try_into()
                .unwrap_or(NonZeroU32::MIN),
        };
        let each = |m: &BTreeMap<String, QuotaSpec>| {
            m.iter().map(|(k, q)| (k.clone(), share(q))).collect()
        };
        RateLimitSettings {
            global: self.global.as_ref().map(share),
            per_caller: self.per_caller.as_ref().map(share),
            upstreams: each(&self.upstreams),
            skills: each(&self.skills),
            max_tracked_callers: self.max_tracked_callers,
            store: None,
        }
    }
}

/// Validates `[rate_limits]`: `(field, message)` for every problem.
pub fn settings(
    section: &RateLimitsSection,
    upstreams: &[String],
) -> Result<RateLimitSettings, Problems> {
    let mut problems = Vec::new();
    let global = section
        .global
        .as_ref()
        .and_then(|q| quota("global", q, &mut problems));
    let per_caller = section
        .per_caller
        .as_ref()
        .and_then(|q| quota("per_caller", q, &mut problems));
    let limited = upstream_quotas(section, upstreams, &mut problems);
    let mut skills = BTreeMap::new();
    for (id, q) in &section.skills {
        let path = format!("skills.{id}");
        if id.trim().is_empty() {
            problems.push(problem(&path, "a skill id must not be empty"));
        }
        if let Some(spec) = quota(&path, q, &mut problems) {
            skills.insert(id.clone(), spec);
        }
    }
    let max_tracked_callers = match section.max_tracked_callers {
        None => DEFAULT_MAX_TRACKED_CALLERS,
        Some(0) => {
            problems.push(problem("max_tracked_callers", "must be greater than 0"));
            DEFAULT_MAX_TRACKED_CALLERS
        }
        Some(n) => n,
    };
    let store = section
        .store
        .as_ref()
        .and_then(|s| super::store::settings(s, &mut problems));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(RateLimitSettings {
        global,
        per_caller,
        upstreams: limited,
        skills,
        max_tracked_callers,
        store,
    })
}

/// `[rate_limits.upstreams.NAME]`: each must name a configured upstream.
fn upstream_quotas(
    section: &RateLimitsSection,
    upstreams: &[String],
    problems: &mut Problems,
) -> BTreeMap<String, QuotaSpec> {
    let mut limited = BTreeMap::new();
    for (name, q) in &section.upstreams {
        let path = format!("upstreams.{name}");
        if !upstreams.contains(name) {
            let known = if upstreams.is_empty() {
                "none".to_string()
            } else {
                upstreams.join(", ")
            };
            problems.push(problem(
                &path,
                format!("names no configured upstream (configured: {known})"),
            ));
        }
        if let Some(spec) = quota(&path, q, problems) {
            limited.insert(name.clone(), spec);
        }
    }
    limited
}

/// One quota table at `path`; `None` (with problems pushed) when invalid.
fn quota(path: &str, q: &QuotaSection, problems: &mut Problems) -> Option<QuotaSpec> {
    let before = problems.len();
    let mut positive = |field: &str, value: Option<u32>| match value {
        Some(0) => {
            problems.push(problem(format!("{path}.{field}"), "must be greater than 0"));
            None
        }
        other => other.and_then(NonZeroU32::new),
    };
    let per_second = positive("per_second", q.per_second);
    let per_minute = positive("per_minute", q.per_minute);
    let burst = positive("burst", q.burst);
    let period = match (q.per_second, q.per_minute) {
        (Some(_), Some(_)) => {
            problems.push(problem(
                path,
                "set exactly one of per_second and per_minute, not both",
            ));
            None
        }
        (None, None) => {
            problems.push(problem(path, "set one of per_second or per_minute"));
            None
        }
        _ => per_second
            .map(|n| (Period::Second, n))
            .or(per_minute.map(|n| (Period::Minute, n))),
    };
    if problems.len() > before {
        return None;
    }
    let (period, amount) = period?;
    Some(QuotaSpec {
        period,
        amount,
        burst: burst.unwrap_or(amount),
    })
}
