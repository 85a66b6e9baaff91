//! Who owns which task and conversation: learned from answers, bounded in
//! size and age (`Recent`, least recently used first), and never the only source of truth — a miss is
//! resolved by asking the upstreams, so replicas need no shared store.

use std::sync::Arc;
use std::time::Duration;

use crate::a2a::seen::Seen;
use crate::recent::Recent;

pub struct Affinity {
    tasks: Recent<Arc<str>>,
    contexts: Recent<Arc<str>>,
    /// A 0.1 client's own task id → the agent's task id (`crate::bridge`).
    client_tasks: Recent<Arc<str>>,
}

impl Affinity {
    pub fn new(capacity: u64, ttl: Duration) -> Self {
        // Tasks outnumber conversations; split the budget accordingly.
        let contexts = (capacity / 4).max(1);
        let tasks = capacity.saturating_sub(contexts).max(1);
        Self {
            tasks: Recent::new(tasks, ttl),
            contexts: Recent::new(contexts, ttl),
            client_tasks: Recent::new(contexts, ttl),
        }
    }

    pub fn task_owner(&self, task: &str) -> Option<Arc<str>> {
        self.tasks.get(task)
    }

    pub fn context_owner(&self, context: &str) -> Option<Arc<str>> {
        self.contexts.get(context)
    }

    /// The agent's task id for a 0.1 client's own.
    pub fn agent_task(&self, client_task: &str) -> Option<Arc<str>> {
        self.client_tasks.get(client_task)
    }

    pub fn learn_agent_task(&self, client_task: &str, agent_task: &str) {
        let agent: Arc<str> = Arc::from(agent_task);
        (self.client_tasks).insert_unless(client_task, agent, |known| **known == *agent_task);
    }

    pub fn learn_task(&self, task: &str, upstream: &Arc<str>) {
        remember(&self.tasks, task, upstream);
    }

    pub fn learn_context(&self, context: &str, upstream: &Arc<str>) {
        remember(&self.contexts, context, upstream);
    }

    pub fn learn(&self, seen: &Seen<'_>, upstream: &Arc<str>) {
        for t in &seen.tasks {
            self.learn_task(t, upstream);
        }
        for c in &seen.contexts {
            self.learn_context(c, upstream);
        }
    }

    /// Entries currently held (for metrics and tests).
    pub fn len(&self) -> u64 {
        self.tasks.len() + self.contexts.len() + self.client_tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets everything (as after a restart).
    pub fn clear(&self) {
        self.tasks.clear();
        self.contexts.clear();
        self.client_tasks.clear();
    }
}

/// Inserts unless the id is already held for the same upstream: a stream
/// names its task in every event, and a known id need not be written
/// again. It still expires `ttl` after it was first learned; the next
/// answer that names it then learns it again. A full map forgets the least
/// recently used owner: every id is new when learned, and follow-ups come
/// for recent tasks.
fn remember(owners: &Recent<Arc<str>>, id: &str, upstream: &Arc<str>) {
    owners.insert_unless(id, upstream.clone(), |owner| owner == upstream);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_and_forgets() {
        let a = Affinity::new(100, Duration::from_secs(60));
        let up: Arc<str> = Arc::from("b");
        a.learn(
            &Seen {
                tasks: smallvec::smallvec!["t".into()],
                contexts: smallvec::smallvec!["c".into()],
                ..Default::default()
            },
            &up,
        );
        assert_eq!(a.task_owner("t").as_deref(), Some("b"));
        assert_eq!(a.context_owner("c").as_deref(), Some("b"));
        assert_eq!(a.task_owner("c"), None, "tasks and contexts are separate");
        a.clear();
        assert_eq!(a.task_owner("t"), None);
    }

    #[test]
    fn a_task_that_moves_is_learned_again() {
        let a = Affinity::new(100, Duration::from_secs(60));
        let (one, two): (Arc<str>, Arc<str>) = (Arc::from("one"), Arc::from("two"));
        a.learn_task("t", &one);
        a.learn_task("t", &one);
        assert_eq!(a.task_owner("t").as_deref(), Some("one"));
        a.learn_task("t", &two);
        assert_eq!(a.task_owner("t").as_deref(), Some("two"));
    }

    /// Follow-ups come for recent tasks: once full, the cache must make
    /// room for new owners, not keep the old ones and refuse the new.
    #[test]
    fn once_full_the_newest_owners_are_kept() {
        let a = Affinity::new(1000, Duration::from_secs(60));
        let up: Arc<str> = Arc::from("x");
        for i in 0..5_000 {
            a.learn_task(&format!("t{i}"), &up);
            a.learn_context(&format!("c{i}"), &up);
        }
        let kept = |prefix: &str| {
            (4_900..5_000)
                .filter(|i| {
                    a.tasks.get(&format!("{prefix}{i}")).is_some()
                        || a.contexts.get(&format!("{prefix}{i}")).is_some()
                })
                .count()
        };
        assert_eq!(kept("t"), 100, "the last 100 tasks are all known");
        assert_eq!(kept("c"), 100, "the last 100 conversations are all known");
        assert_eq!(a.task_owner("t0"), None, "the oldest made room");
    }

    #[test]
    fn stays_bounded_under_a_flood_of_ids() {
        let a = Affinity::new(1000, Duration::from_secs(60));
        let up: Arc<str> = Arc::from("x");
        for i in 0..20_000 {
            a.learn_task(&format!("t{i}"), &up);
        }
        assert!(a.len() <= 1000, "{} entries", a.len());
    }
}
