//! A log line written on a traced call's way carries the call's
//! `trace_id` and `span_id` (its server span), so that a line leads to its
//! trace and back: in JSON among the line's `fields`, in text after them
//! as `trace_id=… span_id=…`. The call's context is current while its
//! future and its answer's body are polled (`crate::call`,
//! `crate::telemetry::access`); lines written outside any call are as
//! they were. The access line names its ids itself.

use std::fmt::{self, Write as _};

use opentelemetry::trace::TraceContextExt;
use opentelemetry::Context;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::access_line::TARGET;

/// Wraps the event format `inner`: JSON lines when `json`, else text.
pub struct WithTraceIds<F> {
    inner: F,
    json: bool,
}

impl<F> WithTraceIds<F> {
    pub fn new(inner: F, json: bool) -> Self {
        Self { inner, json }
    }
}

/// The current call's trace and span ids, when there is one.
fn current() -> Option<(String, String)> {
    Context::map_current(|cx| {
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
    })
}

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let ids = match event.metadata().target() {
            TARGET => None,
            _ => current(),
        };
        let Some((trace_id, span_id)) = ids else {
            return self.inner.format_event(ctx, writer, event);
        };
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        writer.write_str(&with_ids(&line, self.json, &trace_id, &span_id))
    }
}

/// `line` as the inner format wrote it, with the ids added.
fn with_ids(line: &str, json: bool, trace_id: &str, span_id: &str) -> String {
    let mut out = String::with_capacity(line.len() + 80);
    if json {
        const FIELDS: &str = "\"fields\":{";
        if let Some(at) = line.find(FIELDS).map(|i| i + FIELDS.len()) {
            let (head, tail) = line.split_at(at);
            let comma = if tail.starts_with('}') { "" } else { "," };
            let _ = write!(
                out,
                "{head}\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"{comma}{tail}"
            );
            return out;
        }
        return line.to_string();
    }
    let body = line.strip_suffix('\n').unwrap_or(line);
    let _ = writeln!(out, "{body} trace_id={trace_id} span_id={span_id}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const S: &str = "00f067aa0ba902b7";

    #[test]
    fn json_lines_get_the_ids_among_their_fields() {
        let line = "{\"timestamp\":\"t\",\"level\":\"WARN\",\"fields\":{\"message\":\"m\"},\"target\":\"x\"}\n";
        let out = with_ids(line, true, T, S);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["fields"]["trace_id"], T);
        assert_eq!(v["fields"]["span_id"], S);
        assert_eq!(v["fields"]["message"], "m");
        let empty = "{\"fields\":{},\"target\":\"x\"}\n";
        let v: serde_json::Value = serde_json::from_str(&with_ids(empty, true, T, S)).unwrap();
        assert_eq!(v["fields"]["span_id"], S);
    }

    #[test]
    fn text_lines_get_the_ids_after_their_fields() {
        let out = with_ids("2026 WARN x: m a=1\n", false, T, S);
        assert_eq!(
            out,
            format!("2026 WARN x: m a=1 trace_id={T} span_id={S}\n")
        );
    }
}

#[cfg(test)]
mod current_tests {
    use super::*;
    use opentelemetry::trace::{Tracer as _, TracerProvider as _};

    #[test]
    fn an_attached_calls_context_is_found() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let tracer = provider.tracer("t");
        let span = tracer.start("x");
        let cx = Context::new().with_span(span);
        assert!(current().is_none());
        let _g = cx.attach();
        assert!(current().is_some());
    }
}
