//! A test that must be alone in its process (malloc's heap, the process's
//! resident memory) runs in a child of the test binary, filtered to that
//! one test.
//!
//! The test calls `alone::here()` first: in the child it returns true and
//! the test goes on; in the parent it runs the child, fails if the child
//! failed or ran no test, and returns false.

use std::process::Command;

/// Set in the child's environment.
const CHILD: &str = "A2A_GW_TEST_ALONE";

/// The test is known by its thread's name, which libtest sets to the
/// test's path (`faults::a_flood_...`).
pub fn here() -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let thread = std::thread::current();
    let test = thread.name().unwrap_or_default();
    assert!(
        test.contains("::"),
        "alone::here() needs the test's thread, named by libtest (got {test:?})"
    );
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{test}, alone in its process, failed:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "{test} did not run in its process:\n{text}"
    );
    false
}
