//! What the gateway tells its operators: Prometheus metrics, the log
//! (stderr, text or JSON) and the access line each call writes.

pub mod access;
pub mod log;
pub mod metrics;
