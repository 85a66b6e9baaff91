//! Prometheus metrics, all prefixed `a2a_gateway_`, served at `/metrics` on
//! the admin listener. Every label value is bounded: method families, not
//! method names; configured upstream names; published skill ids; error
//! classes, not messages; never a task id or anything a client invents.

use prometheus::{
    exponential_buckets, Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter,
    IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::a2a::jsonrpc;
use crate::a2a::seen::{Seen, TASK_STATES};
use crate::http::error::codes;
use crate::recent::Recent;

mod family;
pub mod upstream;
use family::Family;

/// Handles kept for `routing_decisions_total`: one per routing rule (the
/// router's rules number fewer; `crate::routing` checks) and the last for
/// a call no rule placed.
pub const ROUTING_SLOTS: usize = 8;

pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
    pub translated: IntCounterVec,
    pub request_duration: HistogramVec,
    pub upstream_duration: HistogramVec,
    pub request_bytes: IntCounterVec,
    pub response_bytes: IntCounterVec,
    pub sse_open: IntGauge,
    sse_events: IntCounterVec,
    /// `sse_events` by kind, in [`EVENT_KINDS`]' order; see `sse_event`.
    sse_event_kinds: [OnceLock<IntCounter>; EVENT_KINDS.len()],
    /// `task_states_total{skill="none"}` by state, as handles: a call that
    /// routed no skill (every call of a sidecar) counts its answer's state
    /// without a lookup of two labels (~170 instructions).
    unskilled_states: [OnceLock<IntCounter>; TASK_STATES.len()],
    pub sse_first_event: Histogram,
    pub task_states: IntCounterVec,
    pub task_duration: HistogramVec,
    pub routing: IntCounterVec,
    /// `routing` by rule, the last for "none"; see `routed`.
    routing_decisions: [OnceLock<IntCounter>; ROUTING_SLOTS],
    pub affinity_entries: IntGauge,
    /// Client connections to the proxy listener: open now, and accepted.
    pub connections_open: IntGauge,
    pub connections: IntCounter,
    pub probes: IntCounterVec,
    pub auth_failures: IntCounterVec,
    pub rejections: IntCounterVec,
    pub rate_decisions: IntCounterVec,
    pub rate_store_errors: IntCounterVec,
    pub rate_store_up: IntGauge,
    pub rate_store_duration: Histogram,
    pub upstream_up: IntGaugeVec,
    pub breaker_state: IntGaugeVec,
    pub card_refresh: IntCounterVec,
    pub card_age: GaugeVec,
    pub card_signature_checks: IntCounterVec,
    pub card_signature_valid: IntGaugeVec,
    pub push_callbacks: IntCounterVec,
    pub push_deliveries: IntCounterVec,
    pub push_retries: IntCounter,
    push_dropped: IntCounter,
    pub push_queued: IntGauge,
    pub push_delivery: HistogramVec,
    pub config_reloads: IntCounterVec,
    pub build_info: IntGaugeVec,
    /// Resident bytes `crate::memory_release` gave back to the system.
    pub memory_released: IntCounter,
    /// Spans exported or dropped (`crate::telemetry::trace`).
    pub trace_spans: IntCounterVec,
    /// Caught up with `log::dropped_lines` at each scrape.
    log_lines_dropped: IntCounter,
    /// When each task was first seen, to measure it when it ends.
    first_seen: Recent<Instant>,
    /// The last calls, while the console looks (`crate::console`).
    pub recent_calls: crate::telemetry::recent_calls::RecentCalls,
    /// `requests_total` as read at each look, for the last minute's rates.
    last_minute: crate::telemetry::last_minute::LastMinute,
}

const DEFAULT_TASKS_TIMED: u64 = 100_000;

/// The kinds `crate::a2a::seen` gives an event.
const EVENT_KINDS: [&str; 6] = ["status", "artifact", "task", "message", "error", "other"];

/// A family's vector, made by `made` from its options and labels and
/// registered.
fn registered<V: prometheus::core::Collector + Clone + 'static, E: std::fmt::Display>(
    registry: &Registry,
    family: &Family,
    made: impl FnOnce(Opts, &[&str]) -> Result<V, E>,
) -> V {
    let vector = made(Opts::new(family.name, family.help), family.labels)
        .unwrap_or_else(|e| panic!("metric {}: {e}", family.name));
    register(registry, Box::new(vector.clone()));
    vector
}

