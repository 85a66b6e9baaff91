//! What the gateway tells its operators: Prometheus metrics, the log
//! (stderr, text or JSON), the access line each call writes, and
//! OpenTelemetry traces.

pub mod access;
pub mod last_minute;
pub mod log;
pub mod metrics;
pub mod push;
pub mod recent_calls;
pub mod trace;
