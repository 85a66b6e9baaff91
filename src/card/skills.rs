//! A skill as the gateway publishes and routes it.

use serde_json::Value;

/// One skill of the published card, with the upstream that owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedSkill {
    /// The id clients see (after config renames and collision prefixes).
    pub id: String,
    /// The id in the upstream's own card.
    pub original_id: String,
    /// The owning upstream's name.
    pub upstream: String,
    /// The owning upstream's card says it can stream.
    pub streaming: bool,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    pub examples: Vec<String>,
    /// The skill object as published (id replaced, other fields kept).
    pub json: Value,
}
