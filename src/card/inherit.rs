//! What the published card takes over from the upstreams' own cards:
//!
//! - identity (name, description, version, provider, links) when the gateway
//!   fronts a single agent and `[card]` sets none of it — a sidecar should
//!   look like the agent it stands in front of;
//! - security declarations: without `[auth]` the gateway passes
//!   credentials through and the agents enforce their own schemes, so
//!   clients must learn them from the card; with `[auth]` the gateway's own
//!   schemes are published instead.

use serde_json::{Map, Value};

/// Both rules, as the published and the extended card apply them.
pub fn apply(card: &mut Value, agents: &[&Value], config: &crate::config::Config) {
    if let ([only], 1, false) = (
        agents,
        config.upstreams.len(),
        config.card.identity_configured,
    ) {
        identity(card, only);
    }
    // With gateway authentication its own schemes are published (the
    // config is the one source of truth); without, the agents' are carried.
    match &config.auth {
        Some(auth) => crate::auth::publish::apply(card, auth),
        None => security(card, agents),
    }
}

const IDENTITY: [&str; 6] = [
    "name",
    "description",
    "version",
    "provider",
    "documentationUrl",
    "iconUrl",
];

/// Fields every card must have: the agent's value replaces the gateway's
/// only when it is a non-empty string, so a sloppy agent card cannot make
/// the published card invalid.
const REQUIRED: [&str; 3] = ["name", "description", "version"];

/// Copies the single agent's identity fields onto `card`.
pub fn identity(card: &mut Value, agent: &Value) {
    let (Some(card), Some(agent)) = (card.as_object_mut(), agent.as_object()) else {
        return;
    };
    for key in IDENTITY {
        let value = agent.get(key);
        if REQUIRED.contains(&key) {
            if let Some(v) = value.filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
                card.insert(key.into(), v.clone());
            }
            continue;
        }
        match value {
            Some(v) => card.insert(key.into(), v.clone()),
            None => card.remove(key),
        };
    }
}

/// The union of the agents' `securitySchemes` (first by name wins) and of
/// their `security` / `securityRequirements` alternatives.
pub fn security(card: &mut Value, agents: &[&Value]) {
    let Some(card) = card.as_object_mut() else {
        return;
    };
    let mut schemes = Map::new();
    let mut alternatives: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    for agent in agents {
        if let Some(Value::Object(s)) = agent.get("securitySchemes") {
            for (name, scheme) in s {
                schemes
                    .entry(name.clone())
                    .or_insert_with(|| scheme.clone());
            }
        }
        for (i, key) in ["security", "securityRequirements"].iter().enumerate() {
            if let Some(Value::Array(list)) = agent.get(*key) {
                for alt in list {
                    if !alternatives[i].contains(alt) {
                        alternatives[i].push(alt.clone());
                    }
                }
            }
        }
    }
    if !schemes.is_empty() {
        card.insert("securitySchemes".into(), Value::Object(schemes));
    }
    for (i, key) in ["security", "securityRequirements"].iter().enumerate() {
        if !alternatives[i].is_empty() {
            card.insert(
                (*key).into(),
                Value::Array(std::mem::take(&mut alternatives[i])),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_is_copied_and_absent_fields_removed() {
        let mut card = json!({"name": "A2A Gateway", "description": "d", "version": "1", "iconUrl": "x", "skills": []});
        identity(
            &mut card,
            &json!({"name": "Echo", "description": "e", "version": "2.0"}),
        );
        assert_eq!(
            card,
            json!({"name": "Echo", "description": "e", "version": "2.0", "skills": []})
        );
    }

    #[test]
    fn security_is_the_union() {
        let a = json!({"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "security": [{"bearer": []}]});
        let b = json!({"securitySchemes": {"bearer": {"type": "other"}, "key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
                        "security": [{"key": []}, {"bearer": []}], "securityRequirements": [{"schemes": {"key": {"list": []}}}]});
        let mut card = json!({"name": "g"});
        security(&mut card, &[&a, &b]);
        assert_eq!(card["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(card["securitySchemes"]["key"]["type"], "apiKey");
        assert_eq!(card["security"], json!([{"bearer": []}, {"key": []}]));
        assert_eq!(
            card["securityRequirements"],
            json!([{"schemes": {"key": {"list": []}}}])
        );
        let mut plain = json!({"name": "g"});
        security(&mut plain, &[&json!({})]);
        assert_eq!(plain, json!({"name": "g"}));
    }
}
