//! HTTP/2 to an agent over as many connections as its streams need.
//!
//! The legacy client keeps one h2 connection per replica and puts every
//! call on it. An agent caps the streams open on a connection
//! (`SETTINGS_MAX_CONCURRENT_STREAMS`, often 100–250), and calls past the
//! cap wait inside the client for a stream to end: behind a few hundred
//! idle SSE streams, every new call would wait out its response-header
//! timeout. So calls go through *lanes*: each lane is a client of its own
//! (its own connection per replica) carrying at most
//! `http2_streams_per_connection` calls at once, counted until the answer's
//! body is dropped. A call takes the first lane with room; when every lane
//! is full a new one is opened. Lanes past the first are only used under
//! that load, and their idle connections close with the pool's idle timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::lease::Lease;

/// A call's place on a lane, held (in a [`Lease`]) until its answer's body
/// is dropped.
pub(super) struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Lanes of `C` (a client), each with the calls it carries now.
pub struct Lanes<C> {
    lanes: Mutex<Vec<(C, Arc<AtomicUsize>)>>,
    per_lane: usize,
}

impl<C: Clone> Lanes<C> {
    /// `per_lane` calls at most on each lane; 0 for no limit (one lane).
    pub fn new(per_lane: usize) -> Self {
        Self {
            lanes: Mutex::new(Vec::new()),
            per_lane: if per_lane == 0 { usize::MAX } else { per_lane },
        }
    }

    /// The first lane with room, or a new one from `open` (given the number
    /// of lanes already open), and the call's place on it.
    pub fn take(&self, open: impl FnOnce(usize) -> C) -> (C, Lease) {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        let room = lanes
            .iter()
            .position(|(_, calls)| calls.load(Ordering::Acquire) < self.per_lane);
        let index = room.unwrap_or_else(|| {
            let client = open(lanes.len());
            lanes.push((client, Arc::new(AtomicUsize::new(0))));
            lanes.len() - 1
        });
        let (client, calls) = &lanes[index];
        calls.fetch_add(1, Ordering::AcqRel);
        (client.clone(), Lease::new(Place(calls.clone())))
    }

    /// Calls on each lane now, in lane order.
    #[cfg(test)]
    pub fn load(&self) -> Vec<usize> {
        let lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes
            .iter()
            .map(|(_, calls)| calls.load(Ordering::Acquire))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lane_opens_only_when_every_lane_is_full() {
        let lanes = Lanes::new(2);
        let mut opened = 0;
        let mut open = |already: usize| {
            assert_eq!(already, opened);
            opened += 1;
            opened
        };
        let (a, l1) = lanes.take(&mut open);
        let (b, l2) = lanes.take(&mut open);
        let (c, l3) = lanes.take(&mut open);
        assert_eq!((a, b, c), (1, 1, 2));
        assert_eq!(lanes.load(), [2, 1]);
        // A place freed on the first lane is taken before the second's.
        drop(l1);
        let (d, _l4) = lanes.take(&mut open);
        assert_eq!(d, 1);
        assert_eq!(lanes.load(), [2, 1]);
        drop(l2);
        assert_eq!(lanes.load(), [1, 1]);
        drop(l3);
        assert_eq!(lanes.load(), [1, 0]);
        assert_eq!(opened, 2);
    }

    #[test]
    fn zero_means_one_lane_without_a_limit() {
        let lanes = Lanes::new(0);
        let leases: Vec<_> = (0..1000).map(|_| lanes.take(|_| ()).1).collect();
        assert_eq!(lanes.load(), [1000]);
        drop(leases);
        assert_eq!(lanes.load(), [0]);
    }
}
