//! The in-memory limits, with governor (GCRA): one limiter for all traffic,
//! one per configured upstream, one per configured skill, and one per
//! caller (held in a bounded moka cache). Used alone without a store, and
//! as the fallback while a shared store cannot answer (`super::store`).
//!
//! A call is checked against the limits that apply to it in the order
//! global → upstream → skill → caller and refused with the first one that
//! says no. A refused call takes nothing from any limit: every applicable
//! limiter is first asked without recording anything (a dry run of
//! governor's own decision, see [`Tat`]), and only when all of them agree is
//! one unit taken from each. Two concurrent calls can both pass the dry run
//! and then race for the last unit; the loser is refused, and the units it
//! already took from the limiters before the one that refused it stay
//! taken. That window is a few atomic operations wide, and its only effect
//! is a limit that is very slightly stricter under contention.
//!
//! Per-caller limiters live in a moka cache bounded by
//! `max_tracked_callers` (least recently seen forgotten first) with a
//! time-to-idle of [`CALLER_IDLE`]: memory stays bounded under a flood of
//! distinct callers, and a forgotten caller simply starts again with a full
//! burst. A caller is only remembered once one of its calls is let through.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, QuantaClock, QuantaInstant};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{NotKeyed, StateStore};
use governor::{NotUntil, RateLimiter};
use moka::policy::EvictionPolicy;
use moka::sync::Cache;

use super::{exhausted_state, QuotaSpec, RateLimitSettings, Refusal};

/// A caller not seen for this long is forgotten (and starts afresh).
pub const CALLER_IDLE: Duration = Duration::from_secs(600);

thread_local! {
    /// Set while [`dry_run`] runs: [`Tat`] then decides without recording.
    static DRY_RUN: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every [`Tat`] in dry-run mode on this thread: governor's
/// decisions are computed as usual, but nothing is taken. `f` must not
/// yield (it runs synchronously on this thread, so the flag is this call's).
fn dry_run<T>(f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DRY_RUN.with(|d| d.set(false));
        }
    }
    DRY_RUN.with(|d| d.set(true));
    let _reset = Reset;
    f()
}

/// A GCRA state (the theoretical arrival time, in nanoseconds since the
/// limiter's start; 0 = never used), like governor's `InMemoryState`, but
/// able to answer without recording (see [`dry_run`]).
#[derive(Debug, Default)]
pub struct Tat(AtomicU64);

impl StateStore for Tat {
    type Key = NotKeyed;

    fn measure_and_replace<T, F, E>(&self, _key: &NotKeyed, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let dry = DRY_RUN.with(Cell::get);
        let mut prev = self.0.load(Ordering::Acquire);
        loop {
            let (result, next) = f(NonZeroU64::new(prev).map(|n| Nanos::new(n.get())))?;
            if dry {
                return Ok(result);
            }
            match self.0.compare_exchange_weak(
                prev,
                next.as_u64(),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(result),
                Err(current) => prev = current,
            }
        }
    }
}

/// One direct (unkeyed) limiter on the quanta clock.
type Limiter = RateLimiter<NotKeyed, Tat, QuantaClock, NoOpMiddleware<QuantaInstant>>;

fn limiter(spec: &QuotaSpec, clock: &QuantaClock) -> Limiter {
    RateLimiter::new(spec.quota(), Tat::default(), clock.clone())
}

/// A shared limit: its label, quota and limiter.
struct Limit {
    label: &'static str,
    spec: QuotaSpec,
    limiter: Limiter,
}

impl Limit {
    fn new(label: &'static str, spec: &QuotaSpec, clock: &QuantaClock) -> Limit {
        Limit {
            label,
            spec: *spec,
            limiter: limiter(spec, clock),
        }
    }
}

/// The per-caller limit: one limiter per caller key, bounded.
struct PerCaller {
    spec: QuotaSpec,
    callers: Cache<String, Arc<Limiter>>,
}

/// The live limiters.
#[derive(Default)]
pub struct LocalLimits {
    clock: QuantaClock,
    global: Option<Limit>,
    upstreams: HashMap<String, Limit>,
    skills: HashMap<String, Limit>,
    per_caller: Option<PerCaller>,
}

