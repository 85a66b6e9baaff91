//! Shared helpers for the integration tests: a scriptable mock A2A upstream
//! agent and a small HTTP test client.
#![allow(dead_code)]

pub mod client;
pub mod mock_agent;
