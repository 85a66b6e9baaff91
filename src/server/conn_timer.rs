//! The timer of one HTTP/1.1 connection, for hyper's header-read timeout.
//!
//! hyper starts a timer for every request head it waits for and drops it
//! once the head has arrived. With tokio's timer (hyper-util's `TokioTimer`)
//! that is a `Sleep` entered into the runtime's timer wheel and taken out
//! again, under the wheel's lock, on every call of a keep-alive connection:
//! ~1,000 instructions a call (bench/profile.md).
//!
//! Here a connection has one tokio `Sleep`, its alarm, and hyper's sleep
//! for a head is only that head's deadline and a handle on the alarm. The
//! alarm is set for the earliest deadline still waited for; a later head's
//! deadline (they only grow) leaves it alone, so the wheel is touched when
//! the alarm goes off early, about once per timeout on a busy connection,
//! not once a call. An alarm that goes off after its head has arrived wakes
//! the connection once for nothing, and is set again by the next wait.
//!
//! A head is still cut off at its own deadline, to the timer wheel's
//! resolution, as with hyper's own timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Given to hyper's HTTP/1.1 builder, one per connection: the alarm wakes
/// only the task that polled it last, so connections must not share one.
#[derive(Clone, Default)]
pub struct ConnTimer {
    alarm: Arc<Mutex<Alarm>>,
}

#[derive(Default)]
struct Alarm {
    /// Made at the connection's first wait, dropped with the connection.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The deadline `sleep` is set for.
    set_for: Option<Instant>,
}

impl hyper::rt::Timer for ConnTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HeadSleep {
            alarm: self.alarm.clone(),
            deadline,
        })
    }
}

/// hyper's wait for one head: ready at `deadline`.
struct HeadSleep {
    alarm: Arc<Mutex<Alarm>>,
    deadline: Instant,
}

impl hyper::rt::Sleep for HeadSleep {}

impl Future for HeadSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        // Only this connection's task polls its alarm: the lock is never
        // contended. A poisoned one cannot hold a half-made change here (a
        // panic in `poll` leaves the alarm as it was), so it is used as is.
        let mut alarm = match self.alarm.lock() {
            Ok(alarm) => alarm,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Alarm { sleep, set_for } = &mut *alarm;
        let keep = matches!(*set_for, Some(at) if at <= deadline);
        let sleep = match sleep {
            Some(sleep) if keep => sleep,
            Some(sleep) => {
                sleep.as_mut().reset(deadline.into());
                *set_for = Some(deadline);
                sleep
            }
            None => {
                *set_for = Some(deadline);
                sleep.insert(Box::pin(tokio::time::sleep_until(deadline.into())))
            }
        };
        // Polling registers this task to be woken when the alarm goes off.
        // Gone off already, it was set for an earlier head: set it for this
        // one, and poll again to register.
        if sleep.as_mut().poll(cx).is_ready() {
            sleep.as_mut().reset(deadline.into());
            *set_for = Some(deadline);
            if sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use hyper::rt::Timer;

    #[tokio::test]
    async fn each_wait_ends_at_its_own_deadline_on_one_alarm() {
        let timer = ConnTimer::default();
        let start = Instant::now();
        // A first head's wait, dropped when its head arrives.
        let mut first = timer.sleep(Duration::from_millis(50));
        assert!((&mut first).now_or_never().is_none());
        drop(first);
        // The next head's wait is later: it does not end at the first
        // deadline, though the alarm goes off there.
        let second = timer.sleep(Duration::from_millis(150));
        second.await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // A wait past its deadline is over at once.
        let mut late = timer.sleep_until(Instant::now() - Duration::from_millis(1));
        assert!((&mut late).now_or_never().is_some());
    }

    #[tokio::test]
    async fn an_earlier_deadline_than_the_alarm_moves_the_alarm() {
        let timer = ConnTimer::default();
        let mut later = timer.sleep(Duration::from_secs(30));
        assert!((&mut later).now_or_never().is_none());
        let start = Instant::now();
        timer.sleep(Duration::from_millis(50)).await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(50), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
    }
}
