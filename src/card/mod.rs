//! Agent Cards: the upstreams' own (fetched and kept fresh by `store`), the
//! published aggregate (`aggregate`), URL rewriting (`rewrite`) and serving
//! with ETag / Cache-Control (`published`), and the JWKS of the keys the
//! published cards are signed with (`jwks`). What a request makes of them
//! (the endpoint it reached, the extended card) is `crate::call`'s.

pub mod aggregate;
pub mod canonical;
pub mod inherit;
pub mod interfaces;
pub mod jwks;
pub mod project;
pub mod project03;
pub mod published;
pub mod rewrite;
pub mod sign;
pub mod signature;
pub mod skills;
pub mod store;
pub mod verify;

/// Well-known card paths: 0.3/1.0 first, then the 0.1/0.2 name.
pub const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// Extended card paths: 0.2.5, 1.0 REST and 0.3 REST.
pub const EXTENDED_CARD_PATHS: [&str; 3] = [
    "/agent/authenticatedExtendedCard",
    "/extendedAgentCard",
    "/v1/card",
];
