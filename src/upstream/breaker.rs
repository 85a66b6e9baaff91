//! One replica's circuit breaker, as a pure state machine: every method
//! takes the current instant, so the tests drive time by arithmetic instead
//! of sleeping.
//!
//! closed ─(`failures` consecutive failures)─▶ open ─(`open_for` passed)─▶
//! half-open: exactly one trial call goes through ─▶ success: closed,
//! failure: open for another `open_for`.

use std::time::{Duration, Instant};

/// The state as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn label(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }
}

/// What the breaker let through: an ordinary call, or the one trial of a
/// half-open breaker (whose outcome alone decides what comes next).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    Normal,
    Trial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// Half-open with the trial call out; everyone else keeps away.
    Trial,
}

#[derive(Debug)]
pub struct Breaker {
    threshold: u32,
    open_for: Duration,
    phase: Phase,
}

impl Breaker {
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            threshold: threshold.max(1),
            open_for,
            phase: Phase::Closed { failures: 0 },
        }
    }

    /// Whether [`Breaker::admit`] would let a call through now; the balancer
    /// asks this without committing.
    pub fn available(&self, now: Instant) -> bool {
        match self.phase {
            Phase::Closed { .. } => true,
            Phase::Open { until } => now >= until,
            Phase::Trial => false,
        }
    }

    /// Lets a call through, or not. An open breaker whose time is up turns
    /// half-open here, handing out its single trial.
    pub fn admit(&mut self, now: Instant) -> Option<Pass> {
        match self.phase {
            Phase::Closed { .. } => Some(Pass::Normal),
            Phase::Open { until } if now >= until => {
                self.phase = Phase::Trial;
                Some(Pass::Trial)
            }
            Phase::Open { .. } | Phase::Trial => None,
        }
    }

    /// The outcome of a call `admit` let through.
    pub fn record(&mut self, pass: Pass, ok: bool, now: Instant) {
        match (self.phase, pass) {
            (Phase::Closed { .. }, _) if ok => self.phase = Phase::Closed { failures: 0 },
            (Phase::Closed { failures }, _) => {
                let failures = failures.saturating_add(1);
                self.phase = if failures >= self.threshold {
                    self.open_until(now)
                } else {
                    Phase::Closed { failures }
                };
            }
            (Phase::Trial, Pass::Trial) if ok => self.phase = Phase::Closed { failures: 0 },
            (Phase::Trial, Pass::Trial) => self.phase = self.open_until(now),
            // A call admitted before the breaker opened, ending late: the
            // trial, not this straggler, decides whether the replica is back.
            (Phase::Open { .. } | Phase::Trial, Pass::Normal) => {}
            (Phase::Open { .. }, Pass::Trial) => {}
        }
    }

    /// The call ended without an outcome (its caller went away): a trial
    /// that never finished must not keep the replica half-open forever, so
    /// the next call may try at once.
    pub fn abandon(&mut self, pass: Pass, now: Instant) {
        if pass == Pass::Trial && self.phase == Phase::Trial {
            self.phase = Phase::Open { until: now };
        }
    }

    pub fn state(&self, now: Instant) -> State {
        match self.phase {
            Phase::Closed { .. } => State::Closed,
            Phase::Open { until } if now < until => State::Open,
            Phase::Open { .. } | Phase::Trial => State::HalfOpen,
        }
    }

    /// How long until this breaker lets a call through again (zero when it
    /// does now, or when its trial is out and may close it any moment).
    pub fn wait(&self, now: Instant) -> Duration {
        match self.phase {
            Phase::Open { until } => until.saturating_duration_since(now),
            Phase::Closed { .. } | Phase::Trial => Duration::ZERO,
        }
    }

    fn open_until(&self, now: Instant) -> Phase {
        Phase::Open {
            until: now + self.open_for,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN_FOR: Duration = Duration::from_secs(10);

    fn tripped(now: Instant) -> Breaker {
        let mut b = Breaker::new(3, OPEN_FOR);
        for _ in 0..3 {
            let pass = b.admit(now).unwrap();
            b.record(pass, false, now);
        }
        b
    }

    #[test]
    fn opens_after_consecutive_failures_only() {
        let now = Instant::now();
        let mut b = Breaker::new(3, OPEN_FOR);
        b.record(Pass::Normal, false, now);
        b.record(Pass::Normal, false, now);
        // A success in between resets the count.
        b.record(Pass::Normal, true, now);
        b.record(Pass::Normal, false, now);
        b.record(Pass::Normal, false, now);
        assert_eq!(b.state(now), State::Closed);
        assert!(b.available(now));
        b.record(Pass::Normal, false, now);
        assert_eq!(b.state(now), State::Open);
        assert!(!b.available(now));
        assert_eq!(b.admit(now), None);
        assert_eq!(b.wait(now), OPEN_FOR);
    }

    #[test]
    fn half_open_lets_exactly_one_trial_through() {
        let t0 = Instant::now();
        let mut b = tripped(t0);
        let t1 = t0 + OPEN_FOR - Duration::from_millis(1);
        assert_eq!(b.admit(t1), None, "still open just before open_for");
        assert_eq!(b.wait(t1), Duration::from_millis(1));
        let t2 = t0 + OPEN_FOR;
        assert_eq!(b.state(t2), State::HalfOpen);
        assert!(b.available(t2));
        assert_eq!(b.admit(t2), Some(Pass::Trial));
        // Everyone else keeps skipping it while the trial is out.
        assert!(!b.available(t2));
        assert_eq!(b.admit(t2), None);
        assert_eq!(b.admit(t2 + OPEN_FOR * 5), None);
        assert_eq!(b.state(t2), State::HalfOpen);
    }

    #[test]
    fn trial_success_closes() {
        let t0 = Instant::now();
        let mut b = tripped(t0);
        let t1 = t0 + OPEN_FOR;
        let pass = b.admit(t1).unwrap();
        b.record(pass, true, t1);
        assert_eq!(b.state(t1), State::Closed);
        assert_eq!(b.admit(t1), Some(Pass::Normal));
        // The count starts over: one failure does not reopen it.
        b.record(Pass::Normal, false, t1);
        assert_eq!(b.state(t1), State::Closed);
    }

    #[test]
    fn trial_failure_reopens_for_another_period() {
        let t0 = Instant::now();
        let mut b = tripped(t0);
        let t1 = t0 + OPEN_FOR + Duration::from_secs(1);
        let pass = b.admit(t1).unwrap();
        b.record(pass, false, t1);
        assert_eq!(b.state(t1), State::Open);
        assert_eq!(b.wait(t1), OPEN_FOR);
        assert_eq!(b.admit(t1 + OPEN_FOR), Some(Pass::Trial));
    }

    #[test]
    fn stragglers_do_not_decide_while_open_or_half_open() {
        let t0 = Instant::now();
        let mut b = tripped(t0);
        b.record(Pass::Normal, true, t0);
        assert_eq!(b.state(t0), State::Open, "a late success does not close it");
        let t1 = t0 + OPEN_FOR;
        let trial = b.admit(t1).unwrap();
        b.record(Pass::Normal, true, t1);
        b.record(Pass::Normal, false, t1);
        assert_eq!(b.state(t1), State::HalfOpen);
        b.record(trial, true, t1);
        assert_eq!(b.state(t1), State::Closed);
    }

    #[test]
    fn abandoned_trial_frees_the_slot() {
        let t0 = Instant::now();
        let mut b = tripped(t0);
        let t1 = t0 + OPEN_FOR;
        let trial = b.admit(t1).unwrap();
        b.abandon(Pass::Normal, t1);
        assert!(!b.available(t1), "only the trial's own end frees it");
        b.abandon(trial, t1);
        assert_eq!(b.admit(t1), Some(Pass::Trial));
    }
}
