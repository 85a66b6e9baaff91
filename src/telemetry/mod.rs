//! What the gateway tells its operators: Prometheus metrics, the log
//! (stderr, text or JSON), the access line each call writes, and
//! OpenTelemetry traces.

pub mod access;
pub mod log;
pub mod metrics;
pub mod push;
pub mod trace;
