//! A bounded map of recently learned ids (task and conversation owners,
//! task start times): least recently used goes first, and an entry older
//! than its time to live reads as absent.
//!
//! Why not moka, which the gateway uses for its other caches: every id these
//! maps learn is new, so once full they evict on every insert. moka's
//! concurrent table pays for removals with periodic rehashes of a whole
//! segment, on whichever request thread inserts next: about one insert in a
//! thousand waited 0.6–1 ms, which made the fleet's p99 (bench/profile.md).
//! Here an eviction is an O(1) unlink from a list under one shard's lock,
//! and nothing is left to do later.

use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use foldhash::fast::RandomState;
use lru::LruCache;

/// Maps at least this large are split into `SHARDS` locks, so the workers
/// rarely wait for each other. Smaller ones keep one exact LRU order.
const SHARDED_FROM: u64 = 16 * 1024;
const SHARDS: usize = 16;

type Shard<V> = LruCache<Box<str>, (V, Instant), RandomState>;

pub struct Recent<V> {
    shards: Box<[Mutex<Shard<V>>]>,
    /// Picks the shard; each shard's table hashes with its own seed.
    pick: RandomState,
    per_shard: usize,
    ttl: Duration,
}

impl<V: Clone> Recent<V> {
    /// Holds at most `capacity` entries (at least one), each for `ttl`
    /// after it was last inserted. Nothing is allocated up front.
    pub fn new(capacity: u64, ttl: Duration) -> Self {
        let shards = if capacity >= SHARDED_FROM { SHARDS } else { 1 };
        let per_shard =
            usize::try_from(capacity.max(1).div_ceil(shards as u64)).unwrap_or(usize::MAX);
        Self {
            shards: (0..shards)
                .map(|_| Mutex::new(LruCache::unbounded_with_hasher(RandomState::default())))
                .collect(),
            pick: RandomState::default(),
            per_shard,
            ttl,
        }
    }

    /// The live value for `key`, which becomes the most recently used.
    pub fn get(&self, key: &str) -> Option<V> {
        let mut shard = self.shard(key);
        let (value, at) = shard.get(key)?;
        if self.expired(*at) {
            shard.pop(key);
            return None;
        }
        Some(value.clone())
    }

    /// Sets `key` to `value`, which starts its time to live afresh.
    pub fn insert(&self, key: &str, value: V) {
        self.insert_unless(key, value, |_| false);
    }

    /// Sets `key` to `value` unless a live entry passes `keep`; a kept entry
    /// becomes the most recently used, and its age goes on.
    pub fn insert_unless(&self, key: &str, value: V, keep: impl FnOnce(&V) -> bool) {
        let mut shard = self.shard(key);
        let now = Instant::now();
        if let Some(slot) = shard.get_mut(key) {
            if !self.expired(slot.1) && keep(&slot.0) {
                return;
            }
            *slot = (value, now);
            return;
        }
        if shard.len() >= self.per_shard {
            shard.pop_lru();
        }
        shard.put(Box::from(key), (value, now));
    }

    /// Takes the live value for `key` out.
    pub fn remove(&self, key: &str) -> Option<V> {
        let (value, at) = self.shard(key).pop(key)?;
        (!self.expired(at)).then_some(value)
    }

    /// Entries held, expired ones included until they are read or pushed out.
    pub fn len(&self) -> u64 {
        self.shards.iter().map(|s| lock(s).len() as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&self) {
        for shard in self.shards.iter() {
            lock(shard).clear();
        }
    }

    fn shard(&self, key: &str) -> MutexGuard<'_, Shard<V>> {
        // The shard count is a power of two.
        let i = self.pick.hash_one(key) as usize & (self.shards.len() - 1);
        lock(&self.shards[i])
    }

    fn expired(&self, at: Instant) -> bool {
        at.elapsed() >= self.ttl
    }
}

/// A panic cannot leave a shard half-changed (the list operations do not
/// unwind midway), so a poisoned lock is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn holds_replaces_and_removes() {
        let r = Recent::new(10, HOUR);
        assert_eq!(r.get("a"), None);
        r.insert("a", 1);
        r.insert("b", 2);
        assert_eq!(r.get("a"), Some(1));
        r.insert("a", 3);
        assert_eq!(r.get("a"), Some(3));
        assert_eq!(r.len(), 2);
        assert_eq!(r.remove("a"), Some(3));
        assert_eq!(r.remove("a"), None);
        r.clear();
        assert!(r.is_empty());
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let r = Recent::new(3, HOUR);
        for k in ["a", "b", "c"] {
            r.insert(k, 0);
        }
        assert_eq!(r.get("a"), Some(0), "a is now the most recently used");
        r.insert("d", 0);
        assert_eq!(r.get("b"), None, "b was the least recently used");
        for k in ["a", "c", "d"] {
            assert_eq!(r.get(k), Some(0), "{k} is kept");
        }
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn a_sharded_map_keeps_its_newest_entries_and_its_bound() {
        let capacity = 64 * 1024;
        let r = Recent::new(capacity, HOUR);
        assert_eq!(r.shards.len(), SHARDS);
        let total = 200_000u64;
        for i in 0..total {
            r.insert(&format!("task-{i}"), i);
        }
        assert!(r.len() <= capacity, "{} entries", r.len());
        // Each shard holds 4,096; the newest 32,768 spread about 2,048 to a
        // shard, far from any shard's bound.
        for i in total - 32 * 1024..total {
            assert_eq!(r.get(&format!("task-{i}")), Some(i), "task-{i} was evicted");
        }
        assert_eq!(r.get("task-0"), None);
    }

    #[test]
    fn an_expired_entry_reads_as_absent() {
        let r = Recent::new(10, Duration::ZERO);
        r.insert("a", 1);
        assert_eq!(r.get("a"), None);
        assert_eq!(r.len(), 0, "a read drops it");
        r.insert("b", 2);
        assert_eq!(r.remove("b"), None);
    }

    #[test]
    fn insert_unless_keeps_a_live_entry_that_passes() {
        let r = Recent::new(10, HOUR);
        r.insert_unless("t", 1, |_| true);
        assert_eq!(r.get("t"), Some(1), "absent: inserted");
        r.insert_unless("t", 2, |v| *v == 1);
        assert_eq!(r.get("t"), Some(1), "kept");
        r.insert_unless("t", 2, |v| *v == 5);
        assert_eq!(r.get("t"), Some(2), "replaced");

        let expired = Recent::new(10, Duration::ZERO);
        expired.insert("t", 1);
        expired.insert_unless("t", 2, |_| true);
        assert_eq!(expired.shard("t").peek("t").map(|e| e.0), Some(2));
    }
}
