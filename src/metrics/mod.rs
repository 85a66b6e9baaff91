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
use crate::error::codes;
use crate::recent::Recent;
use crate::routing::learn::{Seen, TASK_STATES};
use crate::routing::Rule;

mod upstream;
pub use upstream::UpstreamMeters;

pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
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
    routing_decisions: [OnceLock<IntCounter>; Rule::COUNT + 1],
    pub affinity_entries: IntGauge,
    /// Client connections to the proxy listener: open now, and accepted.
    pub connections_open: IntGauge,
    pub connections: IntCounter,
    pub probes: IntCounterVec,
    pub auth_failures: IntCounterVec,
    pub rejections: IntCounterVec,
    pub upstream_up: IntGaugeVec,
    pub breaker_state: IntGaugeVec,
    pub card_refresh: IntCounterVec,
    pub card_age: GaugeVec,
    pub config_reloads: IntCounterVec,
    pub build_info: IntGaugeVec,
    /// Resident bytes `crate::memory_release` gave back to the system.
    pub memory_released: IntCounter,
    /// Caught up with `log::dropped_lines` at each scrape.
    log_lines_dropped: IntCounter,
    /// When each task was first seen, to measure it when it ends.
    first_seen: Recent<Instant>,
}

const DEFAULT_TASKS_TIMED: u64 = 100_000;

