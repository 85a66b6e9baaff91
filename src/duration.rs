//! Durations written in the configuration.

use std::time::Duration;

/// A duration over zero, as the configuration writes it ("500ms", "30s", "5m"),
/// or why not: every section reads its durations here.
pub fn positive(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be greater than zero".into()),
        Err(_) => Err(format!(
            "expected a duration like \"500ms\", \"30s\" or \"5m\", not \"{text}\""
        )),
    }
}
