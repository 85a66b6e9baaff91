//! Concurrency limits: in-flight calls per upstream with a short bounded
//! queue, and open SSE streams per caller and in total. Permits live in the
//! response body, so a slot frees when the answer has been delivered (or the
//! client went away), not when the headers left.
//!
//! Shedding is immediate once the queue is full, and a queued call waits at
//! most `queue_timeout`: latency never grows without bound.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::http::error::GatewayError;

/// In-flight calls to one upstream (all its replicas).
pub struct InFlight {
    name: String,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    queue_timeout: Duration,
}

impl InFlight {
    pub fn new(name: &str, max: usize, queue: usize, queue_timeout: Duration) -> Self {
        Self {
            name: name.to_string(),
            slots: Arc::new(Semaphore::new(max)),
            waiting: AtomicUsize::new(0),
            queue,
            queue_timeout,
        }
    }

    /// A slot now, or after a short bounded wait in the queue, or 503.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, GatewayError> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let _waiter =
            Waiter::join(&self.waiting, self.queue).ok_or_else(|| GatewayError::Overloaded {
                limit: "in_flight",
                reason: format!(
                    "upstream '{}' has too many calls in flight and its queue is full",
                    self.name
                ),
            })?;
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(GatewayError::Overloaded {
                limit: "in_flight",
                reason: format!(
                    "upstream '{}' had no free slot within {:?}",
                    self.name, self.queue_timeout
                ),
            }),
        }
    }

    /// Calls in flight now.
    pub fn in_flight(&self, max: usize) -> usize {
        max.saturating_sub(self.slots.available_permits())
    }
}

/// A place in the queue, given back when dropped.
struct Waiter<'a>(&'a AtomicUsize);

impl<'a> Waiter<'a> {
    fn join(count: &'a AtomicUsize, limit: usize) -> Option<Self> {
        let before = count.fetch_add(1, Ordering::SeqCst);
        let waiter = Waiter(count);
        (before < limit).then_some(waiter)
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The places a call holds until its answer has been delivered: its
/// in-flight slot, and a stream's place when it streams.
pub struct Permits {
    pub slot: OwnedSemaphorePermit,
    pub stream: Option<StreamPermit>,
}

/// Open SSE streams, in total and per caller. The per-caller counts are
/// exact and bounded: an entry exists only while that caller has a stream
/// open, and there are at most `max_total` of those.
pub struct Streams {
    total: Arc<Semaphore>,
    per_caller: Arc<Mutex<HashMap<Arc<str>, usize>>>,
    max_per_caller: usize,
}

/// One open stream; releases its places when dropped.
pub struct StreamPermit {
    _total: OwnedSemaphorePermit,
    caller: Arc<str>,
    per_caller: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.per_caller.lock() {
            if let Some(n) = counts.get_mut(&*self.caller) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.remove(&*self.caller);
                }
            }
        }
    }
}

impl Streams {
    pub fn new(max_total: usize, max_per_caller: usize) -> Self {
        Self {
            total: Arc::new(Semaphore::new(max_total)),
            per_caller: Arc::new(Mutex::new(HashMap::new())),
            max_per_caller,
        }
    }

    /// A place for one more stream, or 503 at once.
    pub fn try_open(&self, caller: &str) -> Result<StreamPermit, GatewayError> {
        let total =
            self.total
                .clone()
                .try_acquire_owned()
                .map_err(|_| GatewayError::Overloaded {
                    limit: "streams",
                    reason: "the gateway has the maximum number of streams open".into(),
                })?;
        let mut counts = self
            .per_caller
            .lock()
            .map_err(|_| GatewayError::Internal("stream accounting unavailable".into()))?;
        // The map's key is shared with the caller's permits, so a stream
        // holds no copy of its own (it lives as long as the stream).
        let key = match counts.get_key_value(caller) {
            Some((key, &n)) if n < self.max_per_caller => key.clone(),
            None if self.max_per_caller > 0 => Arc::from(caller),
            _ => {
                return Err(GatewayError::Overloaded {
                    limit: "streams",
                    reason: format!(
                        "this caller already has {} streams open (the maximum)",
                        self.max_per_caller
                    ),
                })
            }
        };
        *counts.entry(key.clone()).or_insert(0) += 1;
        Ok(StreamPermit {
            _total: total,
            caller: key,
            per_caller: self.per_caller.clone(),
        })
    }

    /// Streams open now, in total.
    pub fn open(&self) -> usize {
        self.per_caller
            .lock()
            .map(|c| c.values().sum())
            .unwrap_or(0)
    }
}

pin_project! {
    /// A body that holds `guard` (permits, a lease) until it is dropped.
    #[derive(Debug)]
    pub struct Guarded<B, G> {
        #[pin]
        inner: B,
        guard: G,
    }
}

impl<B, G> Guarded<B, G> {
    pub fn new(inner: B, guard: G) -> Self {
        Self { inner, guard }
    }
}

impl<B: Body<Data = Bytes>, G> Body for Guarded<B, G> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queue_then_shed() {
        let limit = Arc::new(InFlight::new("u", 1, 1, Duration::from_millis(200)));
        let first = limit.acquire().await.unwrap();
        // One may wait; it gets the slot when the first is released.
        let queued = tokio::spawn({
            let limit = limit.clone();
            async move { limit.acquire().await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The queue is full: shed at once.
        let shed = limit.acquire().await;
        assert!(matches!(
            shed,
            Err(GatewayError::Overloaded {
                limit: "in_flight",
                ..
            })
        ));
        drop(first);
        assert!(queued.await.unwrap().is_ok());
        // A queued call gives up after the timeout.
        let _held = limit.acquire().await.unwrap();
        let started = std::time::Instant::now();
        assert!(limit.acquire().await.is_err());
        assert!(started.elapsed() >= Duration::from_millis(150));
    }

    #[test]
    fn streams_per_caller_and_total() {
        let s = Streams::new(3, 2);
        let a1 = s.try_open("a").unwrap();
        let _a2 = s.try_open("a").unwrap();
        assert!(s.try_open("a").is_err(), "per caller");
        let _b1 = s.try_open("b").unwrap();
        assert!(s.try_open("c").is_err(), "in total");
        assert_eq!(s.open(), 3);
        drop(a1);
        let _c = s.try_open("c").unwrap();
        assert_eq!(s.per_caller.lock().unwrap().len(), 3);
    }

    #[test]
    fn per_caller_entries_go_when_streams_close() {
        let s = Streams::new(100, 10);
        let permits: Vec<_> = (0..50)
            .map(|i| s.try_open(&format!("c{i}")).unwrap())
            .collect();
        assert_eq!(s.per_caller.lock().unwrap().len(), 50);
        drop(permits);
        assert!(s.per_caller.lock().unwrap().is_empty());
    }

    #[test]
    fn a_callers_streams_share_one_key_and_a_refusal_leaves_none() {
        let s = Streams::new(10, 3);
        let a1 = s.try_open("a").unwrap();
        let a2 = s.try_open("a").unwrap();
        assert!(Arc::ptr_eq(&a1.caller, &a2.caller));
        let none = Streams::new(10, 0);
        assert!(none.try_open("a").is_err());
        assert!(none.per_caller.lock().unwrap().is_empty());
        assert_eq!(none.open(), 0);
    }
}
