//! An upstream's replicas: which one takes the next call (least outstanding
//! or round robin, skipping those whose breaker is open), and the guard that
//! keeps the in-flight count and the breaker honest however a call ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use http::Uri;

use super::breaker::{Breaker, Pass, State};
use crate::config::{self, Balance};

/// One replica's state as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaHealth {
    pub url: String,
    /// "closed", "open" or "half_open".
    pub state: &'static str,
    /// Calls sent to it whose response headers have not arrived yet.
    pub outstanding: usize,
}

pub struct Replica {
    /// Its JSON-RPC endpoint as configured.
    pub endpoint: Uri,
    /// The `Host` an HTTP/1.1 call to it carries, made once.
    host: Option<http::HeaderValue>,
    /// Calls waiting for response headers; a streamed body that is still
    /// flowing no longer counts (the client cannot see body ends cheaply,
    /// and headers are where an overloaded agent shows its queue).
    outstanding: AtomicUsize,
    breaker: Mutex<Breaker>,
}

impl Replica {
    fn breaker(&self) -> MutexGuard<'_, Breaker> {
        // Every critical section leaves the breaker consistent, so a panic
        // elsewhere while holding it does not make its state unusable.
        self.breaker.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Relaxed)
    }
}

pub struct Replicas {
    list: Vec<Replica>,
    policy: Balance,
    /// Where the next scan starts; advanced on every pick so that ties (all
    /// idle, all equally busy) rotate instead of piling onto the first.
    cursor: AtomicUsize,
}

impl Replicas {
    pub fn new(cfg: &config::Upstream) -> Self {
        let urls = if cfg.urls.is_empty() {
            std::slice::from_ref(&cfg.url)
        } else {
            cfg.urls.as_slice()
        };
        let list = urls
            .iter()
            .map(|endpoint| Replica {
                endpoint: endpoint.clone(),
                host: super::address::host_header(endpoint),
                outstanding: AtomicUsize::new(0),
                breaker: Mutex::new(Breaker::new(cfg.breaker.failures, cfg.breaker.open_for)),
            })
            .collect();
        Self {
            list,
            policy: cfg.balance,
            cursor: AtomicUsize::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Replica> {
        self.list.iter()
    }

    /// Admits the call on the best replica not in `tried`; `None` when
    /// every such replica is ejected.
    pub fn acquire(&self, tried: &[bool], now: Instant) -> Option<Attempt<'_>> {
        // The common single-replica upstream: nothing to choose between.
        if self.list.len() == 1 {
            return match tried.first() {
                Some(true) => None,
                _ => self.admit(0, now),
            };
        }
        let mut skip: Vec<bool> = (0..self.list.len())
            .map(|i| tried.get(i).copied().unwrap_or(false))
            .collect();
        let start = self.cursor.fetch_add(1, Ordering::Relaxed);
        // Each round either admits or rules one replica out (another call
        // took its half-open trial between the look and the admit).
        for _ in 0..self.list.len() {
            let loads: Vec<Option<usize>> = self
                .list
                .iter()
                .zip(&skip)
                .map(|(r, &s)| (!s && r.breaker().available(now)).then(|| r.outstanding()))
                .collect();
            let index = pick(self.policy, start, &loads)?;
            if let Some(attempt) = self.admit(index, now) {
                return Some(attempt);
            }
            skip[index] = true;
        }
        None
    }

    fn admit(&self, index: usize, now: Instant) -> Option<Attempt<'_>> {
        let replica = self.list.get(index)?;
        let pass = replica.breaker().admit(now)?;
        replica.outstanding.fetch_add(1, Ordering::Relaxed);
        Some(Attempt {
            replica,
            index,
            pass,
            settled: false,
        })
    }

    /// How long until some replica takes calls again (for Retry-After when
    /// all are ejected).
    pub fn wait(&self, now: Instant) -> Duration {
        self.list
            .iter()
            .map(|r| r.breaker().wait(now))
            .min()
            .unwrap_or(Duration::ZERO)
    }

