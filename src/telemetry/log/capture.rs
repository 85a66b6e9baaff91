//! For tests: what `tracing_subscriber::fmt` writes, as `log::init` sets it
//! up without a terminal, caught in memory.

use std::sync::{Arc, Mutex, MutexGuard};

use tracing::dispatcher::DefaultGuard;
use tracing::Dispatch;

use crate::config::LogFormat;

#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    /// A subscriber writing here in `format`, every level.
    pub fn dispatch(&self, format: LogFormat) -> Dispatch {
        let writer = self.clone();
        let builder = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone());
        match format {
            LogFormat::Text => Dispatch::new(builder.finish()),
            LogFormat::Json => Dispatch::new(builder.json().finish()),
        }
    }

    /// Installs [`Capture::dispatch`] as this thread's default until the
    /// guard is dropped, and has tracing work out again which callsites it
    /// wants (see [`serial`]).
    pub fn install(&self, format: LogFormat) -> DefaultGuard {
        let guard = tracing::dispatcher::set_default(&self.dispatch(format));
        tracing::callsite::rebuild_interest_cache();
        guard
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

/// Held by a test that captures lines at a callsite, and by any other test
/// that hits the same callsite. tracing caches each callsite's interest for
/// the whole process. A callsite hit for the first time on one thread,
/// while another thread registers the first scoped dispatcher, can be
/// cached as "never" (tracing-core computes it from the one dispatcher it
/// then sees, without a lock), and the capturing test then finds its line
/// missing. Taken in turn, the two cannot overlap.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
