//! The relay as the gateway runs it: the sender, the queues and the
//! callback made from `[push_relay]` and `[push_guard]`, each delivery
//! seen by `observe` (`crate::telemetry::push`).

use std::sync::Arc;

use super::callback::Callback;
use super::deliver::{Sender, SystemResolve};
use super::queue::{Bounds, Observe, Queues};
use super::settings::PushRelay;
use crate::push_guard::PushGuard;

/// The relay's callback and queues. After a reload the new queues go on
/// from the old ones' deletions and drop count; what the old ones hold is
/// still delivered, under the settings it was accepted with.
pub fn start(
    relay: &PushRelay,
    guard: &PushGuard,
    observe: Observe,
    previous: Option<&Callback>,
) -> Arc<Callback> {
    let sender = Sender {
        guard: guard.clone(),
        resolve: Arc::new(SystemResolve {
            timeout: guard.resolve_timeout,
        }),
        timeout: relay.timeout,
        max_attempts: relay.max_attempts,
        backoff: relay.backoff,
        max_backoff: relay.max_backoff,
    };
    let bounds = Bounds {
        per_destination: relay.queue_per_destination,
        total: relay.max_queued,
        bytes: relay.max_queued_bytes,
    };
    let shared = previous
        .map(|p| p.queues.shared.clone())
        .unwrap_or_default();
    let queues = Queues::with_shared(bounds, Arc::new(sender), observe, shared);
    Arc::new(Callback::new(relay.clone(), queues))
}
