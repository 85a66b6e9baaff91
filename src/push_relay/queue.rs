//! Notifications waiting to be delivered: one queue per destination (the
//! webhook's scheme, host and port), bounded in count, and all queues
//! together bounded in count and bytes. When a bound is hit the oldest
//! notification goes (of its own destination, or the oldest of all when the
//! total is over), and is counted: the gateway's memory stays bounded
//! whatever the webhooks do. One task drains a destination at a time, so a
//! slow webhook delays only its own notifications, in order.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;

use super::deleted::Deleted;
use super::deliver::{destination, Delivered, Sender};
use super::seal::ClientConfig;

/// One notification to deliver.
#[derive(Debug, Clone)]
pub struct Job {
    pub config: ClientConfig,
    pub body: Bytes,
    pub queued_at: Instant,
}

/// The bounds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub per_destination: usize,
    pub total: usize,
    pub bytes: usize,
}

/// The queues themselves, without tasks (so the bounds can be tested
/// alone).
#[derive(Debug, Default)]
pub struct Backlog {
    /// Each job with the order it came in.
    queues: HashMap<String, VecDeque<(u64, Job)>>,
    count: usize,
    bytes: usize,
    next: u64,
}

impl Backlog {
    /// Adds `job` for `destination`; the jobs dropped to stay in bounds.
    pub fn push(&mut self, destination: &str, job: Job, bounds: Bounds) -> usize {
        let mut dropped = 0;
        let queue = self.queues.entry(destination.to_string()).or_default();
        if queue.len() >= bounds.per_destination {
            if let Some((_, old)) = queue.pop_front() {
                self.count -= 1;
                self.bytes -= old.body.len();
                dropped += 1;
            }
        }
        self.count += 1;
        self.bytes += job.body.len();
        self.next += 1;
        queue.push_back((self.next, job));
        while self.count > bounds.total || self.bytes > bounds.bytes {
            let oldest = (self.queues.values_mut())
                .filter(|q| !q.is_empty())
                .min_by_key(|q| q.front().map_or(u64::MAX, |(n, _)| *n));
            let Some((_, old)) = oldest.and_then(VecDeque::pop_front) else {
                break;
            };
            self.count -= 1;
            self.bytes -= old.body.len();
            dropped += 1;
        }
        dropped
    }

    /// The next job for `destination`; `None` (and the queue forgotten)
    /// when it is empty.
    pub fn pop(&mut self, destination: &str) -> Option<Job> {
        let queue = self.queues.get_mut(destination)?;
        let Some((_, job)) = queue.pop_front() else {
            self.queues.remove(destination);
            return None;
        };
        self.count -= 1;
        self.bytes -= job.body.len();
        Some(job)
    }

    pub fn depth(&self) -> (usize, usize) {
        (self.count, self.bytes)
    }
}

/// What happened to each job (and when its sending began), for metrics
/// and the delivery span.
pub type Observe = Box<dyn Fn(&Job, &Delivered, std::time::SystemTime) + Send + Sync>;

/// The queues with their delivery tasks.
pub struct Queues {
    bounds: Bounds,
    sender: Arc<Sender>,
    observe: Observe,
    state: Mutex<(Backlog, std::collections::HashSet<String>)>,
    pub shared: Shared,
}

/// What a relay's queues hand on to the next ones when the config is
/// reloaded: the configs deleted here, and the count of drops (a metric
/// that must not go back).
#[derive(Clone, Default)]
pub struct Shared {
    /// Configs deleted through this replica: their jobs are dropped.
    pub deleted: Arc<Deleted>,
    pub dropped: Arc<AtomicU64>,
}

impl Queues {
    pub fn new(bounds: Bounds, sender: Arc<Sender>, observe: Observe) -> Arc<Queues> {
        Queues::with_shared(bounds, sender, observe, Shared::default())
    }

    /// As `new`, going on from what earlier queues left.
    pub fn with_shared(
        bounds: Bounds,
        sender: Arc<Sender>,
        observe: Observe,
        shared: Shared,
    ) -> Arc<Queues> {
        Arc::new(Queues {
            bounds,
            sender,
            observe,
            state: Mutex::new(Default::default()),
            shared,
        })
    }