fn counter(registry: &Registry, family: &Family) -> IntCounterVec {
    registered(registry, family, IntCounterVec::new)
}

fn gauge(registry: &Registry, family: &Family) -> IntGaugeVec {
    registered(registry, family, IntGaugeVec::new)
}

fn float_gauge(registry: &Registry, family: &Family) -> GaugeVec {
    registered(registry, family, GaugeVec::new)
}

fn histogram(registry: &Registry, family: &Family, buckets: Vec<f64>) -> HistogramVec {
    registered(registry, family, |opts, labels| {
        HistogramVec::new(HistogramOpts::from(opts).buckets(buckets), labels)
    })
}

/// A family without labels, as its one series.
fn single_counter(registry: &Registry, family: &Family) -> IntCounter {
    counter(registry, family).with_label_values::<&str>(&[])
}

fn single_gauge(registry: &Registry, family: &Family) -> IntGauge {
    gauge(registry, family).with_label_values::<&str>(&[])
}

/// Registration only fails for a duplicate or malformed name: a bug in the
/// list above, caught by the tests at start-up, never on the request path.
fn register(registry: &Registry, collector: Box<dyn prometheus::core::Collector>) {
    if let Err(e) = registry.register(collector) {
        panic!("metrics registry: {e}");
    }
}

/// 1 ms … ~65 s.
fn latency_buckets() -> Vec<f64> {
    exponential_buckets(0.001, 2.0, 17).unwrap_or_default()
}

/// 100 µs … ~0.4 s: a store on the LAN answers in well under a millisecond.
fn store_buckets() -> Vec<f64> {
    exponential_buckets(0.0001, 2.0, 13).unwrap_or_default()
}

/// 10 ms … ~1.5 h.
fn task_buckets() -> Vec<f64> {
    exponential_buckets(0.01, 2.0, 20).unwrap_or_default()
}

impl Metrics {
    pub fn new() -> Self {
        Self::with_task_capacity(DEFAULT_TASKS_TIMED)
    }

    /// `tasks` bounds how many unfinished tasks are timed at once (for
    /// `task_duration_seconds`): the gateway's memory of tasks is bounded by
    /// one setting, `routing.affinity_capacity`, here as for affinity. A task
    /// whose stream was abandoned before its last state is forgotten once
    /// newer ones need the room.
    pub fn with_task_capacity(tasks: u64) -> Self {
        let r = Registry::new_custom(Some("a2a_gateway".into()), None).unwrap_or_default();
        let build_info = gauge(&r, &family::BUILD_INFO);
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        #[cfg(target_os = "linux")]
        register(
            &r,
            Box::new(prometheus::process_collector::ProcessCollector::for_self()),
        );
        Self {
            requests: counter(&r, &family::REQUESTS),
            translated: counter(&r, &family::TRANSLATED),
            request_duration: histogram(&r, &family::REQUEST_DURATION, latency_buckets()),
            upstream_duration: histogram(&r, &family::UPSTREAM_DURATION, latency_buckets()),
            request_bytes: counter(&r, &family::REQUEST_BYTES),
            response_bytes: counter(&r, &family::RESPONSE_BYTES),
            sse_open: single_gauge(&r, &family::SSE_OPEN),
            sse_events: counter(&r, &family::SSE_EVENTS),
            sse_first_event: histogram(&r, &family::SSE_FIRST_EVENT, latency_buckets())
                .with_label_values::<&str>(&[]),
            task_states: counter(&r, &family::TASK_STATES),
            task_duration: histogram(&r, &family::TASK_DURATION, task_buckets()),
            routing: counter(&r, &family::ROUTING),
            routing_decisions: std::array::from_fn(|_| OnceLock::new()),
            sse_event_kinds: std::array::from_fn(|_| OnceLock::new()),
            unskilled_states: std::array::from_fn(|_| OnceLock::new()),
            affinity_entries: single_gauge(&r, &family::AFFINITY_ENTRIES),
            connections_open: single_gauge(&r, &family::CONNECTIONS_OPEN),
            connections: single_counter(&r, &family::CONNECTIONS),
            probes: counter(&r, &family::PROBES),
            auth_failures: counter(&r, &family::AUTH_FAILURES),
            rejections: counter(&r, &family::REJECTIONS),
            rate_decisions: counter(&r, &family::RATE_DECISIONS),
            rate_store_errors: counter(&r, &family::RATE_STORE_ERRORS),
            rate_store_up: single_gauge(&r, &family::RATE_STORE_UP),
            rate_store_duration: histogram(&r, &family::RATE_STORE_DURATION, store_buckets())
                .with_label_values::<&str>(&[]),
            upstream_up: gauge(&r, &family::UPSTREAM_UP),
            breaker_state: gauge(&r, &family::BREAKER_STATE),
            card_refresh: counter(&r, &family::CARD_REFRESH),
            card_age: float_gauge(&r, &family::CARD_AGE),
            card_signature_checks: counter(&r, &family::CARD_SIGNATURE_CHECKS),
            card_signature_valid: gauge(&r, &family::CARD_SIGNATURE_VALID),
            push_callbacks: counter(&r, &family::PUSH_CALLBACKS),
            push_deliveries: counter(&r, &family::PUSH_DELIVERIES),
            push_retries: single_counter(&r, &family::PUSH_RETRIES),
            push_dropped: single_counter(&r, &family::PUSH_DROPPED),
            push_queued: single_gauge(&r, &family::PUSH_QUEUED),
            push_delivery: histogram(&r, &family::PUSH_DELIVERY, task_buckets()),
            config_reloads: counter(&r, &family::CONFIG_RELOADS),
            build_info,
            memory_released: single_counter(&r, &family::MEMORY_RELEASED),
            log_lines_dropped: single_counter(&r, &family::LOG_LINES_DROPPED),
            trace_spans: counter(&r, &family::TRACE_SPANS),
            // Least recently used goes first: every task is new when seen.
            first_seen: Recent::new(tasks, Duration::from_secs(24 * 3600)),
            recent_calls: Default::default(),
            last_minute: Default::default(),
            registry: r,
        }
    }

