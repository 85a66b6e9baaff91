//! What the gateway knows of the A2A protocol: the JSON-RPC envelope, the
//! method table of every version, the one typed model of calls and answers,
//! what each call must carry, and the framing of its streams (SSE).

pub mod dialect;
pub mod grpc;
pub mod jsonrpc;
pub mod methods;
pub mod model;
pub mod rest;
pub mod rest_call;
pub mod seen;
pub mod sse;
pub mod utf8;
pub mod validate;

pub use methods::{Family, Method, Version};