    /// Queues `job` and makes sure its destination is being drained.
    pub fn push(self: &Arc<Self>, job: Job) {
        let destination = destination(&job.config.url);
        let start = {
            let Ok(mut state) = self.state.lock() else {
                return;
            };
            let dropped = state.0.push(&destination, job, self.bounds);
            (self.shared.dropped).fetch_add(dropped as u64, Ordering::Relaxed);
            if dropped > 0 {
                tracing::warn!(destination = %destination, dropped, "push relay queue full: the oldest notifications were dropped");
            }
            state.1.insert(destination.clone())
        };
        if start {
            tokio::spawn(self.clone().drain(destination));
        }
    }

    async fn drain(self: Arc<Self>, destination: String) {
        loop {
            let job = {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                match state.0.pop(&destination) {
                    Some(job) => job,
                    None => {
                        state.1.remove(&destination);
                        return;
                    }
                }
            };
            let began = std::time::SystemTime::now();
            let outcome = match self.shared.deleted.covers(&job.config) {
                true => Delivered::Deleted,
                false => self.sender.deliver(&job.config, &job.body).await,
            };
            (self.observe)(&job, &outcome, began);
        }
    }

    /// Notifications waiting, and their bytes.
    pub fn depth(&self) -> (usize, usize) {
        self.state.lock().map_or((0, 0), |s| s.0.depth())
    }

    /// Notifications dropped to stay in bounds, since start.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(task: &str, bytes: usize) -> Job {
        Job {
            config: ClientConfig {
                url: "https://h.example/hook".into(),
                token: None,
                authentication: None,
                version: "1.0".into(),
                binding: "JSONRPC".into(),
                agent_version: "1.0".into(),
                task_id: task.into(),
                config_id: None,
                agent_token: "g".into(),
                ..Default::default()
            },
            body: Bytes::from(vec![b'x'; bytes]),
            queued_at: Instant::now(),
        }
    }

    const BOUNDS: Bounds = Bounds {
        per_destination: 3,
        total: 5,
        bytes: 1000,
    };

    fn tasks(backlog: &mut Backlog, destination: &str) -> Vec<String> {
        std::iter::from_fn(|| backlog.pop(destination))
            .map(|j| j.config.task_id)
            .collect()
    }

    #[test]
    fn a_full_destination_drops_its_oldest() {
        let mut backlog = Backlog::default();
        let dropped: usize = (1..=5)
            .map(|i| backlog.push("a", job(&format!("t{i}"), 10), BOUNDS))
            .sum();
        assert_eq!(dropped, 2);
        assert_eq!(backlog.depth(), (3, 30));
        assert_eq!(tasks(&mut backlog, "a"), ["t3", "t4", "t5"]);
        assert_eq!(backlog.depth(), (0, 0));
    }

    #[test]
    fn the_total_and_the_bytes_are_bounded_across_destinations() {
        let mut backlog = Backlog::default();
        for i in 0..3 {
            assert_eq!(backlog.push("a", job(&format!("a{i}"), 10), BOUNDS), 0);
        }
        assert_eq!(backlog.push("b", job("b0", 10), BOUNDS), 0);
        assert_eq!(backlog.push("b", job("b1", 10), BOUNDS), 0);
        // A sixth: the oldest of all (a0) goes.
        assert_eq!(backlog.push("c", job("c0", 10), BOUNDS), 1);
        assert_eq!(backlog.depth().0, 5);
        assert_eq!(tasks(&mut backlog, "a"), ["a1", "a2"]);
        assert_eq!(tasks(&mut backlog, "b"), ["b0", "b1"]);
        // Bytes: one big job pushes out the older ones.
        let mut backlog = Backlog::default();
        backlog.push("a", job("small", 400), BOUNDS);
        backlog.push("b", job("small2", 400), BOUNDS);
        assert_eq!(backlog.push("c", job("big", 900), BOUNDS), 2);
        assert_eq!(backlog.depth(), (1, 900));
        assert_eq!(tasks(&mut backlog, "c"), ["big"]);
    }

    #[test]
    fn destinations_are_scheme_and_authority() {
        assert_eq!(
            destination("https://h.example:8443/a?b"),
            "https://h.example:8443"
        );
        assert_eq!(destination("http://h.example/x"), "http://h.example");
    }
}
