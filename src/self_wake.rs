//! Re-polls a connection's future at once when it wakes itself while it is
//! being polled, instead of leaving the wake to tokio.
//!
//! Why: tokio treats a task woken during its own poll as one that yielded.
//! It puts the task at the back of the run queue and wakes a parked worker
//! (a futex syscall) to come and steal it. hyper 1.12's request body channel
//! does exactly that on every HTTP/1.1 request: taking a chunk from
//! `Incoming` wakes the sender, which is the connection's dispatcher, in the
//! same task as the handler that is reading the body (see
//! `bench/profile.md`, "A spurious wake"). That was two futex calls per
//! request and a second core woken for nothing.
//!
//! The wrapper gives the inner future its own waker. A wake that arrives
//! while the inner future is being polled is recorded and answered with one
//! more poll, which is what tokio's re-queue would have led to anyway. At
//! most [`REPOLLS`] such polls run in a row. After that the wake is passed
//! on to tokio, so a future that keeps waking itself (`yield_now`, or a
//! spent coop budget) still yields to the other tasks. A wake at any other
//! time goes straight to the task's waker.
//!
//! Code that wakes itself on purpose, to let other tasks run first (the SSE
//! relay gives the upstream connection turns), says so with
//! [`yield_to_others`], and its wake is passed on to tokio at once.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// How many immediate re-polls one poll of the wrapper may make.
const REPOLLS: usize = 1;

/// Not being polled: a wake goes to the task.
const IDLE: u8 = 0;
/// Being polled, not woken yet.
const POLLING: u8 = 1;
/// Woken while being polled: the poll runs again.
const WOKEN: u8 = 2;

thread_local! {
    /// Set by [`yield_to_others`] during a poll of the wrapped future.
    static YIELDING: Cell<bool> = const { Cell::new(false) };
}

/// Wakes the current task so that it runs again after the tasks that are
/// ready now. Under [`RepollOnSelfWake`] this is a real yield to tokio, not
/// a wake answered with another poll at once.
pub fn yield_to_others(cx: &Context<'_>) {
    YIELDING.with(|y| y.set(true));
    cx.waker().wake_by_ref();
}

pin_project_lite::pin_project! {
    /// `inner`, whose wakes during its own poll become one more poll.
    pub struct RepollOnSelfWake<F> {
        #[pin]
        inner: F,
        shared: Arc<Shared>,
        waker: Waker,
    }
}

struct Shared {
    state: AtomicU8,
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            // The poll in progress sees WOKEN when it ends.
            Ok(_) | Err(WOKEN) => {}
            // IDLE: if a poll begins between the exchange and this wake, the
            // task is only woken once too often, never missed.
            Err(_) => self.task.wake(),
        }
    }
}

impl<F: Future> RepollOnSelfWake<F> {
    pub fn new(inner: F) -> Self {
        let shared = Arc::new(Shared {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(shared.clone());
        Self {
            inner,
            shared,
            waker,
        }
    }
}

impl<F: Future> Future for RepollOnSelfWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        // Before the poll: a wake from elsewhere during it must find the
        // task's current waker.
        this.shared.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(this.waker);
        let mut polls_left = REPOLLS + 1;
        loop {
            YIELDING.with(|y| y.set(false));
            this.shared.state.store(POLLING, Ordering::Release);
            let out = this.inner.as_mut().poll(&mut inner_cx);
            let woken = this
                .shared
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_err();
            if !woken || out.is_ready() {
                this.shared.state.store(IDLE, Ordering::Release);
                return out;
            }
            polls_left -= 1;
            if polls_left == 0 || YIELDING.with(Cell::get) {
                this.shared.state.store(IDLE, Ordering::Release);
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    /// Counts the wakes the task gets.
    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        (counter, waker)
    }

    /// Wakes itself during each of its first `self_wakes` polls, keeps the
    /// waker of its last poll, and is ready once `ready` is set.
    struct Probe {
        polls: usize,
        self_wakes: usize,
        /// The self-wakes are [`yield_to_others`].
        yields: bool,
        ready: Arc<AtomicUsize>,
        kept: Arc<Mutex<Option<Waker>>>,
    }

    impl Probe {
        fn new(self_wakes: usize) -> Self {
            Self {
                polls: 0,
                self_wakes,
                yields: false,
                ready: Arc::default(),
                kept: Arc::default(),
            }
        }
    }

    impl Future for Probe {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.ready.load(Ordering::SeqCst) > 0 {
                return Poll::Ready(self.polls);
            }
            *self.kept.lock().unwrap() = Some(cx.waker().clone());
            if self.polls <= self.self_wakes {
                if self.yields {
                    yield_to_others(cx);
                } else {
                    cx.waker().wake_by_ref();
                }
            }
            Poll::Pending
        }
    }

    #[test]
    fn a_self_wake_is_one_more_poll_not_a_wake_of_the_task() {
        let (counter, waker) = task();
        let mut f = Box::pin(RepollOnSelfWake::new(Probe::new(1)));
        let out = f.as_mut().poll(&mut Context::from_waker(&waker));
        assert!(out.is_pending());
        assert_eq!(f.inner.polls, 2, "the self-wake was answered by a poll");
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "the task was woken");
    }

