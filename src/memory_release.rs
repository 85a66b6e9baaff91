//! Gives freed heap memory back to the operating system after a burst.
//!
//! glibc's malloc keeps what a burst freed (5,000 closed HTTP/1.1 streams
//! leave about 155 MiB behind) and returns only the top of each heap; the
//! rest stays resident until the same sizes are allocated again. A pod that
//! once took a burst would then report its peak forever. So every
//! `server.release_memory_interval` the gateway compares two cheap readings
//! (no lock is taken): the connections and streams open now against their
//! peak since the last release, and its resident memory against what it was
//! after that release. When a burst has drained (half of the peak gone, and
//! at least `DRAINED_AT`) and memory grew by `RELEASE_AT_BYTES`, it calls
//! `malloc_trim`, which hands every whole free page back (`MADV_DONTNEED`).
//!
//! `malloc_trim` walks malloc's free lists under each arena's lock (about
//! 25 ms for 100 MiB of freed streams), so it runs on the blocking pool and
//! only after a burst, never on a timer alone. Elsewhere than glibc it is a
//! no-op.
//!
//! The opposite case is steady traffic: glibc also gives back the free top
//! of a thread's heap on `free` once it is over 128 KiB, and a call with a
//! 64 KiB body frees that much. Pages given back on one call are faulted in
//! again on the next: 3-6 page faults a call, and ~14 % of the gateway's
//! CPU on 64 KiB `message/send` (bench/profile.md). So [`tune_malloc`]
//! raises those thresholds at start-up; the releases above still return
//! what a burst leaves behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::state::Shared;

/// Memory growth since the last release that is worth one.
pub const RELEASE_AT_BYTES: u64 = 16 * 1024 * 1024;

/// Connections and streams that must have closed since their peak.
pub const DRAINED_AT: u64 = 64;

/// How often a disabled releaser looks at the configuration again.
const IDLE_RECHECK: Duration = Duration::from_secs(10);

/// Connections and streams open in this process, and their peak since the
/// last release. Process-wide, as malloc's heap is.
static OPEN: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// Counts a connection or a stream while it lives (two atomic operations
/// when it opens, one when it closes).
#[derive(Debug)]
pub struct Active(());

impl Active {
    pub fn new() -> Self {
        let open = OPEN.fetch_add(1, Ordering::Relaxed) + 1;
        PEAK.fetch_max(open, Ordering::Relaxed);
        Self(())
    }
}

impl Default for Active {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Decides when a release is due.
#[derive(Debug, Clone, Copy)]
pub struct Trigger {
    /// Resident bytes after the last release (or at start).
    pub base: u64,
}

impl Trigger {
    pub fn due(&self, resident: u64, open: u64, peak: u64) -> bool {
        let drained = peak.saturating_sub(open) >= DRAINED_AT && open <= peak / 2;
        drained && resident >= self.base.saturating_add(RELEASE_AT_BYTES)
    }
}

/// Looks every `server.release_memory_interval` (read again each round, so
/// a reload takes effect) until the gateway stops.
pub async fn run(shared: Shared) {
    let mut trigger = Trigger {
        base: resident_bytes(),
    };
    loop {
        let Some(interval) = shared.load().config.server.release_memory_interval else {
            tokio::time::sleep(IDLE_RECHECK).await;
            continue;
        };
        tokio::time::sleep(interval).await;
        let (open, peak) = (OPEN.load(Ordering::Relaxed), PEAK.load(Ordering::Relaxed));
        if !trigger.due(resident_bytes(), open, peak) {
            continue;
        }
        let Ok(released) = tokio::task::spawn_blocking(release).await else {
            continue;
        };
        trigger.base = resident_bytes();
        PEAK.store(OPEN.load(Ordering::Relaxed), Ordering::Relaxed);
        shared.load().metrics.memory_released.inc_by(released.bytes);
        tracing::debug!(
            released_kib = released.bytes / 1024,
            took_us = released.took.as_micros() as u64,
            open,
            peak,
            "freed heap memory returned to the system"
        );
    }
}

/// What one release gave back, and how long malloc_trim took.
pub struct Released {
    pub bytes: u64,
    pub took: Duration,
}

/// Returns malloc's whole free pages to the system now.
pub fn release() -> Released {
    let before = resident_bytes();
    let started = Instant::now();
    heap::release();
    let took = started.elapsed();
    let bytes = before.saturating_sub(resident_bytes());
    Released { bytes, took }
}

/// Allocations up to this size come from malloc's heaps rather than from a
/// fresh `mmap` each time: above the default 10 MiB body limit.
pub const MMAP_THRESHOLD: usize = 16 * 1024 * 1024;

/// A heap's free top is given back on `free` only when larger than this.
pub const TRIM_THRESHOLD: usize = 16 * 1024 * 1024;

/// Environment variables through which an operator sets these thresholds
/// (glibc reads them at start-up); any of them leaves glibc's settings as
/// they are.
const OPERATOR_SETTINGS: [&str; 4] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "GLIBC_TUNABLES",
];

