//! Leases: units a replica took from the shared store ahead of use and
//! spends locally, so that a busy limit costs a round trip per lease rather
//! than per call (bench/store.sh: one round trip a call cost 1.31× the
//! gateway's CPU of an in-memory limit at 1,000 calls/s).
//!
//! A key is asked for a lease only while it is busy: a key whose last lease
//! was granted within [`LEASE_TTL`] asks for [`size`] units, any other key
//! for one, so a caller that calls now and then is decided exactly, one
//! round trip a call. A lease lasts [`LEASE_TTL`]; units left then are lost
//! (the limit was only stricter).
//!
//! Worst case: every replica holds a full lease it has not spent while the
//! store's bucket refills, so the fleet can admit up to `replicas × (size -
//! 1)` units above the limit in a window. `size` is at most a tenth of each
//! expected replica's share of the burst, so that is at most a tenth of the
//! burst while `expected_replicas` is right (docs/rate-limit-store.md).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;

use super::super::QuotaSpec;

/// How long a lease lasts, and how long a key counts as busy.
pub const LEASE_TTL: Duration = Duration::from_secs(1);

/// The most units one lease holds.
pub const MAX_LEASE: u32 = 100;

/// The units a busy key asks for: a tenth of each replica's share of the
/// burst, at least 1, at most [`MAX_LEASE`].
pub fn size(spec: &QuotaSpec, replicas: NonZeroU32) -> u32 {
    let share = spec.burst.get() / replicas.get().saturating_mul(10);
    share.clamp(1, MAX_LEASE)
}

/// What a key's lease gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// One unit, spent here.
    Taken,
    /// None left, but the key is busy: ask for a lease.
    Busy,
    /// No lease: ask for one unit.
    Idle,
}

/// This replica's leases, by key; bounded, each expiring after
/// [`LEASE_TTL`].
#[derive(Debug)]
pub struct Leases {
    leases: Cache<String, Arc<AtomicU32>>,
}

impl Leases {
    pub fn new(capacity: u64) -> Self {
        Leases {
            leases: Cache::builder()
                .max_capacity(capacity.max(1))
                .time_to_live(LEASE_TTL)
                .build(),
        }
    }

    /// One unit of `key`'s lease, when one is left.
    pub fn take(&self, key: &str) -> Take {
        let Some(left) = self.leases.get(key) else {
            return Take::Idle;
        };
        match left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)) {
            Ok(_) => Take::Taken,
            Err(_) => Take::Busy,
        }
    }

    /// Returns a unit taken by a call that was then refused (it is charged
    /// nothing). A lease that expired meanwhile keeps nothing.
    pub fn give_back(&self, key: &str) {
        if let Some(left) = self.leases.get(key) {
            left.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A new lease of `left` units for `key` (0: none left, but busy).
    pub fn put(&self, key: String, left: u32) {
        self.leases.insert(key, Arc::new(AtomicU32::new(left)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(burst: u32) -> QuotaSpec {
        QuotaSpec {
            period: super::super::super::Period::Second,
            amount: NonZeroU32::new(burst).unwrap(),
            burst: NonZeroU32::new(burst).unwrap(),
        }
    }

    #[test]
    fn a_lease_is_a_tenth_of_each_replicas_share_of_the_burst() {
        let one = NonZeroU32::MIN;
        let three = NonZeroU32::new(3).unwrap();
        assert_eq!(size(&spec(10), one), 1);
        assert_eq!(size(&spec(60), three), 2);
        assert_eq!(size(&spec(600), one), 60);
        assert_eq!(size(&spec(1_000_000), three), MAX_LEASE);
        assert_eq!(size(&spec(5), three), 1);
    }

    #[test]
    fn units_are_taken_given_back_and_expire() {
        let leases = Leases::new(10);
        assert_eq!(leases.take("k"), Take::Idle);
        leases.put("k".into(), 2);
        assert_eq!(leases.take("k"), Take::Taken);
        assert_eq!(leases.take("k"), Take::Taken);
        assert_eq!(leases.take("k"), Take::Busy);
        leases.give_back("k");
        assert_eq!(leases.take("k"), Take::Taken);
        leases.give_back("other");
        assert_eq!(leases.take("other"), Take::Idle);
        leases.put("k".into(), 5);
        std::thread::sleep(LEASE_TTL + Duration::from_millis(50));
        assert_eq!(leases.take("k"), Take::Idle);
    }
}
