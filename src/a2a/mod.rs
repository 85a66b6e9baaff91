//! What the gateway knows of the A2A protocol: the JSON-RPC envelope, the
//! method table of every version and the params each method needs.

mod hand_read;
pub mod jsonrpc;
pub mod methods;
pub mod one_pass;
pub mod params;

pub use methods::{Family, Method, Version};
