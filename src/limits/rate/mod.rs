//! Rate limits: global, per upstream, per skill and per caller, each a GCRA
//! (as governor computes it). Without `[rate_limits.store]` every replica
//! keeps its own in memory (`local`). With a store, the replicas share
//! them: one round trip per call decides every limit at once (`store`),
//! and while the store cannot answer, `on_store_error` decides: each
//! replica's share in memory, no limit, or 503.
//!
//! Either way a refused call is charged nothing, and a refusal carries the
//! IETF `RateLimit-Policy` / `RateLimit` header values
//! (draft-ietf-httpapi-ratelimit-headers, structured fields), named after
//! the limit's bounded label: `"caller";q=10;w=1` and `"caller";r=0;t=1`.

use std::sync::Arc;
use std::time::Duration;

use crate::http::error::GatewayError;

mod local;
mod settings;
mod shared;
pub mod store;

pub use local::{LocalLimits, CALLER_IDLE};
pub use settings::*;
use shared::{Denied, Shared};
use store::{Ask, OnStoreError, Store};

/// Why a call was refused (defined beside the error it becomes).
pub use crate::http::error::RateRefusal as Refusal;

/// `RateLimit` value for an exhausted limit: `"<label>";r=0;t=<seconds>`,
/// the seconds rounded up and at least 1.
pub fn exhausted_state(label: &str, retry_after: Duration) -> String {
    format!("\"{label}\";r=0;t={}", whole_seconds(retry_after))
}

/// Seconds rounded up, at least 1 (the `Retry-After` value).
fn whole_seconds(d: Duration) -> u64 {
    let up = d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0));
    up.max(1)
}

/// The refusal by the limit `label` with quota `spec`, `retry_after` away.
fn refusal(label: &'static str, spec: &QuotaSpec, retry_after: Duration) -> Refusal {
    Refusal {
        limit: label,
        retry_after,
        policy: spec.policy(label),
        state: exhausted_state(label, retry_after),
    }
}

/// The live limits of one configuration.
#[derive(Debug)]
pub struct RateLimits {
    settings: RateLimitSettings,
    /// Alone: the limits. With a store: this replica's share, for
    /// `on_store_error = "local"`.
    local: LocalLimits,
    shared: Option<Shared>,
}

impl RateLimits {
    /// In-memory limits only (a store in the settings is not used).
    pub fn new(settings: &RateLimitSettings) -> Self {
        RateLimits {
            settings: settings.clone(),
            local: LocalLimits::new(settings),
            shared: None,
        }
    }

    /// The limits of `settings`, sharing `previous`'s store connection
    /// when the store's settings did not change (a reload keeps it).
    pub fn with_store(
        settings: &RateLimitSettings,
        meters: &store::Meters,
        previous: Option<&RateLimits>,
    ) -> Result<Self, String> {
        let Some(store_settings) = &settings.store else {
            return Ok(Self::new(settings));
        };
        let kept = previous
            .and_then(|p| p.store())
            .filter(|s| s.settings() == store_settings)
            .cloned();
        let store = match kept {
            Some(s) => s,
            None => Store::new(store_settings, meters.clone())?,
        };
        // A lease for every caller tracked and every shared limit: each
        // upstream's, each skill's, and the global one (with one to spare).
        let limits = 2 + settings.upstreams.len() as u64 + settings.skills.len() as u64;
        let leases = settings.max_tracked_callers + limits;
        Ok(RateLimits {
            settings: settings.clone(),
            local: LocalLimits::new(&settings.shared_by(store_settings.expected_replicas)),
            shared: Some(Shared::new(store, leases)),
        })
    }

    /// The shared store, when there is one.
    pub fn store(&self) -> Option<&Arc<Store>> {
        self.shared.as_ref().map(|s| &s.store)
    }

    /// Whether any rate limit applies at all (else `check` always passes).
    pub fn is_configured(&self) -> bool {
        !self.settings.is_empty()
    }

