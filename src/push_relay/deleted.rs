//! The push configs deleted through this replica, so that a config's
//! notifications stop at once: the agent's later posts are refused (410)
//! and those still queued are dropped.
//!
//! Deleting a config deletes it at the agent, which then stops posting;
//! this list covers an agent that posts once more, and what is queued.
//! It is per replica (replicas share no store): a post that reaches
//! another replica is still delivered until the agent stops. Bounded in
//! count and age, like every memory of the gateway.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::seal::ClientConfig;

/// Deletions remembered at most, and for how long.
const CAPACITY: u64 = 100_000;
const KEPT: Duration = Duration::from_secs(7 * 24 * 3600);

/// `(task, config id)` → when it was deleted (ms since the epoch).
pub struct Deleted {
    at: moka::sync::Cache<(String, String), u64>,
}

impl Default for Deleted {
    fn default() -> Self {
        Deleted {
            at: moka::sync::Cache::builder()
                .max_capacity(CAPACITY)
                .time_to_live(KEPT)
                .build(),
        }
    }
}

impl Deleted {
    /// The client deleted `config` (its id, or the task's when it named
    /// none: the SDKs' default id) of `task`.
    pub fn record(&self, task: &str, config: Option<&str>) {
        let key = (task.to_string(), config.unwrap_or(task).to_string());
        self.at.insert(key, now_ms());
    }

    /// Whether `config` was deleted after it was sealed.
    pub fn covers(&self, config: &ClientConfig) -> bool {
        if config.task_id.is_empty() {
            return false;
        }
        let id = config.config_id.as_deref().unwrap_or(&config.task_id);
        let key = (config.task_id.clone(), id.to_string());
        self.at.get(&key).is_some_and(|at| at >= config.sealed_at)
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(task: &str, id: Option<&str>, sealed_at: u64) -> ClientConfig {
        ClientConfig {
            task_id: task.into(),
            config_id: id.map(Into::into),
            sealed_at,
            ..Default::default()
        }
    }

    #[test]
    fn a_deletion_covers_configs_sealed_before_it() {
        let deleted = Deleted::default();
        deleted.record("t1", Some("c1"));
        deleted.record("t2", None);
        assert!(deleted.covers(&config("t1", Some("c1"), 1)));
        assert!(!deleted.covers(&config("t1", Some("c2"), 1)));
        assert!(deleted.covers(&config("t2", None, 1)));
        assert!(deleted.covers(&config("t2", Some("t2"), 1)));
        // Set again after the deletion: delivered.
        assert!(!deleted.covers(&config("t1", Some("c1"), now_ms() + 1000)));
        assert!(!deleted.covers(&config("", None, 1)));
    }
}