    #[test]
    fn a_future_that_keeps_waking_itself_still_yields() {
        let (counter, waker) = task();
        let mut f = Box::pin(RepollOnSelfWake::new(Probe::new(usize::MAX)));
        for round in 1..=3 {
            assert!(f
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
            assert_eq!(f.inner.polls, round * (REPOLLS + 1));
            assert_eq!(
                counter.0.load(Ordering::SeqCst),
                round,
                "the wake is passed on"
            );
        }
    }

    #[test]
    fn a_yield_is_passed_on_at_once() {
        let (counter, waker) = task();
        let mut probe = Probe::new(1);
        probe.yields = true;
        let mut f = Box::pin(RepollOnSelfWake::new(probe));
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert_eq!(f.inner.polls, 1, "a yield was answered by a poll");
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            1,
            "the task was not woken"
        );
        // The next poll, from tokio, is an ordinary one.
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert_eq!(f.inner.polls, 2);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_wake_from_elsewhere_wakes_the_task() {
        let (counter, waker) = task();
        let probe = Probe::new(0);
        let (ready, kept) = (probe.ready.clone(), probe.kept.clone());
        let mut f = Box::pin(RepollOnSelfWake::new(probe));
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);

        ready.store(1, Ordering::SeqCst);
        let inner_waker = kept.lock().unwrap().take().unwrap();
        std::thread::spawn(move || inner_waker.wake())
            .join()
            .unwrap();
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            1,
            "the task was not woken"
        );
        let out = f.as_mut().poll(&mut Context::from_waker(&waker));
        assert_eq!(out, Poll::Ready(2));
    }

    #[test]
    fn the_newest_task_waker_is_the_one_woken() {
        let (old, old_waker) = task();
        let (new, new_waker) = task();
        let probe = Probe::new(0);
        let kept = probe.kept.clone();
        let mut f = Box::pin(RepollOnSelfWake::new(probe));
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&old_waker))
            .is_pending());
        assert!(f
            .as_mut()
            .poll(&mut Context::from_waker(&new_waker))
            .is_pending());
        kept.lock().unwrap().take().unwrap().wake();
        assert_eq!(old.0.load(Ordering::SeqCst), 0);
        assert_eq!(new.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wrapped_task_runs_to_completion_on_tokio() {
        // A task that yields many times and waits on a channel fed from
        // another task: neither kind of wake is lost.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<usize>(1);
        let consumer = tokio::spawn(RepollOnSelfWake::new(async move {
            let mut sum = 0;
            while let Some(n) = rx.recv().await {
                tokio::task::yield_now().await;
                sum += n;
            }
            sum
        }));
        for n in 1..=1000 {
            tx.send(n).await.unwrap();
        }
        drop(tx);
        let sum = tokio::time::timeout(std::time::Duration::from_secs(10), consumer)
            .await
            .expect("the wrapped task finished")
            .unwrap();
        assert_eq!(sum, 500_500);
    }
}
