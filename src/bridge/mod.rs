//! Translation between A2A versions (0.1, 0.3, 1.0) on JSON-RPC.
//!
//! The pivot is the 1.0 model: the ProtoJSON of `lf.a2a.v1` with its JSON
//! (lowerCamel) names, which is the normative model of A2A since 1.0. Each
//! version has a reader into it and a writer out of it, one row of the
//! table in `versions` (`v01`, `v03::calls`, `v10`), so a call between
//! any two versions is one read and one write, and a new version adds one
//! row, not one per pair.
//!
//! What is translated, and what a version cannot express, is listed in
//! `docs/version-bridge.md`. Members the gateway does not know are carried
//! over unchanged: the agents' readers ignore members they do not know,
//! and nothing a client sent is dropped unseen.

pub mod agent_binding;
pub mod answer;
pub mod errors;
pub mod events;
mod fields;
pub mod headers;
pub mod plan;
pub mod push;
pub mod request;
pub mod v01;
pub mod v03;
mod v10;
mod versions;

pub use plan::{plan, Plan};

/// Why a message cannot be translated: the member, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct Untranslatable {
    pub field: String,
    pub why: String,
}

impl Untranslatable {
    pub fn new(field: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            why: why.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Untranslatable>;

/// The agent's task id for a 0.1 client's, when one is known.
pub type AgentTask<'a> = &'a dyn Fn(&str) -> Option<String>;
