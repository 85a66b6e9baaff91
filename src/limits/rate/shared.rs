//! A call decided with the shared store: units from this replica's leases
//! first, then one round trip for the limits that have none left
//! (`store::lease`). A call refused, or met by the fallback, gives back
//! the lease units it took: a refused call is charged nothing.

use std::num::NonZeroU32;
use std::sync::Arc;

use super::refusal;
use super::store::lease::{self, Leases, Take};
use super::store::{Ask, Decision, Store, Unanswered};
use super::Refusal;

/// Why the shared limits did not let a call through.
#[derive(Debug)]
pub enum Denied {
    /// A limit has no unit left.
    Refused(Refusal),
    /// The store gave no decision: the fallback decides.
    Unanswered(Unanswered),
}

#[derive(Debug)]
pub struct Shared {
    pub store: Arc<Store>,
    leases: Leases,
    replicas: NonZeroU32,
}

impl Shared {
    /// `capacity` bounds the keys leased at once.
    pub fn new(store: Arc<Store>, capacity: u64) -> Self {
        let replicas = store.settings().expected_replicas;
        Shared {
            store,
            leases: Leases::new(capacity),
            replicas,
        }
    }

    /// One unit of every limit in `asks` (in checking order), or the first
    /// refusal, or no decision.
    pub async fn decide(&self, asks: Vec<Ask>) -> Result<(), Denied> {
        let mut have = Vec::new();
        let mut need = Vec::with_capacity(asks.len());
        for mut ask in asks {
            ask.want = match self.leases.take(&ask.key) {
                Take::Taken => {
                    have.push(ask.key);
                    continue;
                }
                Take::Busy => lease::size(&ask.spec, self.replicas),
                Take::Idle => 1,
            };
            need.push(ask);
        }
        if need.is_empty() {
            self.count("lease", true);
            return Ok(());
        }
        let decided = self.store.decide(&need).await;
        if !matches!(decided, Ok(Decision::Allowed(_))) {
            for key in &have {
                self.leases.give_back(key);
            }
        }
        match decided {
            Ok(Decision::Allowed(grants)) => {
                for (ask, granted) in need.into_iter().zip(grants) {
                    self.leases.put(ask.key, granted.saturating_sub(1));
                }
                self.count("store", true);
                Ok(())
            }
            Ok(Decision::Refused { index, wait }) => {
                self.count("store", false);
                let ask = &need[index];
                Err(Denied::Refused(refusal(ask.label, &ask.spec, wait)))
            }
            Err(why) => Err(Denied::Unanswered(why)),
        }
    }

    /// `rate_limit_decisions_total{source, result}`.
    pub fn count(&self, source: &str, allowed: bool) {
        let result = if allowed { "allowed" } else { "refused" };
        (self.store.metrics().decisions)
            .with_label_values(&[source, result])
            .inc();
    }
}
