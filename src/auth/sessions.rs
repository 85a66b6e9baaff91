//! The console's signed-in sessions (`crate::console`): an opaque id per
//! sign-in, who it is, for `LIFETIME`; bounded, in memory, so a restart
//! signs everyone out.

use std::time::Duration;

/// How long a session lasts.
pub const LIFETIME: Duration = Duration::from_secs(8 * 3600);

/// Session id → the subject who signed in.
pub struct Sessions(moka::sync::Cache<String, String>);

impl Default for Sessions {
    fn default() -> Self {
        Sessions(
            moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(LIFETIME)
                .build(),
        )
    }
}

impl Sessions {
    pub fn begin(&self, id: String, subject: String) {
        self.0.insert(id, subject);
    }

    pub fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    pub fn end(&self, id: &str) {
        self.0.invalidate(id);
    }
}
