//! Every metric family the gateway exports, in one table: its name (after
//! the `a2a_gateway_` prefix), its help text and its labels. What a label
//! may hold is bounded where the family is used (see the module above).

/// One metric family, as registered.
pub(super) struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: &'static [&'static str],
}

/// The families from their rows: each becomes a `Family` constant, and
/// `ALL` lists them with whether each is a histogram (its series are then
/// `_bucket`, `_sum` and `_count`). A test checks that none is missing.
macro_rules! families {
    ($($name:ident $kind:ident $metric:literal [$($label:literal),*] $help:literal;)*) => {
        $(pub(super) const $name: Family = Family {
            name: $metric,
            help: $help,
            labels: &[$($label),*],
        };)*

        pub(super) const ALL: [(&Family, bool); [$(stringify!($name)),*].len()] =
            [$((&$name, families!(@histogram $kind))),*];
    };
    (@histogram histogram) => { true };
    (@histogram series) => { false };
}

families! {
    REQUESTS series "requests_total" ["version", "family", "skill", "upstream", "status", "error", "binding"]
        "Requests by protocol version, method family, skill, upstream, HTTP status, JSON-RPC error class and the client's binding (jsonrpc, http+json).";
    TRANSLATED series "translated_requests_total" ["client_version", "agent_version", "family"]
        "Requests the version bridge translated, by the client's and the agent's A2A version and method family.";
    REQUEST_DURATION histogram "request_duration_seconds" ["family", "upstream"]
        "Whole request, until the answer (or stream) ended.";
    UPSTREAM_DURATION histogram "upstream_duration_seconds" ["upstream"]
        "Time for the upstream to answer with response headers.";
    REQUEST_BYTES series "request_bytes_total" ["upstream"]
        "Request body bytes received.";
    RESPONSE_BYTES series "response_bytes_total" ["upstream"]
        "Response body bytes sent.";
    SSE_OPEN series "sse_streams_open" []
        "SSE streams open now.";
    SSE_EVENTS series "sse_events_total" ["kind"]
        "SSE events forwarded, by kind (status, artifact, task, message, error, other).";
    SSE_FIRST_EVENT histogram "sse_time_to_first_event_seconds" []
        "From the request to the first event relayed.";
    TASK_STATES series "task_states_total" ["skill", "state"]
        "Task states observed in answers, by skill.";
    TASK_DURATION histogram "task_duration_seconds" ["skill"]
        "From a task's first sighting to a terminal state, where both were seen.";
    ROUTING series "routing_decisions_total" ["rule"]
        "Routing decisions by rule (path, affinity, hint, match, default, none).";
    AFFINITY_ENTRIES series "affinity_entries" []
        "Task and context owners remembered.";
    CONNECTIONS_OPEN series "connections_open" []
        "Client connections to the proxy listener open now.";
    CONNECTIONS series "connections_total" []
        "Client connections accepted by the proxy listener.";
    PROBES series "affinity_probes_total" ["outcome"]
        "Unknown tasks looked up by asking the upstreams, by outcome.";
    AUTH_FAILURES series "auth_failures_total" ["scheme", "reason"]
        "Authentication and authorization failures by scheme and reason.";
    REJECTIONS series "rejections_total" ["limit"]
        "Calls refused by a limit (global, caller, upstream, skill, in_flight, streams; rate_store: the shared store could not answer, with on_store_error = deny).";
    RATE_DECISIONS series "rate_limit_decisions_total" ["source", "result"]
        "Rate-limit decisions with a shared store, by who decided (store; local, allow or deny while the store cannot answer) and result (allowed, refused).";
    RATE_STORE_ERRORS series "rate_limit_store_errors_total" ["kind"]
        "Failed asks of the shared rate-limit store, by kind (timeout, connection, script).";
    RATE_STORE_UP series "rate_limit_store_up" []
        "1 while the shared rate-limit store answers, 0 while calls meet the fallback.";
    RATE_STORE_DURATION histogram "rate_limit_store_seconds" []
        "One rate-limit decision's round trip to the shared store.";
    UPSTREAM_UP series "upstream_up" ["upstream"]
        "1 when some replica of the upstream is not ejected.";
    BREAKER_STATE series "upstream_breaker_state" ["upstream", "replica"]
        "Per replica: 0 closed, 1 half-open, 2 open.";
    CARD_REFRESH series "card_refresh_total" ["upstream", "result"]
        "Upstream card refreshes by result (ok, not_modified, error, refused: no valid signature under card_signature = required).";
    CONFIG_RELOADS series "config_reloads_total" ["result"]
        "Configuration reloads by result (ok, failed).";
    BUILD_INFO series "build_info" ["version"]
        "Always 1; the labels say which build runs.";
    CARD_AGE series "card_age_seconds" ["upstream"]
        "Age of the upstream card in use (-1: none).";
    CARD_SIGNATURE_CHECKS series "card_signature_checks_total" ["upstream", "result"]
        "Checks of agents' card signatures (card_signature = verify or required) by result (valid, unsigned, invalid).";
    CARD_SIGNATURE_VALID series "card_signature_valid" ["upstream"]
        "1 while the agent's card carries a valid signature from a trusted key, 0 while it does not (agents whose card_signature is verify or required).";
    PUSH_CALLBACKS series "push_relay_callbacks_total" ["status"]
        "Agents' posts to the push relay's callback, by the status answered (202 queued; 400, 401, 404, 410, 413, 429 refused).";
    PUSH_DELIVERIES series "push_relay_deliveries_total" ["result"]
        "Notifications the push relay was done with, by result (delivered; rejected: the webhook answered 4xx; refused: its address is not allowed at delivery; gave_up: every attempt failed; deleted: the config was deleted first).";
    PUSH_RETRIES series "push_relay_retries_total" []
        "Delivery attempts after a notification's first (5xx, 429 or a connection error).";
    PUSH_DROPPED series "push_relay_dropped_total" []
        "Notifications dropped unsent because a queue was full (the oldest go first).";
    PUSH_QUEUED series "push_relay_queued" []
        "Notifications queued for delivery now.";
    PUSH_DELIVERY histogram "push_relay_delivery_seconds" ["result"]
        "From a notification's arrival at the callback to the end of its delivery.";
    MEMORY_RELEASED series "memory_released_bytes_total" []
        "Resident memory returned to the system after bursts (freed heap malloc had kept).";
    LOG_LINES_DROPPED series "log_lines_dropped_total" []
        "Log lines dropped because stderr's reader fell behind.";
    TRACE_SPANS series "trace_spans_total" ["result"]
        "Finished spans by what became of them: exported to the collector, or dropped (queue_full: the export queue was full; export_failed: the collector refused or could not be reached).";
}
