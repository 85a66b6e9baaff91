//! The lines' way to stderr. A thread that logs appends its formatted line
//! to one shared buffer (a short lock and a copy); one writer thread wakes
//! for the first line after a quiet spell, lets more gather for `GATHER`,
//! then writes them all in one `write`. Under load that is one wake-up and
//! one system call per few dozen access lines, instead of a channel send and,
//! often, a wake-up of the writer per line.
//!
//! When stderr's reader stalls, the writer blocks in `write` while lines keep
//! queueing up to `MAX_QUEUED_BYTES`; beyond that they are dropped and
//! counted, so a request never waits for stderr.
//!
//! This stands in for tracing-appender's non-blocking writer. Measured at
//! 5k calls a second with one access line each (bench/profile.md, "The
//! access log"): 0.89–0.97 CPU seconds per 10k calls through
//! tracing-appender, 0.84–0.88 through this queue, 0.74–0.76 with no access
//! log, so the access line's cost fell by about a third. Its channel's
//! receiver spun in `sched_yield`, 12 % of the gateway's samples under load.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Queued bytes at most while the writer is blocked (about 20,000 access
/// lines); more lines are dropped.
pub const MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// How long lines may gather after the first one before they are written.
const GATHER: Duration = Duration::from_millis(2);

/// A batch buffer larger than this is given back after a small batch (after
/// a stall, say), so the queue does not keep its peak.
const KEEP_CAPACITY: usize = 256 * 1024;

/// How long the guard waits at exit for the queue to be written.
const FLUSH_AT_EXIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    closing: bool,
}

/// Shared by the threads that log and the writer.
#[derive(Default)]
pub struct Queue {
    pending: Mutex<Pending>,
    /// Signalled when the first line lands in an empty queue, and at exit.
    ready: Condvar,
    dropped: AtomicU64,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock leaves whole lines behind: go on.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one formatted line (or drops and counts it when full).
    pub fn push(&self, line: &[u8]) {
        let mut pending = self.lock();
        if pending.bytes.len() + line.len() > MAX_QUEUED_BYTES {
            drop(pending);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let first = pending.bytes.is_empty();
        pending.bytes.extend_from_slice(line);
        drop(pending);
        if first {
            self.ready.notify_one();
        }
    }

    /// Lines dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits for lines; `None` once closing with nothing left to write.
    fn wait(&self) -> Option<bool> {
        let mut pending = self.lock();
        while pending.bytes.is_empty() && !pending.closing {
            pending = self
                .ready
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        (!pending.bytes.is_empty()).then_some(pending.closing)
    }

    /// Swaps what is queued into `batch` (which must be empty).
    fn take(&self, batch: &mut Vec<u8>) {
        std::mem::swap(&mut self.lock().bytes, batch);
    }
}

/// Starts the writer thread over `out`. Dropping the guard writes what is
/// queued (waiting `FLUSH_AT_EXIT` at most) and stops it.
pub fn start<W: Write + Send + 'static>(out: W) -> std::io::Result<(Arc<Queue>, Guard)> {
    let queue = Arc::new(Queue::default());
    let (done, finished) = mpsc::channel();
    let writer = queue.clone();
    thread::Builder::new()
        .name("a2a-gateway-log".into())
        .spawn(move || {
            write_until_closed(&writer, out);
            let _ = done.send(());
        })?;
    let guard = Guard {
        queue: queue.clone(),
        finished,
    };
    Ok((queue, guard))
}

fn write_until_closed<W: Write>(queue: &Queue, mut out: W) {
    let mut batch = Vec::new();
    while let Some(closing) = queue.wait() {
        if !closing {
            thread::sleep(GATHER);
        }
        queue.take(&mut batch);
        // Nothing to do with an error writing stderr but to go on.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        if batch.capacity() > KEEP_CAPACITY && batch.len() < KEEP_CAPACITY / 4 {
            batch = Vec::new();
        }
        batch.clear();
    }
}

/// Keep it until the process ends.
pub struct Guard {
    queue: Arc<Queue>,
    finished: mpsc::Receiver<()>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.queue.lock().closing = true;
        self.queue.ready.notify_one();
        let _ = self.finished.recv_timeout(FLUSH_AT_EXIT);
    }
}

/// What `tracing_subscriber::fmt` writes each formatted event to: the event
/// comes as one `write` of a whole line.
#[derive(Clone)]
pub struct Lines(pub Arc<Queue>);

impl Write for &Queue {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.push(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = &'a Queue;

    fn make_writer(&'a self) -> Self::Writer {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A writer whose output the test can read, and can hold shut.
    #[derive(Clone, Default)]
    struct Sink {
        written: Arc<Mutex<Vec<u8>>>,
        writes: Arc<AtomicU64>,
        gate: Arc<Mutex<()>>,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _open = self.gate.lock().unwrap();
            self.written.lock().unwrap().extend_from_slice(buf);
            self.writes.fetch_add(1, Ordering::Relaxed);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn wait_for(sink: &Sink, bytes: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while sink.written.lock().unwrap().len() < bytes {
            assert!(Instant::now() < deadline, "lines not written");
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn lines_arriving_together_go_out_in_one_write() {
        let sink = Sink::default();
        let (queue, _guard) = start(sink.clone()).unwrap();
        for i in 0..100 {
            queue.push(format!("line {i:03}\n").as_bytes());
        }
        wait_for(&sink, 900);
        let text = String::from_utf8(sink.written.lock().unwrap().clone()).unwrap();
        let expected: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        assert_eq!(text, expected, "every line, whole and in order");
        assert!(sink.writes.load(Ordering::Relaxed) <= 2);
    }

    #[test]
    fn a_stalled_writer_drops_and_counts_what_does_not_fit_then_catches_up() {
        let sink = Sink::default();
        let stall = sink.gate.lock().unwrap();
        let (queue, guard) = start(sink.clone()).unwrap();
        queue.push(b"first\n");
        thread::sleep(Duration::from_millis(20)); // the writer is stuck in write
        let line = vec![b'x'; 1023];
        let fits = MAX_QUEUED_BYTES / 1024;
        for _ in 0..fits + 10 {
            queue.push(&[line.as_slice(), b"\n"].concat());
        }
        assert_eq!(queue.dropped(), 10);
        drop(stall);
        drop(guard); // flushes what is queued
        let written = sink.written.lock().unwrap().len();
        assert_eq!(written, 6 + fits * 1024);
    }

    #[test]
    fn the_guard_writes_what_is_queued_at_exit() {
        let sink = Sink::default();
        let (queue, guard) = start(sink.clone()).unwrap();
        queue.push(b"last words\n");
        drop(guard);
        assert_eq!(sink.written.lock().unwrap().as_slice(), b"last words\n");
    }
}
