//! The push relay (issue #67, in progress): webhooks leave the fleet
//! through the gateway. The agents are given a callback on the gateway,
//! `{callback_base}/push/{id}`, whose id is the client's own config sealed
//! under a key the replicas share (`seal`); the gateway checks and delivers
//! what they post, in the client's shape, to the address it checked.
//!
//! Here so far: the sealed id (`seal`), `[push_relay]`'s settings
//! (`settings`, not yet read by the config loader), delivery to the
//! address the guard checked with retries (`deliver`), the bounded
//! queues that drain each destination (`queue`), and the callback agents
//! post to (`callback`, not yet routed). docs/push-relay.md has the design
//! and what is left.

pub mod callback;
pub mod deliver;
pub mod queue;
pub mod seal;
pub mod settings;
