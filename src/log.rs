//! Where the gateway's log lines go. Each line is formatted on the thread
//! that logs it and handed to one writer thread, which writes whatever has
//! queued up to stderr in as few writes as it can. A request never waits for
//! stderr: when the reader of the logs stalls (a full pipe, a stuck log
//! agent), lines beyond the queue are dropped and counted
//! (`a2a_gateway_log_lines_dropped_total`) instead of stalling every worker.

use std::io::{BufWriter, Stderr};
use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat};

/// Lines waiting for the writer at most (a few MiB of access lines); more
/// are dropped while the reader is stalled.
const QUEUE_LINES: usize = 16_384;

/// One write per batch of lines instead of one per line.
const WRITE_BUFFER: usize = 64 * 1024;

static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Flushes what is queued when dropped (waiting about a second at most), so
/// keep it until the process ends.
pub struct LogGuard {
    _worker: WorkerGuard,
}

/// Installs the global subscriber with the configured level and format.
/// `RUST_LOG`, when set, wins over the file for ad-hoc debugging. `None`
/// when a subscriber was already installed.
pub fn init(config: &Config) -> Option<LogGuard> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, worker) = NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUE_LINES)
        .lossy(true)
        .thread_name("a2a-gateway-log")
        .finish(stderr_writer());
    let dropped = writer.error_counter();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    let installed = match config.log.format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    installed.ok()?;
    let _ = DROPPED.set(dropped);
    Some(LogGuard { _worker: worker })
}

/// Buffered: the writer thread flushes after each batch it drains.
fn stderr_writer() -> BufWriter<Stderr> {
    BufWriter::with_capacity(WRITE_BUFFER, std::io::stderr())
}

/// Log lines dropped so far because the log reader fell behind.
pub fn dropped_lines() -> u64 {
    DROPPED
        .get()
        .map_or(0, |counter| counter.dropped_lines() as u64)
}
