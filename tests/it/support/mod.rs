//! Shared helpers for the integration tests: a scriptable mock A2A upstream
//! agent, a small HTTP test client, and a gateway started on loopback.
#![allow(dead_code)]

pub mod alone;
pub mod calls;
pub mod client;
pub mod closed_port;
pub mod fault_agent;
pub mod gateway;
pub mod key_server;
pub mod keys;
pub mod mock_agent;
pub mod mock_grpc;
pub mod mock_grpc03;
pub mod mock_rest;
pub mod otlp;
pub mod pki;
pub mod redis;
pub mod webhook;
