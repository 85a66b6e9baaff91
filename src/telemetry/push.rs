//! What the push relay's deliveries leave behind: counted by result,
//! timed from their arrival at the callback, their retries counted, and a
//! span each in the trace of the call that set the webhook.

use std::sync::Arc;

use opentelemetry::KeyValue;

use super::metrics::Metrics;
use super::trace::Tracing;
use crate::push_relay::deliver::{destination, Delivered};
use crate::push_relay::queue::{Job, Observe};

/// Each finished delivery: counted by result, timed from its arrival,
/// its retries counted, and its span.
pub fn observe(metrics: Arc<Metrics>, tracing: Option<Arc<Tracing>>) -> Observe {
    Box::new(move |job, outcome, began| {
        let result = outcome.label();
        metrics.push_deliveries.with_label_values(&[result]).inc();
        let waited = job.queued_at.elapsed().as_secs_f64();
        metrics
            .push_delivery
            .with_label_values(&[result])
            .observe(waited);
        let attempts = attempts(outcome);
        if attempts > 1 {
            metrics.push_retries.inc_by(u64::from(attempts - 1));
        }
        if let Some(tracing) = &tracing {
            let failed = match outcome {
                Delivered::Ok { .. } => None,
                other => Some(format!("{other:?}")),
            };
            let traceparent = job.config.traceparent.as_deref();
            tracing.push_delivery(traceparent, began, attributes(job, outcome), failed);
        }
    })
}

fn attempts(outcome: &Delivered) -> u32 {
    match outcome {
        Delivered::Ok { attempts, .. }
        | Delivered::Rejected { attempts, .. }
        | Delivered::GaveUp { attempts, .. } => *attempts,
        Delivered::Refused(_) => 1,
        Delivered::Deleted => 0,
    }
}

/// What the span says: where (the webhook's origin only: its path and
/// query may hold secrets), for which task, in which shape, and how it
/// went.
fn attributes(job: &Job, outcome: &Delivered) -> Vec<KeyValue> {
    let config = &job.config;
    let mut attributes = vec![
        KeyValue::new("a2a.push.destination", destination(&config.url)),
        KeyValue::new("a2a.task.id", config.task_id.clone()),
        KeyValue::new("a2a.protocol.version", config.version.clone()),
        KeyValue::new("a2a.agent.protocol.version", config.agent_version.clone()),
        KeyValue::new("a2a.push.result", outcome.label()),
        KeyValue::new("a2a.push.attempts", i64::from(attempts(outcome))),
    ];
    if let Delivered::Ok { status, .. } | Delivered::Rejected { status, .. } = outcome {
        attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(*status),
        ));
    }
    attributes
}
