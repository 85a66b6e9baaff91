//! Every metric family the gateway exports, in one table: its name (after
//! the `a2a_gateway_` prefix), its help text and its labels. What a label
//! may hold is bounded where the family is used (see the module above).

/// One metric family, as registered.
pub(super) struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: &'static [&'static str],
}

pub(super) const REQUESTS: Family = Family {
    name: "requests_total",
    help: "Requests by protocol version, method family, skill, upstream, HTTP status, JSON-RPC error class and the client's binding (jsonrpc, http+json).",
    labels: &["version", "family", "skill", "upstream", "status", "error", "binding"],
};

pub(super) const TRANSLATED: Family = Family {
    name: "translated_requests_total",
    help: "Requests the version bridge translated, by the client's and the agent's A2A version and method family.",
    labels: &["client_version", "agent_version", "family"],
};

pub(super) const REQUEST_DURATION: Family = Family {
    name: "request_duration_seconds",
    help: "Whole request, until the answer (or stream) ended.",
    labels: &["family", "upstream"],
};

pub(super) const UPSTREAM_DURATION: Family = Family {
    name: "upstream_duration_seconds",
    help: "Time for the upstream to answer with response headers.",
    labels: &["upstream"],
};

pub(super) const REQUEST_BYTES: Family = Family {
    name: "request_bytes_total",
    help: "Request body bytes received.",
    labels: &["upstream"],
};

pub(super) const RESPONSE_BYTES: Family = Family {
    name: "response_bytes_total",
    help: "Response body bytes sent.",
    labels: &["upstream"],
};

pub(super) const SSE_OPEN: Family = Family {
    name: "sse_streams_open",
    help: "SSE streams open now.",
    labels: &[],
};

pub(super) const SSE_EVENTS: Family = Family {
    name: "sse_events_total",
    help: "SSE events forwarded, by kind (status, artifact, task, message, error, other).",
    labels: &["kind"],
};

pub(super) const SSE_FIRST_EVENT: Family = Family {
    name: "sse_time_to_first_event_seconds",
    help: "From the request to the first event relayed.",
    labels: &[],
};

pub(super) const TASK_STATES: Family = Family {
    name: "task_states_total",
    help: "Task states observed in answers, by skill.",
    labels: &["skill", "state"],
};

pub(super) const TASK_DURATION: Family = Family {
    name: "task_duration_seconds",
    help: "From a task's first sighting to a terminal state, where both were seen.",
    labels: &["skill"],
};

pub(super) const ROUTING: Family = Family {
    name: "routing_decisions_total",
    help: "Routing decisions by rule (path, affinity, hint, match, default, none).",
    labels: &["rule"],
};

pub(super) const AFFINITY_ENTRIES: Family = Family {
    name: "affinity_entries",
    help: "Task and context owners remembered.",
    labels: &[],
};

pub(super) const CONNECTIONS_OPEN: Family = Family {
    name: "connections_open",
    help: "Client connections to the proxy listener open now.",
    labels: &[],
};

pub(super) const CONNECTIONS: Family = Family {
    name: "connections_total",
    help: "Client connections accepted by the proxy listener.",
    labels: &[],
};

pub(super) const PROBES: Family = Family {
    name: "affinity_probes_total",
    help: "Unknown tasks looked up by asking the upstreams, by outcome.",
    labels: &["outcome"],
};

pub(super) const AUTH_FAILURES: Family = Family {
    name: "auth_failures_total",
    help: "Authentication and authorization failures by scheme and reason.",
    labels: &["scheme", "reason"],
};

pub(super) const REJECTIONS: Family = Family {
    name: "rejections_total",
    help: "Calls refused by a limit (global, caller, upstream, skill, in_flight, streams).",
    labels: &["limit"],
};

pub(super) const UPSTREAM_UP: Family = Family {
    name: "upstream_up",
    help: "1 when some replica of the upstream is not ejected.",
    labels: &["upstream"],
};

pub(super) const BREAKER_STATE: Family = Family {
    name: "upstream_breaker_state",
    help: "Per replica: 0 closed, 1 half-open, 2 open.",
    labels: &["upstream", "replica"],
};

pub(super) const CARD_REFRESH: Family = Family {
    name: "card_refresh_total",
    help: "Upstream card refreshes by result (ok, not_modified, error).",
    labels: &["upstream", "result"],
};

pub(super) const CONFIG_RELOADS: Family = Family {
    name: "config_reloads_total",
    help: "Configuration reloads by result (ok, failed).",
    labels: &["result"],
};

pub(super) const BUILD_INFO: Family = Family {
    name: "build_info",
    help: "Always 1; the labels say which build runs.",
    labels: &["version"],
};

pub(super) const CARD_AGE: Family = Family {
    name: "card_age_seconds",
    help: "Age of the upstream card in use (-1: none).",
    labels: &["upstream"],
};

pub(super) const MEMORY_RELEASED: Family = Family {
    name: "memory_released_bytes_total",
    help: "Resident memory returned to the system after bursts (freed heap malloc had kept).",
    labels: &[],
};

pub(super) const LOG_LINES_DROPPED: Family = Family {
    name: "log_lines_dropped_total",
    help: "Log lines dropped because stderr's reader fell behind.",
    labels: &[],
};

pub(super) const TRACE_SPANS: Family = Family {
    name: "trace_spans_total",
    help: "Finished spans by what became of them: exported to the collector, or dropped (queue_full: the export queue was full; export_failed: the collector refused or could not be reached).",
    labels: &["result"],
};

/// Every family, and whether it is a histogram (its series are then
/// `_bucket`, `_sum` and `_count`). A test checks that none is missing.
pub(super) const ALL: [(&Family, bool); 27] = [
    (&REQUESTS, false),
    (&TRANSLATED, false),
    (&REQUEST_DURATION, true),
    (&UPSTREAM_DURATION, true),
    (&REQUEST_BYTES, false),
    (&RESPONSE_BYTES, false),
    (&SSE_OPEN, false),
    (&SSE_EVENTS, false),
    (&SSE_FIRST_EVENT, true),
    (&TASK_STATES, false),
    (&TASK_DURATION, true),
    (&ROUTING, false),
    (&AFFINITY_ENTRIES, false),
    (&CONNECTIONS_OPEN, false),
    (&CONNECTIONS, false),
    (&PROBES, false),
    (&AUTH_FAILURES, false),
    (&REJECTIONS, false),
    (&UPSTREAM_UP, false),
    (&BREAKER_STATE, false),
    (&CARD_REFRESH, false),
    (&CONFIG_RELOADS, false),
    (&BUILD_INFO, false),
    (&CARD_AGE, false),
    (&MEMORY_RELEASED, false),
    (&LOG_LINES_DROPPED, false),
    (&TRACE_SPANS, false),
];