    /// Takes one unit from every limit that applies, or refuses with the
    /// first exhausted one (and takes nothing).
    pub async fn check(
        &self,
        caller: &str,
        upstream: &str,
        skill: Option<&str>,
    ) -> Result<(), GatewayError> {
        let Some(shared) = &self.shared else {
            return (self.local.check(caller, upstream, skill)).map_err(GatewayError::RateLimited);
        };
        let asks = self.asks(shared.store.settings(), caller, upstream, skill);
        if asks.is_empty() {
            return Ok(());
        }
        let why = match shared.decide(asks).await {
            Ok(()) => return Ok(()),
            Err(Denied::Refused(refusal)) => return Err(GatewayError::RateLimited(refusal)),
            Err(Denied::Unanswered(why)) => why,
        };
        // A store not yet connected (a reload that changed it) has not
        // failed: each replica's share decides meanwhile, in every mode.
        let mode = match shared.store.state() {
            store::State::Connecting => OnStoreError::Local,
            _ => shared.store.settings().on_store_error,
        };
        let outcome = match mode {
            OnStoreError::Local => {
                (self.local.check(caller, upstream, skill)).map_err(GatewayError::RateLimited)
            }
            OnStoreError::Allow => Ok(()),
            OnStoreError::Deny => Err(GatewayError::RateStoreUnavailable {
                detail: why.0,
                retry_after: store::PROBE_INTERVAL,
            }),
        };
        shared.count(mode.label(), outcome.is_ok());
        outcome
    }

    /// The limits that apply to a call, in checking order (global,
    /// upstream, skill, caller), with their keys in the store.
    fn asks(
        &self,
        store: &store::StoreSettings,
        caller: &str,
        upstream: &str,
        skill: Option<&str>,
    ) -> Vec<Ask> {
        let s = &self.settings;
        let limits = [
            s.global.as_ref().map(|q| ("global", q, String::new())),
            s.upstreams
                .get(upstream)
                .map(|q| ("upstream", q, format!(":{upstream}"))),
            skill.and_then(|id| s.skills.get(id).map(|q| ("skill", q, format!(":{id}")))),
            s.per_caller
                .as_ref()
                .map(|q| ("caller", q, format!(":{caller}"))),
        ];
        limits
            .into_iter()
            .flatten()
            .map(|(label, spec, name)| Ask {
                label,
                spec: *spec,
                key: format!("{{{}}}:rl:{label}{name}", store.key_prefix),
                want: 1,
            })
            .collect()
    }

    /// Callers tracked in memory (for tests and metrics).
    pub fn tracked_callers(&self) -> u64 {
        self.local.tracked_callers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> RateLimitSettings {
        let section: RateLimitsSection = toml::from_str(text).unwrap();
        super::settings(&section, &["a".to_string()]).unwrap()
    }

    #[test]
    fn each_replica_keeps_its_share_rounded_up() {
        let s = settings(
            "global = { per_minute = 10 }\nper_caller = { per_second = 1, burst = 3 }\nupstreams.a = { per_second = 7 }\n",
        );
        let half = s.shared_by(std::num::NonZeroU32::new(2).unwrap());
        let global = half.global.unwrap();
        assert_eq!((global.amount.get(), global.burst.get()), (5, 5));
        let caller = half.per_caller.unwrap();
        assert_eq!((caller.amount.get(), caller.burst.get()), (1, 2));
        assert_eq!(half.upstreams["a"].amount.get(), 4);
        assert!(half.store.is_none());
    }

    #[test]
    fn asks_name_every_applicable_limit_in_order_under_the_hash_tag() {
        let s = settings(
            "global = { per_minute = 60 }\nper_caller = { per_second = 4 }\nupstreams.a = { per_second = 2 }\nskills.s = { per_minute = 1 }\n[store]\nurl = \"redis://127.0.0.1:1\"\nkey_prefix = \"eu\"\n",
        );
        let limits = RateLimits::new(&s);
        let store = s.store.as_ref().unwrap();
        let asks = limits.asks(store, "id:alice", "a", Some("s"));
        let keys: Vec<&str> = asks.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "{eu}:rl:global",
                "{eu}:rl:upstream:a",
                "{eu}:rl:skill:s",
                "{eu}:rl:caller:id:alice"
            ]
        );
        let intervals: Vec<u64> = asks.iter().map(|a| a.spec.interval_us()).collect();
        assert_eq!(intervals, [1_000_000, 500_000, 60_000_000, 250_000]);
        // An upstream and a skill without limits add nothing.
        assert_eq!(limits.asks(store, "ip:1", "b", Some("t")).len(), 2);
    }

    #[tokio::test]
    async fn without_a_store_the_limits_are_in_memory() {
        let limits = RateLimits::new(&settings("per_caller = { per_minute = 1 }"));
        assert!(limits.store().is_none());
        limits.check("ip:1", "a", None).await.unwrap();
        let refused = limits.check("ip:1", "a", None).await.unwrap_err();
        assert!(matches!(refused, GatewayError::RateLimited(r) if r.limit == "caller"));
    }
}
