//! Calls and errors per upstream over the last minute, for the console
//! (`crate::console`): `requests_total` read when someone asks, against
//! the counts read up to a minute before. Nothing is done per call.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus::core::Collector;

/// How far back "the last minute" looks.
const WINDOW: Duration = Duration::from_secs(60);

/// Per upstream: (calls, errors) counted so far.
pub type Counts = HashMap<String, (f64, f64)>;

/// The fleet's call counts as read at each look, for the last minute's
/// rates; bounded by the window.
#[derive(Default)]
pub struct LastMinute(Mutex<VecDeque<(Instant, Counts)>>);

impl LastMinute {
    /// The counts now, against the oldest kept within the window: per
    /// upstream (calls, errors) and how many seconds that covers.
    pub fn since_a_minute_ago(&self, now: Counts) -> (Counts, f64) {
        let Ok(mut samples) = self.0.lock() else {
            return (Counts::new(), 0.0);
        };
        let at = Instant::now();
        while samples
            .front()
            .is_some_and(|(t, _)| at.duration_since(*t) > WINDOW)
        {
            samples.pop_front();
        }
        let (seconds, delta) = match samples.front() {
            Some((then, old)) => {
                let delta = (now.iter())
                    .map(|(name, (calls, errors))| {
                        let (c0, e0) = old.get(name).copied().unwrap_or((0.0, 0.0));
                        (
                            name.clone(),
                            ((calls - c0).max(0.0), (errors - e0).max(0.0)),
                        )
                    })
                    .collect();
                (at.duration_since(*then).as_secs_f64(), delta)
            }
            None => (0.0, Counts::new()),
        };
        // One sample a second at most keeps the window's memory small.
        let last = samples.back().map(|(t, _)| at.duration_since(*t));
        if last.is_none_or(|d| d >= Duration::from_secs(1)) {
            samples.push_back((at, now));
        }
        (delta, seconds)
    }
}

/// Every call `requests_total` counted so far, per upstream: all, and
/// those that did not answer 2xx or answered a JSON-RPC error.
pub fn counts(requests: &prometheus::IntCounterVec) -> Counts {
    let mut counts = Counts::new();
    for family in requests.collect() {
        for metric in family.get_metric() {
            let label = |name: &str| {
                (metric.get_label().iter())
                    .find(|l| l.name() == name)
                    .map(|l| l.value().to_string())
            };
            let Some(upstream) = label("upstream") else {
                continue;
            };
            let value = metric.get_counter().get_value();
            let ok = label("status").is_some_and(|s| s.starts_with('2'))
                && label("error").is_some_and(|e| e == "none");
            let entry = counts.entry(upstream).or_insert((0.0, 0.0));
            entry.0 += value;
            if !ok {
                entry.1 += value;
            }
        }
    }
    counts
}
