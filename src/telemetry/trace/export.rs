//! Finished spans on their way to the collector: the SDK's batch processor
//! (its own thread, a bounded queue, `OTEL_BSP_*`) and the OTLP exporter,
//! with a count of what became of every span. The SDK drops a span when
//! its queue is full but only logs that; here the queue's bound is kept
//! one step before it (`Gate`), so every drop is counted in
//! `a2a_gateway_trace_spans_total{result}` and no call ever waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_otlp::{SpanExporter as Otlp, WithExportConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor,
};
use opentelemetry_sdk::Resource;
use prometheus::IntCounterVec;

use super::settings::Settings;
use crate::config::OtlpProtocol;

/// The batch processor in front of the OTLP exporter, counted.
pub fn processor(settings: &Settings, counts: &IntCounterVec) -> Result<Gate, String> {
    let builder = Otlp::builder();
    let exporter = match (settings.protocol, &settings.endpoint) {
        (OtlpProtocol::Grpc, Some(url)) => builder.with_tonic().with_endpoint(url).build(),
        (OtlpProtocol::Grpc, None) => builder.with_tonic().build(),
        (OtlpProtocol::HttpProtobuf, Some(url)) => builder.with_http().with_endpoint(url).build(),
        (OtlpProtocol::HttpProtobuf, None) => builder.with_http().build(),
    }
    .map_err(|e| format!("cannot build the OTLP exporter: {e}"))?;
    Ok(gate(exporter, settings.max_queue, counts))
}

/// `exporter` behind the batch processor and the gate, counted.
fn gate<E: SpanExporter + 'static>(exporter: E, max_queue: usize, counts: &IntCounterVec) -> Gate {
    let pending = Arc::new(AtomicUsize::new(0));
    let counted = Counted {
        inner: exporter,
        pending: pending.clone(),
        exported: counts.with_label_values(&["exported"]),
        failed: counts.with_label_values(&["export_failed"]),
    };
    // The other OTEL_BSP_* variables are read by the builder itself.
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(max_queue)
        .build();
    let batch = BatchSpanProcessor::builder(counted)
        .with_batch_config(config)
        .build();
    Gate {
        inner: batch,
        pending,
        limit: max_queue,
        full: counts.with_label_values(&["queue_full"]),
    }
}

/// Drops (and counts) a finished span when as many are waiting as the
/// batch queue holds; otherwise hands it on, which never blocks.
#[derive(Debug)]
pub struct Gate {
    inner: BatchSpanProcessor,
    /// Spans handed on and not yet through an export attempt: never fewer
    /// than the batch queue holds, so the queue itself is never full.
    pending: Arc<AtomicUsize>,
    limit: usize,
    full: prometheus::IntCounter,
}

impl SpanProcessor for Gate {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.pending.fetch_add(1, Ordering::Relaxed) >= self.limit {
            self.pending.fetch_sub(1, Ordering::Relaxed);
            self.full.inc();
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, counting each batch as exported or failed (a collector
/// that is down, slow past the timeout, or refusing).
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
    exported: prometheus::IntCounter,
    failed: prometheus::IntCounter,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        self.pending.fetch_sub(n, Ordering::Relaxed);
        match &result {
            Ok(()) => self.exported.inc_by(n as u64),
            Err(_) => self.failed.inc_by(n as u64),
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;

    /// Takes every batch, or refuses every batch; with a valve, each
    /// export waits until the valve opens.
    #[derive(Debug)]
    struct Sink(bool, Option<Valve>);

    type Valve = Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>;

    fn open(valve: &Valve) {
        *valve.0.lock().unwrap() = true;
        valve.1.notify_all();
    }

    impl SpanExporter for Sink {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            // The batch processor's own thread: blocking here holds only it.
            if let Some(valve) = &self.1 {
                let mut open = valve.0.lock().unwrap();
                while !*open {
                    open = valve.1.wait(open).unwrap();
                }
            }
            match self.0 {
                true => Ok(()),
                false => Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                    "down".into(),
                )),
            }
        }
    }

    fn counts() -> IntCounterVec {
        IntCounterVec::new(prometheus::Opts::new("t", "t"), &["result"]).unwrap()
    }

    fn end_spans(provider: &SdkTracerProvider, n: usize) {
        let tracer = provider.tracer("t");
        for _ in 0..n {
            tracer.start("s").end();
        }
    }

    #[test]
    fn spans_beyond_the_queue_are_dropped_and_counted_and_the_rest_exported() {
        let counts = counts();
        let valve = Valve::default();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(gate(Sink(true, Some(valve.clone())), 4, &counts))
            .build();
        // The first four wait for an export that cannot end yet (a full
        // batch may start one at once): the other six find no place.
        end_spans(&provider, 10);
        assert_eq!(counts.with_label_values(&["queue_full"]).get(), 6);
        open(&valve);
        provider.force_flush().unwrap();
        assert_eq!(counts.with_label_values(&["exported"]).get(), 4);
        // Exported spans free their places.
        end_spans(&provider, 3);
        provider.force_flush().unwrap();
        assert_eq!(counts.with_label_values(&["exported"]).get(), 7);
        assert_eq!(counts.with_label_values(&["queue_full"]).get(), 6);
    }

    #[test]
    fn a_batch_the_collector_refuses_is_counted_as_failed() {
        let counts = counts();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(gate(Sink(false, None), 16, &counts))
            .build();
        end_spans(&provider, 5);
        let _ = provider.force_flush();
        assert_eq!(counts.with_label_values(&["export_failed"]).get(), 5);
        assert_eq!(counts.with_label_values(&["exported"]).get(), 0);
    }
}