/// Sets [`MMAP_THRESHOLD`] and [`TRIM_THRESHOLD`] unless the operator set
/// malloc's thresholds through the environment. Whether it did.
pub fn tune_malloc() -> bool {
    operator_has_not_chosen(|name| std::env::var_os(name).is_some())
        && heap::set_thresholds(MMAP_THRESHOLD, TRIM_THRESHOLD)
}

fn operator_has_not_chosen(is_set: impl Fn(&str) -> bool) -> bool {
    !OPERATOR_SETTINGS.iter().any(|name| is_set(name))
}

/// The process's resident set, from `/proc/self/statm` (0 where there is none).
pub fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    pages * heap::page_size()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod heap {
    pub fn page_size() -> u64 {
        // SAFETY: sysconf reads a constant of the system.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(size).unwrap_or(4096)
    }

    /// `mallopt`'s fixed thresholds (which also end glibc's own adjusting
    /// of them): whether both were taken.
    pub fn set_thresholds(mmap: usize, trim: usize) -> bool {
        let (Ok(mmap), Ok(trim)) = (libc::c_int::try_from(mmap), libc::c_int::try_from(trim))
        else {
            return false;
        };
        // SAFETY: mallopt only changes malloc's own parameters, under its
        // lock; both values are within what glibc accepts.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, mmap) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, trim) == 1
        }
    }

    /// Returns every whole free page of every arena to the system.
    pub fn release() {
        // SAFETY: malloc_trim only changes malloc's own free lists, under
        // its locks; 0 keeps no padding at the top of the heap.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod heap {
    pub fn release() {}

    pub fn set_thresholds(_mmap: usize, _trim: usize) -> bool {
        false
    }

    pub fn page_size() -> u64 {
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_drained_burst_that_grew_memory_is_due() {
        let t = Trigger { base: 100 * MIB };
        let grown = 100 * MIB + RELEASE_AT_BYTES;
        assert!(t.due(grown, 0, 10_000));
        assert!(t.due(grown, 5_000, 10_000), "half of the peak is gone");
        assert!(!t.due(grown, 5_001, 10_000), "more than half still open");
        assert!(!t.due(grown - 1, 0, 10_000), "too little grew");
    }

    #[test]
    fn a_small_drain_is_not_a_burst() {
        let t = Trigger { base: 0 };
        assert!(!t.due(RELEASE_AT_BYTES, 0, DRAINED_AT - 1));
        assert!(t.due(RELEASE_AT_BYTES, 0, DRAINED_AT));
        assert!(!t.due(RELEASE_AT_BYTES, 0, 0), "nothing was ever open");
    }

    #[test]
    fn malloc_is_tuned_only_when_the_operator_has_not_tuned_it() {
        assert!(operator_has_not_chosen(|_| false));
        for chosen in OPERATOR_SETTINGS {
            assert!(!operator_has_not_chosen(|name| name == chosen), "{chosen}");
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn glibc_takes_the_thresholds() {
        assert!(heap::set_thresholds(MMAP_THRESHOLD, TRIM_THRESHOLD));
        assert!(
            !heap::set_thresholds(usize::MAX, TRIM_THRESHOLD),
            "too large for mallopt"
        );
    }

    #[test]
    fn open_connections_and_their_peak_are_counted() {
        // Process-wide counters: other tests may open some meanwhile.
        let held: Vec<Active> = (0..1000).map(|_| Active::new()).collect();
        assert!(PEAK.load(Ordering::Relaxed) >= 1000);
        assert!(OPEN.load(Ordering::Relaxed) >= 1000);
        drop(held);
        assert!(PEAK.load(Ordering::Relaxed) >= 1000, "the peak stays");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_release_returns_freed_pages_that_malloc_kept() {
        // 64 MiB in 1 KiB blocks, of which every 64th stays: what is freed
        // lies between live blocks, so free() alone cannot give it back.
        let mut blocks: Vec<Vec<u8>> = (0..65_536).map(|i| vec![i as u8; 1024]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter_mut().step_by(64).map(std::mem::take).collect();
        drop(blocks);
        let released = release().bytes;
        assert!(
            released >= 16 * MIB,
            "released only {} KiB",
            released / 1024
        );
        assert_eq!(kept.len(), 1024);
    }
}
