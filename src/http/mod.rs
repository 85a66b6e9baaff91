//! The HTTP vocabulary every stage shares: the one body type, the one
//! error enum with its table for the bindings, hop-by-hop headers, and the
//! request id. Nothing here depends on a stage, so every stage may use it.

pub mod body;
pub mod error;
pub mod hop_by_hop;
pub mod request_id;
