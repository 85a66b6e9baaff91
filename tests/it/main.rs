//! The integration tests, one binary: a module per area, ordered by the
//! request's way through the gateway. Each test starts a gateway and mock
//! agents on loopback sockets (port 0) and speaks real HTTP or gRPC to them.
//!
//! One binary links the crate once, not once per area; tests of different
//! areas run side by side, so nothing here may depend on being alone in
//! its process. What must be (malloc's heap, process-wide counters) runs in
//! a child process of its own: `support::alone`.

mod support;

// The binary, its config and the test support itself.
mod cli;
mod support_smoke;

// Listeners, TLS and the client's address.
mod client_address;
mod proxy_protocol;
mod tls;

// Client bindings: JSON-RPC of every version, HTTP+JSON, gRPC.
mod grpc_front_door;
mod grpc_metadata;
mod grpc_operations;
mod grpc_v03;
mod passthrough;
mod rest_front_door;
mod rest_v03_front_door;

// Bad input, authentication, authorization and limits.
mod auth;
mod bad_input;
mod bad_input_catalogue;
mod jwt;
mod push_guard;
mod push_relay;
mod push_relay_gateway;
mod rate_limits;
mod rate_limits_shared;
mod traffic;

// Routing over a fleet, cards and balancing.
mod agent_card;
mod balancing;
mod card_verification;
mod fleet;
mod signed_cards;

// Agent bindings and translation between versions.
mod grpc_agents;
mod grpc_stream_pass;
mod rest_agents;
mod version_bridge;

// Agents that fail, and the connections to them.
mod faults;
mod upstream_failures;
mod upstream_pool;
mod upstream_tls;

// Answers and streams on their way back.
mod properties;
mod sse_streaming;

// Metrics, records, traces, memory and the code's shape.
mod console;
mod dashboard;
mod import_graph;
mod memory_release;
mod operations;
mod records;
mod traces;
mod traces_env;
