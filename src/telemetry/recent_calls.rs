//! The last calls, for the console (`crate::console`): a bounded ring of
//! each call's summary, and a channel that carries each one to live
//! viewers as it ends.
//!
//! It records only while someone looks: reading the calls turns recording
//! on for `WATCHED`, and the first call after that turns it off again.
//! While nobody looks, a call pays one relaxed atomic load here.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::broadcast;

/// How long a look keeps the ring recording.
pub const WATCHED: Duration = Duration::from_secs(600);

use crate::config::console::DEFAULT_RECENT_CALLS as DEFAULT_CAPACITY;

/// One call as the console shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CallSummary {
    /// When it ended, RFC 3339 with milliseconds.
    pub at: String,
    pub request_id: String,
    pub method: &'static str,
    pub binding: &'static str,
    pub version: &'static str,
    pub agent_version: &'static str,
    pub upstream: String,
    pub skill: Option<String>,
    pub status: u16,
    /// The error class, as `requests_total` labels it.
    pub error: &'static str,
    pub code: Option<i32>,
    pub duration_ms: f64,
    pub outcome: &'static str,
    pub trace_id: Option<String>,
    pub caller: Option<String>,
    pub client: Option<String>,
}

pub struct RecentCalls {
    recording: AtomicBool,
    /// Until when (ms since the epoch) the last look keeps it recording.
    until: AtomicU64,
    capacity: AtomicUsize,
    ring: Mutex<VecDeque<Arc<CallSummary>>>,
    live: broadcast::Sender<Arc<CallSummary>>,
}

impl Default for RecentCalls {
    fn default() -> Self {
        RecentCalls {
            recording: AtomicBool::new(false),
            until: AtomicU64::new(0),
            capacity: AtomicUsize::new(DEFAULT_CAPACITY),
            ring: Mutex::new(VecDeque::new()),
            live: broadcast::channel(256).0,
        }
    }
}

impl RecentCalls {
    /// Whether calls are being recorded: the one check every call makes.
    pub fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    /// Someone looks: record for `WATCHED` from now.
    pub fn look(&self) {
        let until = now_ms().saturating_add(WATCHED.as_millis() as u64);
        self.until.store(until, Ordering::Relaxed);
        self.recording.store(true, Ordering::Relaxed);
    }

    /// The ring's bound (`[console] recent_calls`).
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
    }

    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Keeps `call` and tells the live viewers; stops recording once the
    /// last look is too old.
    pub fn push(&self, call: CallSummary) {
        if now_ms() > self.until.load(Ordering::Relaxed) {
            self.recording.store(false, Ordering::Relaxed);
            return;
        }
        let call = Arc::new(call);
        let capacity = self.capacity();
        if let Ok(mut ring) = self.ring.lock() {
            while ring.len() >= capacity {
                ring.pop_front();
            }
            ring.push_back(call.clone());
        }
        // No viewer is no error.
        let _ = self.live.send(call);
    }

    /// The calls kept, newest first, that `keep` selects, at most `limit`.
    pub fn newest(
        &self,
        limit: usize,
        keep: impl Fn(&CallSummary) -> bool,
    ) -> Vec<Arc<CallSummary>> {
        let Ok(ring) = self.ring.lock() else {
            return Vec::new();
        };
        ring.iter()
            .rev()
            .filter(|c| keep(c))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Each call from now on, as it ends.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<CallSummary>> {
        self.live.subscribe()
    }
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(status: u16) -> CallSummary {
        CallSummary {
            at: String::new(),
            request_id: String::new(),
            method: "message/send",
            binding: "jsonrpc",
            version: "0.3",
            agent_version: "0.3",
            upstream: "a".into(),
            skill: None,
            status,
            error: "none",
            code: None,
            duration_ms: 1.0,
            outcome: "complete",
            trace_id: None,
            caller: None,
            client: None,
        }
    }

    #[test]
    fn nothing_is_kept_until_someone_looks_and_the_ring_is_bounded() {
        let recent = RecentCalls::default();
        assert!(!recent.recording());
        recent.set_capacity(3);
        recent.look();
        assert!(recent.recording());
        for status in [200, 201, 202, 203, 204] {
            recent.push(call(status));
        }
        let kept: Vec<u16> = recent
            .newest(10, |_| true)
            .iter()
            .map(|c| c.status)
            .collect();
        assert_eq!(kept, [204, 203, 202]);
        let some: Vec<u16> = (recent.newest(10, |c| c.status % 2 == 0).iter())
            .map(|c| c.status)
            .collect();
        assert_eq!(some, [204, 202]);
        // A look long ago: the next call turns recording off.
        recent.until.store(1, Ordering::Relaxed);
        recent.push(call(500));
        assert!(!recent.recording());
        assert_eq!(recent.newest(10, |_| true).len(), 3);
    }
}
