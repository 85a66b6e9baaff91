//! One typed model of A2A calls and answers, for every version (0.1,
//! 0.2/0.3, 1.0): read once with serde, borrowed from the body where a
//! string has no escapes. Validation, routing, task-owner learning and the
//! push guard all read this model; nothing else parses a call or answer.
//!
//! - [`read`]: a call's params → [`Params`];
//! - [`answer`]: an agent's answer or SSE event → [`answer::RpcResponse`];
//! - the shapes: [`message`], [`params`], and the value types they share
//!   ([`role`], [`count`], [`members`], [`loose`]).

pub mod answer;
pub mod borrowed;
pub mod count;
pub mod loose;
pub mod members;
pub mod message;
pub mod one_pass;
pub mod params;
pub mod read;
pub mod role;

pub use members::Members;
pub use message::{File, Message, Part};
pub use params::{ListParams, Params, PushConfig, SendConfiguration, SendParams, TaskParams};
pub use role::Role;
