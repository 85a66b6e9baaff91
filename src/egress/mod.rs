//! Stage 3, the agent bindings: each sends the call to an agent in its
//! binding (HTTP+JSON in `rest`, gRPC in `grpc`) and reads the agent's
//! answer or events back. A JSON-RPC agent needs nothing of its own here:
//! the call goes as it is (`crate::upstream`).

pub(crate) mod grpc;
pub(crate) mod params;
pub(crate) mod rest;
