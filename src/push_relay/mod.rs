//! The push relay: webhooks leave the fleet through the gateway. The
//! agents are given a callback on the gateway, `{callback_base}/push/{id}`,
//! whose id is the client's own config sealed under a key the replicas
//! share (`seal`); the gateway checks and delivers what they post, in the
//! client's shape, to the address it checked.
//!
//! The parts: `[push_relay]`'s settings (`settings`); the webhooks in a
//! call sealed on the way to the agent, and opened back in the answers
//! (`rewrite`); the callback agents post to (`callback`); the bounded
//! queues that drain each destination (`queue`); delivery to the address
//! the guard checked, with retries (`deliver`); the configs deleted here
//! (`deleted`); and the relay as the gateway runs it (`start`).
//! docs/push-relay.md is the operator's guide.

pub mod callback;
pub mod deleted;
pub mod deliver;
pub mod queue;
pub mod rewrite;
pub mod seal;
pub mod settings;
pub mod start;