/// The kinds `crate::routing::learn` gives an event.
const EVENT_KINDS: [&str; 6] = ["status", "artifact", "task", "message", "error", "other"];

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    register(registry, Box::new(c.clone()));
    c
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    register(registry, Box::new(g.clone()));
    g
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels)
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    register(registry, Box::new(h.clone()));
    h
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
        let requests = counter(&r, "requests_total", "Requests by protocol version, method family, skill, upstream, HTTP status and JSON-RPC error class.", &["version", "family", "skill", "upstream", "status", "error"]);
        let request_duration = histogram(
            &r,
            "request_duration_seconds",
            "Whole request, until the answer (or stream) ended.",
            &["family", "upstream"],
            latency_buckets(),
        );
        let upstream_duration = histogram(
            &r,
            "upstream_duration_seconds",
            "Time for the upstream to answer with response headers.",
            &["upstream"],
            latency_buckets(),
        );
        let request_bytes = counter(
            &r,
            "request_bytes_total",
            "Request body bytes received.",
            &["upstream"],
        );
        let response_bytes = counter(
            &r,
            "response_bytes_total",
            "Response body bytes sent.",
            &["upstream"],
        );
        let sse_open = gauge(&r, "sse_streams_open", "SSE streams open now.", &[])
            .with_label_values::<&str>(&[]);
        let sse_events = counter(
            &r,
            "sse_events_total",
            "SSE events forwarded, by kind (status, artifact, task, message, error, other).",
            &["kind"],
        );
        let sse_first_event = histogram(
            &r,
            "sse_time_to_first_event_seconds",
            "From the request to the first event relayed.",
            &[],
            latency_buckets(),
        )
        .with_label_values::<&str>(&[]);
        let task_states = counter(
            &r,
            "task_states_total",
            "Task states observed in answers, by skill.",
            &["skill", "state"],
        );
        let task_duration = histogram(
            &r,
            "task_duration_seconds",
            "From a task's first sighting to a terminal state, where both were seen.",
            &["skill"],
            exponential_buckets(0.01, 2.0, 20).unwrap_or_default(),
        );
        let routing = counter(
            &r,
            "routing_decisions_total",
            "Routing decisions by rule (path, affinity, hint, match, default, none).",
            &["rule"],
        );
        let affinity_entries = gauge(
            &r,
            "affinity_entries",
            "Task and context owners remembered.",
            &[],
        )
        .with_label_values::<&str>(&[]);
        let connections_open = gauge(
            &r,
            "connections_open",
            "Client connections to the proxy listener open now.",
            &[],
        )
        .with_label_values::<&str>(&[]);
        let connections = counter(
            &r,
            "connections_total",
            "Client connections accepted by the proxy listener.",
            &[],
        )
        .with_label_values::<&str>(&[]);
        let probes = counter(
            &r,
            "affinity_probes_total",
            "Unknown tasks looked up by asking the upstreams, by outcome.",
            &["outcome"],
        );
        let auth_failures = counter(
            &r,
            "auth_failures_total",
            "Authentication and authorization failures by scheme and reason.",
            &["scheme", "reason"],
        );
        let rejections = counter(
            &r,
            "rejections_total",
            "Calls refused by a limit (global, caller, upstream, skill, in_flight, streams).",
            &["limit"],
        );
        let upstream_up = gauge(
            &r,
            "upstream_up",
            "1 when some replica of the upstream is not ejected.",
            &["upstream"],
        );
        let breaker_state = gauge(
            &r,
            "upstream_breaker_state",
            "Per replica: 0 closed, 1 half-open, 2 open.",
            &["upstream", "replica"],
        );
        let card_refresh = counter(
            &r,
            "card_refresh_total",
            "Upstream card refreshes by result (ok, not_modified, error).",
            &["upstream", "result"],
        );
        let card_age = GaugeVec::new(
            Opts::new(
                "card_age_seconds",
                "Age of the upstream card in use (-1: none).",
            ),
            &["upstream"],
        )
        .unwrap_or_else(|e| panic!("metric card_age_seconds: {e}"));
        register(&r, Box::new(card_age.clone()));
        let config_reloads = counter(
            &r,
            "config_reloads_total",
            "Configuration reloads by result (ok, failed).",
            &["result"],
        );
        let build_info = gauge(
            &r,
            "build_info",
            "Always 1; the labels say which build runs.",
            &["version"],
        );
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let memory_released = IntCounter::new(
            "memory_released_bytes_total",
            "Resident memory returned to the system after bursts (freed heap malloc had kept).",
        )
        .unwrap_or_else(|e| panic!("metric memory_released_bytes_total: {e}"));
        register(&r, Box::new(memory_released.clone()));
        let log_lines_dropped = IntCounter::new(
            "log_lines_dropped_total",
            "Log lines dropped because stderr's reader fell behind.",
        )
        .unwrap_or_else(|e| panic!("metric log_lines_dropped_total: {e}"));
        register(&r, Box::new(log_lines_dropped.clone()));
        #[cfg(target_os = "linux")]
        register(
            &r,
            Box::new(prometheus::process_collector::ProcessCollector::for_self()),
        );
        Self {
            registry: r,
            requests,
            request_duration,
            upstream_duration,
            request_bytes,
            response_bytes,
            sse_open,
            sse_events,
            sse_first_event,
            task_states,
            task_duration,
            routing,
            routing_decisions: std::array::from_fn(|_| OnceLock::new()),
            sse_event_kinds: std::array::from_fn(|_| OnceLock::new()),
            unskilled_states: std::array::from_fn(|_| OnceLock::new()),
            affinity_entries,
            connections_open,
            connections,
            probes,
            auth_failures,
            rejections,
            upstream_up,
            breaker_state,
            card_refresh,
            card_age,
            config_reloads,
            build_info,
            memory_released,
            log_lines_dropped,
            // Least recently used goes first: every task is new when seen.
            first_seen: Recent::new(tasks, Duration::from_secs(24 * 3600)),
        }
    }

    /// One routing decision: the rule that placed the call, or `None` when
    /// none could. The handle is kept (see `upstream.rs` for why).
    pub fn routed(&self, rule: Option<Rule>) {
        let (slot, label) = rule.map_or((Rule::COUNT, "none"), |r| (r.index(), r.label()));
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
    pub fn render(&self) -> String {
        let dropped = crate::log::dropped_lines();
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
    fn registers_every_family_and_renders() {
        let m = Metrics::new();
        m.requests
            .with_label_values(&["0.3", "send", "none", "a", "200", "none"])
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