    /// One routing decision: the rule that placed the call, or `None` when
    /// none could. The handle is kept (see `upstream.rs` for why).
    /// `rule` is the rule's (index, label); the index is below
    /// [`ROUTING_SLOTS`] - 1 (the last slot is "none").
    pub fn routed(&self, rule: Option<(usize, &'static str)>) {
        let none = (ROUTING_SLOTS - 1, "none");
        let (slot, label) = rule.filter(|(i, _)| *i < ROUTING_SLOTS - 1).unwrap_or(none);
        self.routing_decisions[slot]
            .get_or_init(|| self.routing.with_label_values(&[label]))
            .inc();
    }

    /// One SSE event forwarded, of `kind`. Handles are kept, as for
    /// `routed`: a label lookup per event was a visible share of a stream.
    pub fn sse_event(&self, kind: &str) {
        match EVENT_KINDS.iter().position(|&k| k == kind) {
            Some(i) => self.sse_event_kinds[i]
                .get_or_init(|| self.sse_events.with_label_values(&[kind]))
                .inc(),
            None => self.sse_events.with_label_values(&[kind]).inc(),
        }
    }

    /// Counts the task states in an answer, and a task's duration once it
    /// reaches a terminal state (when its start was seen here too).
    pub fn task_states_seen(&self, seen: &Seen<'_>, skill: &str) {
        for (task, known) in &seen.states {
            self.task_state_seen(task, known, skill);
        }
    }

    /// One task state, timed through the shared `first_seen` cache.
    fn task_state_seen(&self, task: &str, known: &str, skill: &str) {
        self.task_state(skill, known);
        if TERMINAL.contains(&known) {
            if let Some(first) = self.first_seen.remove(task) {
                self.task_ended(skill, first);
            }
        } else {
            // The first sighting stays.
            self.first_seen
                .insert_unless(task, Instant::now(), |_| true);
        }
    }

    /// Counts one answer's task state (`known`, one of [`TASK_STATES`]).
    fn task_state(&self, skill: &str, known: &str) {
        let kept = match skill {
            "none" => TASK_STATES.iter().position(|&k| k == known),
            _ => None,
        };
        match kept {
            Some(i) => self.unskilled_states[i]
                .get_or_init(|| self.task_states.with_label_values(&[skill, known]))
                .inc(),
            None => self.task_states.with_label_values(&[skill, known]).inc(),
        }
    }

    fn task_ended(&self, skill: &str, first: Instant) {
        self.task_duration
            .with_label_values(&[skill])
            .observe(first.elapsed().as_secs_f64());
    }

    /// The text exposition format.
    /// Per upstream, the calls and errors counted since about a minute
    /// ago, and how many seconds that covers.
    pub fn last_minute(&self) -> (crate::telemetry::last_minute::Counts, f64) {
        let now = crate::telemetry::last_minute::counts(&self.requests);
        self.last_minute.since_a_minute_ago(now)
    }

    /// The push relay's queues as a scrape finds them: notifications
    /// queued now, and those dropped since the counter last caught up.
    pub fn push_queues(&self, (queued, _bytes): (usize, usize), dropped: u64) {
        self.push_queued
            .set(i64::try_from(queued).unwrap_or(i64::MAX));
        let counted = self.push_dropped.get();
        if dropped > counted {
            self.push_dropped.inc_by(dropped - counted);
        }
    }

    pub fn render(&self) -> String {
        let dropped = crate::telemetry::log::dropped_lines();
        let counted = self.log_lines_dropped.get();
        if dropped > counted {
            self.log_lines_dropped.inc_by(dropped - counted);
        }
        let mut out = Vec::new();
        if TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .is_err()
        {
            return String::new();
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Every series name the gateway can export (a histogram's `_bucket`,
/// `_sum` and `_count`), whether or not it has a sample yet: what a
/// dashboard's queries may use (`tests/it/dashboard.rs`).
pub fn series_names() -> Vec<String> {
    let mut names = Vec::new();
    for (family, histogram) in family::ALL {
        let name = format!("a2a_gateway_{}", family.name);
        if histogram {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.push(format!("{name}{suffix}"));
            }
        } else {
            names.push(name);
        }
    }
    names
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

const TERMINAL: [&str; 4] = ["completed", "failed", "canceled", "rejected"];

/// The tasks one stream has seen start and not yet end. A stream usually
/// shows its task from its first state to its last, so it times the task
/// itself: the shared `first_seen` map (an insert and a remove per
/// stream, most of the metrics' cost on streams) is only read for a task
/// that may have started before the stream, and only written for one still
/// running when the stream ends. Timings are the same as with the cache alone.
pub struct StreamTasks {
    metrics: Arc<Metrics>,
    /// Inline room for one: a stream nearly always carries one task, and a
    /// stream holds this for its whole life (a `Vec` allocated room for four).
    started: smallvec::SmallVec<[Started; 1]>,
}

struct Started {
    task: String,
    at: Instant,
    /// The start came from `first_seen`, where it stays until the end.
    shared: bool,
}

/// A stream that names more running tasks than this counts the rest through
/// the shared cache alone.
const STREAM_TASKS: usize = 16;

impl StreamTasks {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            started: smallvec::SmallVec::new(),
        }
    }

    /// As [`Metrics::task_states_seen`], for one chunk of the stream.
    pub fn states_seen(&mut self, seen: &Seen<'_>, skill: &str) {
        let m = &*self.metrics;
        for (task, known) in &seen.states {
            let task: &str = task;
            let mine = self.started.iter().position(|s| s.task == task);
            if mine.is_none() && self.started.len() >= STREAM_TASKS {
                m.task_state_seen(task, known, skill);
                continue;
            }
            m.task_state(skill, known);
            if TERMINAL.contains(known) {
                // Removed from the shared cache in any case: another call
                // may have put it there meanwhile, and it has ended for all.
                let shared = m.first_seen.remove(task);
                let first = match mine {
                    Some(i) => Some(self.started.swap_remove(i).at),
                    None => shared,
                };
                if let Some(first) = first {
                    m.task_ended(skill, first);
                }
            } else if mine.is_none() {
                let (at, shared) = match m.first_seen.get(task) {
                    Some(at) => (at, true),
                    None => (Instant::now(), false),
                };
                self.started.push(Started {
                    task: task.to_owned(),
                    at,
                    shared,
                });
            }
        }
    }
}

impl Drop for StreamTasks {
    /// Tasks still running when the stream ends go to the shared cache, so
    /// that a later answer (another stream, a `tasks/get`) can time them.
    fn drop(&mut self) {
        let cache = &self.metrics.first_seen;
        for started in self.started.drain(..) {
            // The earliest sighting wins, as with the cache alone.
            let earlier = cache.get(&started.task).is_some_and(|at| at <= started.at);
            if !started.shared && !earlier {
                cache.insert(&started.task, started.at);
            }
        }
    }
}

/// The bounded label for a JSON-RPC error code.
pub fn error_class(code: Option<i32>) -> &'static str {
    match code {
        None => "none",
        Some(jsonrpc::PARSE_ERROR) => "parse_error",
        Some(jsonrpc::INVALID_REQUEST) => "invalid_request",
        Some(jsonrpc::METHOD_NOT_FOUND) => "method_not_found",
        Some(jsonrpc::INVALID_PARAMS) => "invalid_params",
        Some(jsonrpc::INTERNAL_ERROR) => "internal_error",
        Some(jsonrpc::TASK_NOT_FOUND) => "task_not_found",
        Some(jsonrpc::UNSUPPORTED_OPERATION) => "unsupported_operation",
        Some(jsonrpc::EXTENDED_CARD_NOT_CONFIGURED) => "extended_card_not_configured",
        Some(jsonrpc::CONTENT_TYPE_NOT_SUPPORTED) => "content_type_not_supported",
        Some(jsonrpc::VERSION_NOT_SUPPORTED) => "version_not_supported",
        Some(codes::NO_ROUTE) => "no_route",
        Some(codes::UNKNOWN_SKILL) => "unknown_skill",
        Some(codes::UNAUTHENTICATED) => "unauthenticated",
        Some(codes::FORBIDDEN) => "forbidden",
        Some(codes::UPSTREAM_UNAVAILABLE) => "upstream_unavailable",
        Some(codes::UPSTREAM_TIMEOUT) => "upstream_timeout",
        Some(codes::UPSTREAM_BAD_RESPONSE) => "upstream_bad_response",
        Some(codes::UPSTREAM_STREAM_BROKEN) => "upstream_stream_broken",
        Some(codes::UPSTREAM_STREAM_IDLE) => "upstream_stream_idle",
        Some(codes::UPSTREAM_EJECTED) => "upstream_ejected",
        Some(codes::SHUTTING_DOWN) => "shutting_down",
        Some(codes::RATE_LIMITED) => "rate_limited",
        Some(codes::OVERLOADED) => "overloaded",
        Some(_) => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_in_the_list_of_series() {
        // `family::ALL` is made from the same rows as the families, so
        // none is left out; each must have a name of its own.
        let mut distinct: Vec<&str> = family::ALL.iter().map(|(f, _)| f.name).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), family::ALL.len());
        assert_eq!(family::ALL.len(), 39);
        let names = series_names();
        assert!(names.contains(&"a2a_gateway_requests_total".to_string()));
        assert!(names.contains(&"a2a_gateway_request_duration_seconds_bucket".to_string()));
        assert!(!names.contains(&"a2a_gateway_request_duration_seconds".to_string()));
    }

    #[test]
    fn registers_every_family_and_renders() {
        let m = Metrics::new();
        m.requests
            .with_label_values(&["0.3", "send", "none", "a", "200", "none", "jsonrpc"])
            .inc();
        let text = m.render();
        assert!(text.contains("a2a_gateway_requests_total{"));
        assert!(text.contains("a2a_gateway_build_info{version=\""));
        assert!(text.contains("a2a_gateway_log_lines_dropped_total 0"));
    }

    fn states<'a>(pairs: &[(&'a str, &'static str)]) -> Seen<'a> {
        Seen {
            states: pairs.iter().map(|&(t, s)| (t.into(), s)).collect(),
            ..Seen::default()
        }
    }

    fn timed(m: &Metrics) -> u64 {
        m.task_duration.with_label_values(&["s"]).get_sample_count()
    }

    fn shared_entries(m: &Metrics) -> u64 {
        m.first_seen.len()
    }

    #[test]
    fn sse_events_are_counted_by_kind_through_kept_handles() {
        let m = Metrics::new();
        for kind in ["status", "status", "artifact", "other", "surprise"] {
            m.sse_event(kind);
        }
        // No series for a kind before its first event.
        assert!(!m.render().contains("kind=\"task\""));
        let count = |kind| m.sse_events.with_label_values(&[kind]).get();
        assert_eq!(
            [count("status"), count("artifact"), count("other")],
            [2, 1, 1]
        );
        // A kind outside the known set still gets its own series.
        assert_eq!(count("surprise"), 1);
    }

    #[test]
    fn once_full_new_tasks_are_still_timed() {
        let m = Metrics::with_task_capacity(100);
        for i in 0..1_000 {
            m.task_states_seen(&states(&[(&format!("old-{i}"), "working")]), "s");
        }
        shared_entries(&m); // finishes the cache's housekeeping
        m.task_states_seen(&states(&[("new", "working")]), "s");
        shared_entries(&m);
        m.task_states_seen(&states(&[("new", "completed")]), "s");
        assert_eq!(timed(&m), 1, "the newest task was remembered and timed");
    }

    #[test]
    fn a_stream_times_its_own_task_without_the_shared_cache() {
        let m = Arc::new(Metrics::new());
        let mut tasks = StreamTasks::new(m.clone());
        tasks.states_seen(&states(&[("t", "working")]), "s");
        tasks.states_seen(&states(&[("t", "working"), ("t", "completed")]), "s");
        drop(tasks);
        assert_eq!(timed(&m), 1);
        assert_eq!(shared_entries(&m), 0);
        let count = |state| m.task_states.with_label_values(&["s", state]).get();
        assert_eq!((count("working"), count("completed")), (2, 1));
    }

    #[test]
    fn a_task_seen_before_the_stream_is_timed_from_then_and_once() {
        let m = Arc::new(Metrics::new());
        m.task_states_seen(&states(&[("t", "input-required")]), "s");
        let mut tasks = StreamTasks::new(m.clone());
        tasks.states_seen(&states(&[("t", "working"), ("t", "completed")]), "s");
        drop(tasks);
        assert_eq!(timed(&m), 1);
        assert_eq!(
            shared_entries(&m),
            0,
            "the shared start is gone with the task"
        );
        m.task_states_seen(&states(&[("t", "completed")]), "s");
        assert_eq!(timed(&m), 1, "not timed twice");
    }

    #[test]
    fn states_without_a_skill_are_counted_in_the_same_series_as_by_label() {
        let m = Arc::new(Metrics::new());
        m.task_states_seen(&states(&[("a", "completed"), ("b", "working")]), "none");
        m.task_states_seen(&states(&[("c", "completed")]), "none");
        m.task_states_seen(&states(&[("d", "completed")]), "s");
        let mut tasks = StreamTasks::new(m.clone());
        tasks.states_seen(&states(&[("e", "working"), ("e", "completed")]), "none");
        let count =
            |skill: &str, state: &str| m.task_states.with_label_values(&[skill, state]).get();
        assert_eq!(count("none", "completed"), 3);
        assert_eq!(count("none", "working"), 2);
        assert_eq!(count("s", "completed"), 1);
        let text = m.render();
        assert!(
            text.contains(r#"a2a_gateway_task_states_total{skill="none",state="completed"} 3"#),
            "{text}"
        );
    }

    #[test]
    fn a_task_still_running_when_the_stream_ends_is_timed_later() {
        let m = Arc::new(Metrics::new());
        let mut tasks = StreamTasks::new(m.clone());
        tasks.states_seen(&states(&[("t", "input-required")]), "s");
        drop(tasks);
        assert_eq!(shared_entries(&m), 1);
        m.task_states_seen(&states(&[("t", "completed")]), "s");
        assert_eq!(timed(&m), 1);
    }

    #[test]
    fn a_start_another_call_shares_meanwhile_is_not_timed_twice() {
        let m = Arc::new(Metrics::new());
        let mut tasks = StreamTasks::new(m.clone());
        tasks.states_seen(&states(&[("t", "working")]), "s");
        m.task_states_seen(&states(&[("t", "working")]), "s");
        tasks.states_seen(&states(&[("t", "completed")]), "s");
        drop(tasks);
        m.task_states_seen(&states(&[("t", "completed")]), "s");
        assert_eq!(timed(&m), 1);
        assert_eq!(shared_entries(&m), 0);
    }

    #[test]
    fn a_stream_naming_many_tasks_counts_the_rest_through_the_shared_cache() {
        let m = Arc::new(Metrics::new());
        let ids: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        let mut tasks = StreamTasks::new(m.clone());
        let running: Vec<(&str, &str)> = ids.iter().map(|t| (t.as_str(), "working")).collect();
        tasks.states_seen(&states(&running), "s");
        assert_eq!(tasks.started.len(), STREAM_TASKS);
        let done: Vec<(&str, &str)> = ids.iter().map(|t| (t.as_str(), "completed")).collect();
        tasks.states_seen(&states(&done), "s");
        drop(tasks);
        assert_eq!(timed(&m), 40);
        assert_eq!(shared_entries(&m), 0);
        assert_eq!(m.task_states.with_label_values(&["s", "working"]).get(), 40);
    }

    #[test]
    fn error_classes_are_bounded() {
        assert_eq!(error_class(Some(-32601)), "method_not_found");
        assert_eq!(error_class(Some(12345)), "other");
        assert_eq!(error_class(None), "none");
    }
}
