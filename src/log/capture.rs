//! For tests: what `tracing_subscriber::fmt` writes, as `log::init` sets it
//! up without a terminal, caught in memory.

use std::sync::{Arc, Mutex};

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

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
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
