//! The spans of one call. The server span is opened when the call is
//! taken and ended when its record is written (`crate::telemetry::access`),
//! so it covers a stream's whole life and an abandoned call too. The client
//! span covers the call to the agent, failovers included, each attempt an
//! event on it; a probe for a task's owner has a span of its own. What the
//! answer and the stream's events say (task, context, state) lands on the
//! server span; each SSE event is an event on it, up to a bound, and the
//! rest are counted.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::HeaderInjector;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Span, Tracer};

use crate::a2a::seen::Seen;
use crate::http::error::codes;

/// What one call's record says when it ends: the span's attributes. The
/// labels are the gateway's own static text, so most attributes cost no
/// allocation.
pub struct Ended<'a> {
    /// The A2A method as the client named it; `None` if it was never read.
    pub method: Option<&'static str>,
    /// `jsonrpc` or `http+json`.
    pub binding: &'static str,
    /// The client's A2A version, once read.
    pub version: Option<&'static str>,
    /// The agent's binding and version, once routed.
    pub agent: Option<(&'static str, &'static str)>,
    pub skill: Option<&'a str>,
    pub upstream: Option<&'a Arc<str>>,
    pub rule: &'static str,
    /// The verified caller's id (never a credential).
    pub caller: Option<&'a str>,
    pub request_id: &'a str,
    pub status: u16,
    /// The gateway's JSON-RPC error code, when it answered one.
    pub code: Option<i32>,
    pub error_class: &'static str,
    pub outcome: &'static str,
}

/// One call's spans.
pub struct CallTrace {
    tracer: Tracer,
    /// The server span, as the parent of the others.
    cx: Context,
    max_events: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    client: Option<Span>,
    replica: Option<Arc<str>>,
    task: Option<String>,
    context: Option<String>,
    task_state: Option<&'static str>,
    events: u32,
    events_dropped: u32,
}

impl CallTrace {
    pub(super) fn new(tracer: Tracer, cx: Context, max_events: u32) -> Self {
        Self {
            tracer,
            cx,
            max_events,
            state: Mutex::default(),
        }
    }

    /// The server span's context: the log lines of the call carry its ids.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The server span as a W3C `traceparent`, for work done later in
    /// this call's trace (the push relay seals it with a webhook).
    pub fn traceparent(&self) -> Option<String> {
        let mut headers = HeaderMap::new();
        inject(self.cx.span().span_context(), &mut headers);
        let value = headers.get("traceparent")?.to_str().ok()?;
        Some(value.to_string())
    }

