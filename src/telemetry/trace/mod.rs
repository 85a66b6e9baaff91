//! OpenTelemetry traces, off unless an OTLP endpoint is configured
//! (`settings`). With export off no span is made and a call pays one
//! branch; with it on, each call has a server span continuing the
//! client's W3C trace context, a client span whose context the agent
//! receives, and spans for owner probes (`call`). Spans go out in batches
//! from the SDK's own thread and are dropped, and counted, rather than
//! ever holding a call up (`export`).
//!
//! The spans are made with the OpenTelemetry API directly rather than
//! through `tracing` spans and tracing-opentelemetry: the gateway keeps no
//! `tracing` span per call (each cost more than the rest of a proxied
//! call's own work, `crate::server::stack`), and the record that every
//! call already writes once (`crate::telemetry::access`) holds everything
//! the server span's attributes say.

mod call;
mod export;
pub mod settings;

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use opentelemetry_sdk::Resource;

pub use call::{CallTrace, Ended, Probe};

use crate::config::Telemetry;

/// The tracer of a gateway that exports traces.
pub struct Tracing {
    provider: SdkTracerProvider,
    tracer: Tracer,
    propagator: TraceContextPropagator,
    max_events: u32,
}

impl Tracing {
    /// Starts export when the file or the environment asks for it; `None`
    /// when neither does. `counts` is `a2a_gateway_trace_spans_total`.
    pub fn start(
        file: &Telemetry,
        counts: &prometheus::IntCounterVec,
    ) -> Result<Option<Arc<Tracing>>, String> {
        let Some(settings) = settings::resolve(file, |name| std::env::var(name).ok())? else {
            return Ok(None);
        };
        let processor = export::processor(&settings, counts)?;
        let mut resource = Resource::builder();
        if let Some(name) = &settings.service_name {
            resource = resource.with_service_name(name.clone());
        }
        let mut builder = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.build());
        if let Some(sampler) = settings.sampler {
            builder = builder.with_sampler(sampler);
        }
        let provider = builder.build();
        let tracer = provider.tracer(env!("CARGO_PKG_NAME"));
        tracing::info!(protocol = ?settings.protocol, "exporting traces over OTLP");
        Ok(Some(Arc::new(Tracing {
            provider,
            tracer,
            propagator: TraceContextPropagator::new(),
            max_events: settings.max_stream_events,
        })))
    }

    /// The spans of a call that arrived with `headers`: a child of the
    /// client's span when they carry a W3C trace context, else a new trace.
    pub fn call(&self, headers: &HeaderMap) -> CallTrace {
        let parent = self.propagator.extract(&HeaderExtractor(headers));
        let span = self
            .tracer
            .span_builder("a2a call")
            .with_kind(SpanKind::Server)
            .start_with_context(&self.tracer, &parent);
        let cx = parent.with_span(span);
        CallTrace::new(self.tracer.clone(), cx, self.max_events)
    }

    /// The span of one push delivery (`crate::push_relay`), begun at
    /// `began`, in the trace of the call that set the webhook: its
    /// `traceparent` was sealed with it. `failed` sets the error status.
    pub fn push_delivery(
        &self,
        traceparent: Option<&str>,
        began: std::time::SystemTime,
        attributes: Vec<opentelemetry::KeyValue>,
        failed: Option<String>,
    ) {
        use opentelemetry::trace::Span as _;
        let mut headers = HeaderMap::new();
        if let Some(value) = traceparent.and_then(|t| http::HeaderValue::from_str(t).ok()) {
            headers.insert("traceparent", value);
        }
        let parent = self.propagator.extract(&HeaderExtractor(&headers));
        let mut span = self
            .tracer
            .span_builder("push delivery")
            .with_kind(SpanKind::Client)
            .with_start_time(began)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        if let Some(why) = failed {
            span.set_status(opentelemetry::trace::Status::error(why));
        }
        span.end();
    }

    /// Exports what is queued now, and waits for it.
    pub async fn flush(self: Arc<Self>) {
        let _ = tokio::task::spawn_blocking(move || self.provider.force_flush()).await;
    }

    /// Exports what is queued, waiting `within` at most (the drain's
    /// remainder); off the async threads, as the SDK blocks.
    pub async fn shutdown(self: Arc<Self>, within: Duration) {
        let done = tokio::task::spawn_blocking(move || self.provider.shutdown_with_timeout(within));
        match tokio::time::timeout(within + Duration::from_millis(100), done).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "traces not all exported at shutdown"),
            _ => tracing::warn!(
                "traces not all exported at shutdown: the exporter did not finish in time"
            ),
        }
    }
}
