//! Where the gateway's log lines go. Each line is formatted on the thread
//! that logs it and queued for one writer thread (`queue`), which writes
//! whatever has gathered to stderr in one write. A request never waits for
//! stderr: when the reader of the logs stalls (a full pipe, a stuck log
//! agent), lines beyond the queue are dropped and counted
//! (`a2a_gateway_log_lines_dropped_total`) instead of stalling every worker.

pub mod access_line;
#[cfg(test)]
pub(crate) mod capture;
mod queue;
mod trace_ids;

use std::sync::{Arc, OnceLock};

use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

static QUEUE: OnceLock<Arc<queue::Queue>> = OnceLock::new();

/// Set when access lines are written straight into the queue: the log is
/// plain text or JSON, not a terminal's colours (`access_line`).
static ACCESS: OnceLock<(Arc<queue::Queue>, LogFormat)> = OnceLock::new();

/// Flushes what is queued when dropped (waiting about a second at most), so
/// keep it until the process ends.
pub struct LogGuard {
    _writer: queue::Guard,
}

/// Installs the global subscriber with the configured level and format.
/// `RUST_LOG`, when set, wins over the file for ad-hoc debugging. `None`
/// when a subscriber was already installed (or no thread could be started).
pub fn init(config: &Config) -> Option<LogGuard> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (lines, writer) = queue::start(std::io::stderr()).ok()?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(queue::Lines(lines.clone()));
    let installed = match config.log.format {
        LogFormat::Json => (builder.json())
            .map_event_format(|f| trace_ids::WithTraceIds::new(f, true))
            .try_init(),
        LogFormat::Text => builder
            .map_event_format(|f| trace_ids::WithTraceIds::new(f, false))
            .try_init(),
    };
    installed.ok()?;
    if !ansi {
        let _ = ACCESS.set((lines.clone(), config.log.format));
    }
    let _ = QUEUE.set(lines);
    Some(LogGuard { _writer: writer })
}

/// Whether the filter lets access lines through: asked before a line's
/// fields are gathered.
pub fn access_wanted() -> bool {
    tracing::enabled!(target: access_line::TARGET, tracing::Level::INFO)
}

/// Logs one call's access line (see [`access_wanted`]).
pub fn access(fields: &access_line::Fields) {
    match ACCESS.get() {
        Some((queue, format)) => access_line::with_line(fields, *format, |line| queue.push(line)),
        None => fields.trace(),
    }
}

/// Log lines dropped so far because the log reader fell behind.
pub fn dropped_lines() -> u64 {
    QUEUE.get().map_or(0, |queue| queue.dropped())
}