    /// The server span's trace and span ids, as hex.
    pub fn ids(&self) -> (String, String) {
        let span = self.cx.span();
        let sc = span.span_context();
        (sc.trace_id().to_string(), sc.span_id().to_string())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves only attributes behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the client span for the call to `upstream`, and gives the
    /// agent's request this span as its parent (`traceparent`,
    /// `tracestate`), in place of the client's.
    pub fn client(
        &self,
        name: &'static str,
        upstream: &Arc<str>,
        agent: (&'static str, &'static str),
        headers: &mut HeaderMap,
    ) {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("a2a.upstream", upstream.clone()),
                KeyValue::new("a2a.agent.binding", agent.0),
                KeyValue::new("a2a.agent.protocol.version", agent.1),
            ])
            .start_with_context(&self.tracer, &self.cx);
        inject(span.span_context(), headers);
        self.state().client = Some(span);
    }

    /// One attempt on `replica` (its endpoint URL): how it went.
    pub fn attempt(&self, replica: &str, outcome: Result<u16, &'static str>) {
        let replica: Arc<str> = replica.into();
        let mut attributes = vec![KeyValue::new("a2a.upstream.replica", replica.clone())];
        match outcome {
            Ok(status) => {
                let status = i64::from(status);
                attributes.push(KeyValue::new("http.response.status_code", status));
            }
            Err(why) => attributes.push(KeyValue::new("error.type", why)),
        }
        let mut state = self.state();
        if let Some(span) = state.client.as_mut() {
            span.add_event("attempt", attributes);
        }
        state.replica = Some(replica);
    }

    /// A span for one owner lookup of `task`.
    pub fn probe(&self, task: &str) -> Probe {
        let span = self
            .tracer
            .span_builder("probe task owner")
            .with_kind(SpanKind::Internal)
            .with_attributes([KeyValue::new("a2a.task.id", task.to_string())])
            .start_with_context(&self.tracer, &self.cx);
        Probe(span)
    }

    /// The task, context and state an answer or a chunk of events named.
    /// Events are recorded as span events, up to the bound.
    pub fn saw(&self, seen: &Seen<'_>, events: bool) {
        let mut state = self.state();
        if let Some(task) = seen.tasks.first() {
            state.task.get_or_insert_with(|| task.to_string());
        }
        if let Some(context) = seen.contexts.first() {
            state.context.get_or_insert_with(|| context.to_string());
        }
        if let Some((_, task_state)) = seen.states.last() {
            state.task_state = Some(task_state);
        }
        if !events {
            return;
        }
        let span = self.cx.span();
        for kind in &seen.kinds {
            if state.events >= self.max_events {
                state.events_dropped += 1;
                continue;
            }
            state.events += 1;
            span.add_event_with_timestamp(
                "sse event",
                SystemTime::now(),
                vec![KeyValue::new("a2a.event.kind", *kind)],
            );
        }
    }

    /// A task the request names (before any answer says one).
    pub fn task(&self, task: &str) {
        self.state().task.get_or_insert_with(|| task.to_string());
    }

    /// Ends the client span, then the server span, with what the record
    /// says.
    pub fn end(&self, ended: &Ended<'_>) {
        let mut state = self.state();
        if let Some(mut client) = state.client.take() {
            client_attributes(&mut client, ended, state.replica.as_ref());
            client.end();
        }
        let span = self.cx.span();
        span.update_name(ended.method.unwrap_or("a2a call"));
        span.set_attributes(server_attributes(ended, &state));
        if let Some(status) = server_status(ended) {
            span.set_status(status);
        }
        span.end();
    }
}

impl Drop for CallTrace {
    // A call the record never saw end (it always should) still closes its
    // spans rather than leaking them open.
    fn drop(&mut self) {
        if let Some(mut client) = self.state().client.take() {
            client.end();
        }
    }
}

/// An owner lookup's span.
pub struct Probe(Span);

impl Probe {
    /// The probe's own context on a request it sends.
    pub fn inject(&self, headers: &mut HeaderMap) {
        inject(self.0.span_context(), headers);
    }

    /// `owner`: the upstream that knew the task, if any did.
    pub fn end(mut self, asked: usize, owner: Option<&str>) {
        self.0
            .set_attribute(KeyValue::new("a2a.probe.asked", asked as i64));
        if let Some(owner) = owner {
            self.0
                .set_attribute(KeyValue::new("a2a.upstream", owner.to_string()));
        }
        self.0.end();
    }
}

/// `traceparent` (and `tracestate`) naming `parent`, in place of any the
/// request had.
fn inject(parent: &SpanContext, headers: &mut HeaderMap) {
    headers.remove("traceparent");
    headers.remove("tracestate");
    let cx = Context::new().with_remote_span_context(parent.clone());
    TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
}