impl fmt::Debug for LocalLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut upstreams: Vec<_> = self.upstreams.iter().map(|(k, l)| (k, l.spec)).collect();
        upstreams.sort_by(|a, b| a.0.cmp(b.0));
        let mut skills: Vec<_> = self.skills.iter().map(|(k, l)| (k, l.spec)).collect();
        skills.sort_by(|a, b| a.0.cmp(b.0));
        f.debug_struct("LocalLimits")
            .field("global", &self.global.as_ref().map(|l| l.spec))
            .field("per_caller", &self.per_caller.as_ref().map(|p| p.spec))
            .field("upstreams", &upstreams)
            .field("skills", &skills)
            .finish()
    }
}

/// A limiter that applies to one call.
struct Applicable<'a> {
    label: &'static str,
    spec: &'a QuotaSpec,
    limiter: &'a Limiter,
}

/// One unit from each, in order; the first refusal ends it.
fn take(limits: &[Applicable<'_>]) -> Result<(), Refusal> {
    for a in limits {
        a.limiter
            .check()
            .map_err(|not_until| refusal(a, &not_until))?;
    }
    Ok(())
}

fn refusal(a: &Applicable<'_>, not_until: &NotUntil<QuantaInstant>) -> Refusal {
    let retry_after = not_until.wait_time_from(a.limiter.clock().now());
    Refusal {
        limit: a.label,
        retry_after,
        policy: a.spec.policy(a.label),
        state: exhausted_state(a.label, retry_after),
    }
}

impl LocalLimits {
    pub fn new(settings: &RateLimitSettings) -> Self {
        let clock = QuantaClock::default();
        let shared = |label, map: &BTreeMap<String, QuotaSpec>| {
            map.iter()
                .map(|(name, spec)| (name.clone(), Limit::new(label, spec, &clock)))
                .collect::<HashMap<_, _>>()
        };
        let per_caller = settings.per_caller.map(|spec| PerCaller {
            spec,
            callers: Cache::builder()
                .max_capacity(settings.max_tracked_callers.max(1))
                .time_to_idle(CALLER_IDLE)
                .eviction_policy(EvictionPolicy::lru())
                .build(),
        });
        LocalLimits {
            global: settings
                .global
                .as_ref()
                .map(|spec| Limit::new("global", spec, &clock)),
            upstreams: shared("upstream", &settings.upstreams),
            skills: shared("skill", &settings.skills),
            per_caller,
            clock,
        }
    }

    /// Takes one unit from every limit that applies; refuses with the first
    /// exhausted one (and then takes nothing).
    pub fn check(&self, caller: &str, upstream: &str, skill: Option<&str>) -> Result<(), Refusal> {
        if self.none_configured() {
            return Ok(());
        }
        let per_caller = self.per_caller.as_ref();
        // A caller not tracked yet has a full burst and cannot refuse: the
        // dry run leaves it out, and it is remembered once let through.
        let known = per_caller.and_then(|p| p.callers.get(caller));
        dry_run(|| take(&self.applicable(upstream, skill, per_caller.zip(known.as_deref()))))?;
        let limiter = match (per_caller, known) {
            (Some(p), None) => Some(
                p.callers
                    .entry_by_ref(caller)
                    .or_insert_with(|| Arc::new(limiter(&p.spec, &self.clock)))
                    .into_value(),
            ),
            (_, known) => known,
        };
        take(&self.applicable(upstream, skill, per_caller.zip(limiter.as_deref())))
    }

    /// Whether any rate limit applies at all (else `check` always passes).
    pub fn is_configured(&self) -> bool {
        !self.none_configured()
    }

    /// No `[rate_limits]` at all: every call passes without a look.
    fn none_configured(&self) -> bool {
        self.global.is_none()
            && self.per_caller.is_none()
            && self.upstreams.is_empty()
            && self.skills.is_empty()
    }

    /// The limits that apply to a call, in checking order: global,
    /// upstream, skill, caller.
    fn applicable<'a>(
        &'a self,
        upstream: &str,
        skill: Option<&str>,
        caller: Option<(&'a PerCaller, &'a Limiter)>,
    ) -> Vec<Applicable<'a>> {
        let shared = [
            self.global.as_ref(),
            self.upstreams.get(upstream),
            skill.and_then(|s| self.skills.get(s)),
        ];
        let shared = shared.into_iter().flatten().map(|l| Applicable {
            label: l.label,
            spec: &l.spec,
            limiter: &l.limiter,
        });
        let caller = caller.map(|(p, limiter)| Applicable {
            label: "caller",
            spec: &p.spec,
            limiter,
        });
        shared.chain(caller).collect()
    }

    /// Callers currently tracked (for tests and metrics).
    pub fn tracked_callers(&self) -> u64 {
        match &self.per_caller {
            Some(p) => {
                p.callers.run_pending_tasks();
                p.callers.entry_count()
            }
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{settings, Period, RateLimitsSection, DEFAULT_MAX_TRACKED_CALLERS};
    use super::*;
    use std::num::NonZeroU32;
    use std::time::Instant;

    fn section(text: &str) -> RateLimitsSection {
        toml::from_str(text).unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn limits(text: &str) -> LocalLimits {
        let s = settings(&section(text), &names(&["a", "b"])).unwrap();
        LocalLimits::new(&s)
    }

    fn nz(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    fn fields(problems: &[(String, String)]) -> Vec<&str> {
        let mut f: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        f.sort();
        f
    }

    #[test]
    fn valid_settings_with_defaults() {
        let s = settings(
            &section(
                r#"
global = { per_minute = 600 }
per_caller = { per_second = 10, burst = 20 }
upstreams.a = { per_second = 5 }
skills."any/skill-id" = { per_minute = 1, burst = 3 }
"#,
            ),
            &names(&["a"]),
        )
        .unwrap();
        assert_eq!(
            s.global,
            Some(QuotaSpec {
                period: Period::Minute,
                amount: nz(600),
                burst: nz(600)
            })
        );
        assert_eq!(
            s.per_caller,
            Some(QuotaSpec {
                period: Period::Second,
                amount: nz(10),
                burst: nz(20)
            })
        );
        assert_eq!(s.upstreams["a"].burst, nz(5));
        assert_eq!(s.skills["any/skill-id"].burst, nz(3));
        assert_eq!(s.max_tracked_callers, DEFAULT_MAX_TRACKED_CALLERS);
        assert!(!s.is_empty());

        let empty = settings(&section(""), &[]).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty, RateLimitSettings::default());
        let limits = LocalLimits::new(&empty);
        for i in 0..1000 {
            assert!(limits.check(&format!("ip:{i}"), "a", Some("s")).is_ok());
        }
        assert_eq!(limits.tracked_callers(), 0);
    }

    #[test]
    fn governor_quota_matches_the_spec() {
        let spec = QuotaSpec {
            period: Period::Second,
            amount: nz(10),
            burst: nz(2),
        };
        let q = spec.quota();
        assert_eq!(q.burst_size(), nz(2));
        assert_eq!(q.replenish_interval(), Duration::from_millis(100));
        let per_minute = QuotaSpec {
            period: Period::Minute,
            amount: nz(30),
            burst: nz(30),
        };
        assert_eq!(
            per_minute.quota().replenish_interval(),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn settings_problems_are_all_reported() {
        let problems = settings(
            &section(
                r#"
max_tracked_callers = 0
global = { per_second = 1, per_minute = 60 }
per_caller = { burst = 3 }
upstreams.a = { per_second = 0 }
upstreams.nope = { per_minute = 5 }
skills.s = { per_minute = 5, burst = 0 }
skills.t = { per_minute = 0, per_second = 0 }
"#,
            ),
            &names(&["a", "b"]),
        )
        .unwrap_err();
        assert_eq!(
            fields(&problems),
            [
                "global",
                "max_tracked_callers",
                "per_caller",
                "skills.s.burst",
                "skills.t",
                "skills.t.per_minute",
                "skills.t.per_second",
                "upstreams.a.per_second",
                "upstreams.nope",
            ],
            "{problems:?}"
        );
        let message = |f: &str| {
            problems
                .iter()
                .find(|(field, _)| field == f)
                .map(|(_, m)| m.clone())
                .unwrap()
        };
        assert!(message("global").contains("not both"));
        assert!(message("per_caller").contains("per_second or per_minute"));
        assert!(message("upstreams.nope").contains("a, b"));
        assert!(message("upstreams.a.per_second").contains("greater than 0"));
        assert!(message("max_tracked_callers").contains("greater than 0"));

        let none = settings(&section("upstreams.x = { per_second = 1 }"), &[]).unwrap_err();
        assert_eq!(fields(&none), ["upstreams.x"]);
        assert!(none[0].1.contains("none"), "{none:?}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(toml::from_str::<RateLimitsSection>("per_hour = 1").is_err());
        assert!(toml::from_str::<RateLimitsSection>("global = { per_hour = 1 }").is_err());
    }

    /// Two calls pass, the third is refused by `label` with a short
    /// Retry-After, and once that has passed a call passes again.
    fn exhausts_and_recovers(label: &str, call: impl Fn() -> Result<(), Refusal>) {
        let started = Instant::now();
        call().unwrap();
        call().unwrap();
        let third = call();
        // Per second = 5: one unit back every 200 ms. A machine too slow to
        // make three calls in that time proves nothing either way.
        if started.elapsed() >= Duration::from_millis(200) {
            return;
        }
        let refusal = third.unwrap_err();
        assert_eq!(refusal.limit, label);
        assert!(refusal.retry_after > Duration::ZERO, "{refusal:?}");
        assert!(
            refusal.retry_after <= Duration::from_millis(200),
            "{refusal:?}"
        );
        assert_eq!(refusal.state, format!("\"{label}\";r=0;t=1"));
        assert_eq!(refusal.policy, format!("\"{label}\";q=5;w=1"));
        std::thread::sleep(refusal.retry_after + Duration::from_millis(30));
        call().unwrap();
    }

    #[test]
    fn global_limit_refuses_after_its_burst_and_recovers() {
        let l = limits("global = { per_second = 5, burst = 2 }");
        let n = AtomicU64::new(0);
        // Every caller, upstream and skill shares it.
        exhausts_and_recovers("global", || {
            let i = n.fetch_add(1, Ordering::Relaxed);
            l.check(&format!("ip:{i}"), ["a", "b"][i as usize % 2], None)
        });
    }

    #[test]
    fn caller_limit_refuses_after_its_burst_and_recovers() {
        let l = limits("per_caller = { per_second = 5, burst = 2 }");
        exhausts_and_recovers("caller", || l.check("ip:1", "a", None));
        // Others have their own budget.
        l.check("ip:2", "a", None).unwrap();
        l.check("id:alice", "b", None).unwrap();
        assert_eq!(l.tracked_callers(), 3);
    }

    #[test]
    fn upstream_limit_refuses_after_its_burst_and_recovers() {
        let l = limits("upstreams.a = { per_second = 5, burst = 2 }");
        let n = AtomicU64::new(0);
        exhausts_and_recovers("upstream", || {
            let i = n.fetch_add(1, Ordering::Relaxed);
            l.check(&format!("ip:{i}"), "a", Some("s"))
        });
        for i in 0..20 {
            l.check("ip:1", "b", None)
                .unwrap_or_else(|r| panic!("{i}: {r:?}"));
        }
    }

    #[test]
    fn skill_limit_refuses_after_its_burst_and_recovers() {
        let l = limits("skills.forecast = { per_second = 5, burst = 2 }");
        exhausts_and_recovers("skill", || l.check("ip:1", "a", Some("forecast")));
        for _ in 0..20 {
            l.check("ip:1", "a", Some("other")).unwrap();
            l.check("ip:1", "a", None).unwrap();
        }
    }

    #[test]
    fn per_minute_burst_is_exact() {
        let l = limits("per_caller = { per_minute = 2, burst = 4 }");
        let passed = (0..10)
            .filter(|_| l.check("ip:1", "a", None).is_ok())
            .count();
        assert_eq!(passed, 4);
        let r = l.check("ip:1", "a", None).unwrap_err();
        assert_eq!(r.policy, "\"caller\";q=2;w=60");
        // One unit back every 30 s.
        assert!(
            r.retry_after > Duration::from_secs(29) && r.retry_after <= Duration::from_secs(30),
            "{r:?}"
        );
        assert_eq!(r.state, "\"caller\";r=0;t=30");
    }

    #[test]
    fn the_first_exhausted_limit_in_order_is_reported() {
        let l = limits(
            r#"
global = { per_minute = 1 }
per_caller = { per_minute = 1 }
upstreams.a = { per_minute = 1 }
skills.s = { per_minute = 1 }
"#,
        );
        l.check("ip:1", "a", Some("s")).unwrap();
        assert_eq!(l.check("ip:1", "a", Some("s")).unwrap_err().limit, "global");

        let l = limits(
            r#"
per_caller = { per_minute = 1 }
upstreams.a = { per_minute = 1 }
skills.s = { per_minute = 1 }
"#,
        );
        l.check("ip:1", "a", Some("s")).unwrap();
        assert_eq!(
            l.check("ip:1", "a", Some("s")).unwrap_err().limit,
            "upstream"
        );
        assert_eq!(l.check("ip:1", "b", Some("s")).unwrap_err().limit, "skill");
        assert_eq!(l.check("ip:1", "b", None).unwrap_err().limit, "caller");
        l.check("ip:2", "b", None).unwrap();
    }

    #[test]
    fn a_refused_call_takes_nothing() {
        // A caller refused by its own limit does not drain the global one.
        let l = limits(
            r#"
global = { per_minute = 5 }
per_caller = { per_minute = 1 }
"#,
        );
        l.check("ip:flood", "a", None).unwrap();
        for _ in 0..100 {
            assert_eq!(l.check("ip:flood", "a", None).unwrap_err().limit, "caller");
        }
        for i in 0..4 {
            l.check(&format!("ip:{i}"), "a", None).unwrap();
        }
        assert_eq!(l.check("ip:last", "a", None).unwrap_err().limit, "global");
        // A caller refused by the global limit is not even remembered.
        assert_eq!(l.tracked_callers(), 5);

        // An upstream or skill refusal leaves the global budget alone too.
        let l = limits(
            r#"
global = { per_minute = 3 }
upstreams.a = { per_minute = 1 }
skills.s = { per_minute = 1 }
"#,
        );
        l.check("ip:1", "a", None).unwrap();
        l.check("ip:1", "b", Some("s")).unwrap();
        for _ in 0..10 {
            assert_eq!(l.check("ip:1", "a", None).unwrap_err().limit, "upstream");
            assert_eq!(l.check("ip:1", "b", Some("s")).unwrap_err().limit, "skill");
        }
        l.check("ip:1", "b", None).unwrap();
        assert_eq!(l.check("ip:1", "b", None).unwrap_err().limit, "global");
    }

    #[test]
    fn concurrent_callers_get_exactly_the_quota() {
        let l = Arc::new(limits("global = { per_minute = 50 }"));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let l = l.clone();
                std::thread::spawn(move || {
                    (0..100)
                        .filter(|i| l.check(&format!("ip:{t}-{i}"), "a", None).is_ok())
                        .count()
                })
            })
            .collect();
        let passed: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(passed, 50);
    }

    #[test]
    fn a_flood_of_distinct_callers_stays_bounded() {
        let l = limits(
            r#"
max_tracked_callers = 1000
per_caller = { per_second = 10, burst = 2 }
"#,
        );
        for i in 0..50_000u32 {
            l.check(
                &format!("ip:10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255),
                "a",
                None,
            )
            .unwrap();
            if i % 10_000 == 9_999 {
                assert!(l.tracked_callers() <= 1000, "{}", l.tracked_callers());
            }
        }
        let tracked = l.tracked_callers();
        assert!(tracked > 0 && tracked <= 1000, "{tracked}");
        // The limiter still works for a caller seen now.
        l.check("ip:busy", "a", None).unwrap();
        l.check("ip:busy", "a", None).unwrap();
        assert_eq!(l.check("ip:busy", "a", None).unwrap_err().limit, "caller");
    }

    #[test]
    fn header_values() {
        let per_second = QuotaSpec {
            period: Period::Second,
            amount: nz(10),
            burst: nz(20),
        };
        assert_eq!(per_second.policy("caller"), "\"caller\";q=10;w=1");
        let per_minute = QuotaSpec {
            period: Period::Minute,
            amount: nz(600),
            burst: nz(5),
        };
        assert_eq!(per_minute.policy("global"), "\"global\";q=600;w=60");
        assert_eq!(
            exhausted_state("skill", Duration::ZERO),
            "\"skill\";r=0;t=1"
        );
        assert_eq!(
            exhausted_state("skill", Duration::from_millis(1)),
            "\"skill\";r=0;t=1"
        );
        assert_eq!(
            exhausted_state("upstream", Duration::from_millis(1200)),
            "\"upstream\";r=0;t=2"
        );
        assert_eq!(
            exhausted_state("upstream", Duration::from_secs(3)),
            "\"upstream\";r=0;t=3"
        );
        // Valid header values.
        for v in [
            per_minute.policy("global"),
            exhausted_state("caller", Duration::from_secs(7)),
        ] {
            assert!(http::HeaderValue::from_str(&v).is_ok(), "{v}");
        }
    }

    #[test]
    fn dry_run_flag_is_reset() {
        let l = limits("global = { per_minute = 2 }");
        assert!(l.check("ip:1", "a", None).is_ok());
        assert!(!DRY_RUN.with(Cell::get));
        assert!(l.check("ip:1", "a", None).is_ok());
        assert!(l.check("ip:1", "a", None).is_err());
        assert!(!DRY_RUN.with(Cell::get));
    }
}
