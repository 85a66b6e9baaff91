//! Which dialects an agent serves, read from its card:
//! - a 1.0 card: `supportedInterfaces[]` (`url`, `protocolBinding`,
//!   `protocolVersion`, `tenant`);
//! - a 0.3 card: `url` with `preferredTransport` (JSON-RPC when absent) and
//!   `additionalInterfaces[]` (`url`, `transport`), all at its
//!   `protocolVersion`;
//! - a card with a `url` and neither: 0.2/0.3 over JSON-RPC.
//!
//! SDKs that serve both versions publish both sets of fields on one card;
//! the union is what the agent speaks. Entries the gateway cannot read
//! (an unknown binding or version, a missing URL) are left out.

use serde_json::Value;

use crate::a2a::dialect::{version_from, Binding, Interface};
use crate::a2a::Version;

pub fn of(card: &Value) -> Vec<Interface> {
    let mut found = Vec::new();
    for entry in card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |key: &str| entry.get(key).and_then(Value::as_str);
        let binding = text("protocolBinding").and_then(Binding::from_card);
        let version = text("protocolVersion").and_then(version_from);
        if let (Some(binding), Some(version), Some(url)) = (binding, version, text("url")) {
            add(
                &mut found,
                Interface {
                    binding,
                    version,
                    url: url.to_string(),
                    tenant: text("tenant").map(str::to_string),
                },
            );
        }
    }
    if let Some(url) = card.get("url").and_then(Value::as_str) {
        // 0.2 cards have no protocolVersion: they speak 0.2/0.3.
        let version = match card.get("protocolVersion").and_then(Value::as_str) {
            Some(v) => version_from(v),
            None => Some(Version::V0_3),
        };
        if let Some(version) = version {
            let preferred = match card.get("preferredTransport").and_then(Value::as_str) {
                Some(t) => Binding::from_card(t),
                None => Some(Binding::JsonRpc),
            };
            if let Some(binding) = preferred {
                add(&mut found, legacy(binding, version, url));
            }
            for extra in card
                .get("additionalInterfaces")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let text = |key: &str| extra.get(key).and_then(Value::as_str);
                if let (Some(binding), Some(url)) =
                    (text("transport").and_then(Binding::from_card), text("url"))
                {
                    add(&mut found, legacy(binding, version, url));
                }
            }
        }
    }
    found
}

fn legacy(binding: Binding, version: Version, url: &str) -> Interface {
    Interface {
        binding,
        version,
        url: url.to_string(),
        tenant: None,
    }
}

fn add(found: &mut Vec<Interface>, interface: Interface) {
    if !found.contains(&interface) {
        found.push(interface);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dialects(card: Value) -> Vec<(Binding, Version)> {
        of(&card)
            .into_iter()
            .map(|i| (i.binding, i.version))
            .collect()
    }

    #[test]
    fn a_1_0_card() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "t"},
            {"url": "http://a/", "protocolBinding": "FAX", "protocolVersion": "1.0"},
            {"protocolBinding": "GRPC", "protocolVersion": "1.0"}
        ]});
        assert_eq!(
            dialects(card.clone()),
            [
                (Binding::JsonRpc, Version::V1_0),
                (Binding::HttpJson, Version::V1_0)
            ]
        );
        assert_eq!(of(&card)[1].tenant.as_deref(), Some("t"));
    }

    #[test]
    fn a_0_3_card() {
        let card = json!({"url": "http://a/", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": "http://a/", "transport": "JSONRPC"}, {"url": "http://a:50051", "transport": "GRPC"}]});
        assert_eq!(
            dialects(card),
            [
                (Binding::JsonRpc, Version::V0_3),
                (Binding::Grpc, Version::V0_3)
            ]
        );
    }

    #[test]
    fn a_dual_card_and_a_0_2_card() {
        let dual = json!({"url": "http://a/", "protocolVersion": "0.3.0",
            "supportedInterfaces": [{"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                    {"url": "http://a/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]});
        assert_eq!(
            dialects(dual),
            [
                (Binding::JsonRpc, Version::V1_0),
                (Binding::JsonRpc, Version::V0_3)
            ]
        );
        assert_eq!(
            dialects(json!({"url": "http://a/"})),
            [(Binding::JsonRpc, Version::V0_3)]
        );
        assert!(dialects(json!({"name": "no url"})).is_empty());
        assert!(dialects(json!({"url": "http://a/", "protocolVersion": "9.9"})).is_empty());
    }
}