    /// The first replica whose breaker is closed, else the first that
    /// would take a call, else the first: where origin-relative requests
    /// (cards) are addressed.
    pub fn preferred(&self, now: Instant) -> Option<&Replica> {
        let closed = self
            .list
            .iter()
            .find(|r| r.breaker().state(now) == State::Closed);
        closed
            .or_else(|| self.list.iter().find(|r| r.breaker().available(now)))
            .or_else(|| self.list.first())
    }

    pub fn health(&self, now: Instant) -> Vec<ReplicaHealth> {
        self.list
            .iter()
            .map(|r| ReplicaHealth {
                url: r.endpoint.to_string(),
                state: r.breaker().state(now).label(),
                outstanding: r.outstanding(),
            })
            .collect()
    }
}

/// The replica for the next call among `loads` (`Some(outstanding)` for a
/// candidate, `None` for one to skip), scanning from `start`: round robin
/// takes the first candidate, least-outstanding the least loaded, the
/// first in scan order winning ties.
pub fn pick(policy: Balance, start: usize, loads: &[Option<usize>]) -> Option<usize> {
    let n = loads.len();
    let order = (0..n).map(|k| (start.wrapping_add(k)) % n);
    let mut candidates = order.filter_map(|i| loads[i].map(|load| (i, load)));
    match policy {
        Balance::RoundRobin => candidates.next().map(|(i, _)| i),
        Balance::LeastOutstanding => candidates
            .reduce(|best, c| if c.1 < best.1 { c } else { best })
            .map(|(i, _)| i),
    }
}

/// One call admitted on one replica. Counts as outstanding until dropped;
/// [`Attempt::settle`] records the outcome, and dropping it unsettled (the
/// caller went away) gives a half-open trial back.
pub struct Attempt<'a> {
    replica: &'a Replica,
    index: usize,
    pass: Pass,
    settled: bool,
}