fn server_attributes(ended: &Ended<'_>, state: &State) -> Vec<KeyValue> {
    let mut a = Vec::with_capacity(24);
    let status = i64::from(ended.status);
    a.push(KeyValue::new("http.response.status_code", status));
    a.push(KeyValue::new("a2a.binding", ended.binding));
    a.push(KeyValue::new("a2a.outcome", ended.outcome));
    a.push(KeyValue::new("a2a.routing.rule", ended.rule));
    a.push(KeyValue::new(
        "a2a.request_id",
        ended.request_id.to_string(),
    ));
    match ended.binding {
        "jsonrpc" => a.push(KeyValue::new("rpc.system", "jsonrpc")),
        "grpc" => a.push(KeyValue::new("rpc.system", "grpc")),
        _ => {}
    }
    if let Some(method) = ended.method {
        a.push(KeyValue::new("a2a.method", method));
        a.push(KeyValue::new("rpc.method", method));
    }
    if let Some(version) = ended.version {
        a.push(KeyValue::new("a2a.protocol.version", version));
    }
    // The agent's side, when the gateway translated the call.
    if let (Some((binding, version)), Some(client_version)) = (ended.agent, ended.version) {
        if binding != ended.binding || version != client_version {
            a.push(KeyValue::new("a2a.agent.binding", binding));
            a.push(KeyValue::new("a2a.agent.protocol.version", version));
        }
    }
    push_where_and_who(&mut a, ended, state);
    if let Some(code) = ended.code {
        a.push(KeyValue::new("a2a.error.code", i64::from(code)));
        a.push(KeyValue::new("rpc.jsonrpc.error_code", i64::from(code)));
        a.push(KeyValue::new("error.type", ended.error_class));
    }
    let events = i64::from(state.events + state.events_dropped);
    if events > 0 {
        a.push(KeyValue::new("a2a.stream.events", events));
        let dropped = i64::from(state.events_dropped);
        a.push(KeyValue::new("a2a.stream.events_dropped", dropped));
    }
    a
}

/// The agent and replica that answered, and the skill, caller, task and
/// context the call was about, where known.
fn push_where_and_who(a: &mut Vec<KeyValue>, ended: &Ended<'_>, state: &State) {
    if let Some(upstream) = ended.upstream {
        a.push(KeyValue::new("a2a.upstream", upstream.clone()));
    }
    if let Some(replica) = &state.replica {
        a.push(KeyValue::new("a2a.upstream.replica", replica.clone()));
    }
    if let Some(task_state) = state.task_state {
        a.push(KeyValue::new("a2a.task.state", task_state));
    }
    for (key, value) in [
        ("a2a.skill", ended.skill),
        ("a2a.caller.id", ended.caller),
        ("a2a.task.id", state.task.as_deref()),
        ("a2a.context.id", state.context.as_deref()),
    ] {
        if let Some(value) = value {
            a.push(KeyValue::new(key, value.to_string()));
        }
    }
}

/// Who failed decides: the gateway or the agent (5xx, a stream the agent
/// broke or the drain ended) is an error; a refused client's call is not
/// (OpenTelemetry's rule for server spans: 4xx leave the status unset).
fn server_status(ended: &Ended<'_>) -> Option<Status> {
    let failed = ended.status >= 500 || matches!(ended.outcome, "failed" | "shutdown");
    failed.then(|| Status::error(format!("{} ({})", ended.error_class, ended.outcome)))
}

/// Whether the agent failed this call: it could not be reached, timed
/// out, answered badly or broke its stream.
fn agent_failed(ended: &Ended<'_>) -> bool {
    matches!(
        ended.code,
        Some(
            codes::UPSTREAM_UNAVAILABLE
                | codes::UPSTREAM_TIMEOUT
                | codes::UPSTREAM_BAD_RESPONSE
                | codes::UPSTREAM_STREAM_BROKEN
                | codes::UPSTREAM_STREAM_IDLE
                | codes::UPSTREAM_EJECTED
        )
    ) || (ended.code.is_none() && ended.status >= 500)
}

fn client_attributes(span: &mut Span, ended: &Ended<'_>, replica: Option<&Arc<str>>) {
    if let Some(replica) = replica {
        span.set_attribute(KeyValue::new("a2a.upstream.replica", replica.clone()));
        if let Ok(uri) = replica.parse::<http::Uri>() {
            if let Some(host) = uri.host() {
                span.set_attribute(KeyValue::new("server.address", host.to_string()));
            }
            if let Some(port) = uri.port_u16() {
                span.set_attribute(KeyValue::new("server.port", i64::from(port)));
            }
        }
    }
    if agent_failed(ended) {
        span.set_attribute(KeyValue::new("error.type", ended.error_class));
        span.set_status(Status::error(ended.error_class));
    }
}