impl Attempt<'_> {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn endpoint(&self) -> &Uri {
        &self.replica.endpoint
    }

    pub fn host(&self) -> Option<&http::HeaderValue> {
        self.replica.host.as_ref()
    }

    /// Records the outcome; returns the breaker's new state when it changed
    /// (worth a log line).
    pub fn settle(mut self, ok: bool, now: Instant) -> Option<State> {
        let mut breaker = self.replica.breaker();
        let before = breaker.state(now);
        breaker.record(self.pass, ok, now);
        let after = breaker.state(now);
        drop(breaker);
        self.settled = true;
        (before != after).then_some(after)
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.replica.outstanding.fetch_sub(1, Ordering::Relaxed);
        if !self.settled {
            self.replica.breaker().abandon(self.pass, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Breaker as BreakerCfg;

    const LO: Balance = Balance::LeastOutstanding;
    const RR: Balance = Balance::RoundRobin;

    #[test]
    fn round_robin_takes_the_next_candidate() {
        let loads = [Some(5), Some(0), None, Some(9)];
        assert_eq!(pick(RR, 0, &loads), Some(0));
        assert_eq!(pick(RR, 1, &loads), Some(1));
        assert_eq!(pick(RR, 2, &loads), Some(3), "the ejected one is skipped");
        assert_eq!(pick(RR, 7, &loads), Some(3));
        assert_eq!(pick(RR, 0, &[None, None]), None);
        assert_eq!(pick(RR, 0, &[]), None);
    }

    #[test]
    fn least_outstanding_prefers_the_idlest() {
        let loads = [Some(3), Some(1), None, Some(2)];
        for start in 0..8 {
            assert_eq!(pick(LO, start, &loads), Some(1));
        }
        assert_eq!(pick(LO, 0, &[None, Some(7)]), Some(1));
        assert_eq!(pick(LO, 0, &[None, None]), None);
    }

    #[test]
    fn least_outstanding_ties_rotate() {
        let loads = [Some(1), Some(0), Some(0), Some(0)];
        let picks: Vec<_> = (0..6).map(|s| pick(LO, s, &loads)).collect();
        let want = [1, 1, 2, 3, 1, 1].map(Some);
        assert_eq!(picks, want);
    }

    fn cfg(n: usize, balance: Balance, failures: u32) -> config::Upstream {
        let toml = "[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n";
        let mut cfg = match config::load_str(toml) {
            Ok(c) => c.upstreams[0].clone(),
            Err(e) => panic!("{e}"),
        };
        cfg.urls = (0..n)
            .map(|i| format!("http://127.0.0.1:{}", 1000 + i).parse().unwrap())
            .collect();
        cfg.url = cfg.urls[0].clone();
        cfg.balance = balance;
        cfg.breaker = BreakerCfg {
            failures,
            open_for: Duration::from_secs(10),
        };
        cfg
    }

    #[test]
    fn outstanding_counts_until_the_attempt_ends() {
        let set = Replicas::new(&cfg(3, LO, 5));
        let now = Instant::now();
        let busy = set.acquire(&[], now).unwrap();
        let busy_index = busy.index();
        // Two more calls go to the two idle replicas, not the busy one.
        let a = set.acquire(&[], now).unwrap();
        let b = set.acquire(&[], now).unwrap();
        let mut used = [busy_index, a.index(), b.index()];
        used.sort_unstable();
        assert_eq!(used, [0, 1, 2]);
        let outstanding: Vec<_> = set.health(now).iter().map(|h| h.outstanding).collect();
        assert_eq!(outstanding, [1, 1, 1]);
        a.settle(true, now);
        drop(b);
        assert_eq!(set.health(now)[busy_index].outstanding, 1);
        drop(busy);
        assert!(set.health(now).iter().all(|h| h.outstanding == 0));
    }

    #[test]
    fn tried_and_ejected_replicas_are_skipped() {
        let set = Replicas::new(&cfg(3, RR, 1));
        let now = Instant::now();
        // Replica 1 fails once: with failures = 1 it is ejected.
        let first = set.acquire(&[false, true, true], now).unwrap();
        assert_eq!(first.index(), 0);
        drop(first);
        let failing = set.acquire(&[true, false, true], now).unwrap();
        assert_eq!(failing.index(), 1);
        failing.settle(false, now);
        assert_eq!(set.health(now)[1].state, "open");
        for _ in 0..6 {
            let a = set.acquire(&[], now).unwrap();
            assert_ne!(a.index(), 1);
        }
        assert!(set.acquire(&[true, false, true], now).is_none());
        assert_eq!(set.wait(now), Duration::ZERO, "others still take calls");
    }

    #[test]
    fn all_ejected_reports_the_first_reopening() {
        let set = Replicas::new(&cfg(2, LO, 1));
        let t0 = Instant::now();
        set.acquire(&[false, true], t0).unwrap().settle(false, t0);
        let t1 = t0 + Duration::from_secs(4);
        set.acquire(&[true, false], t1).unwrap().settle(false, t1);
        assert!(set.acquire(&[], t1).is_none());
        assert_eq!(set.wait(t1), Duration::from_secs(6));
        // At t0 + 10s replica 0 is half-open: one trial only.
        let t2 = t0 + Duration::from_secs(10);
        let trial = set.acquire(&[], t2).unwrap();
        assert_eq!(trial.index(), 0);
        assert!(set.acquire(&[], t2).is_none());
        assert_eq!(set.health(t2)[0].state, "half_open");
        // A trial abandoned (caller gone) is handed out again.
        drop(trial);
        let again = set.acquire(&[], t2).unwrap();
        assert_eq!(again.index(), 0);
        again.settle(true, t2);
        assert_eq!(set.health(t2)[0].state, "closed");
        assert_eq!(
            set.preferred(t2).map(|r| r.endpoint.port_u16()),
            Some(Some(1000))
        );
    }
}
