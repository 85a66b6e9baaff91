//! A card as the official 1.0 SDK reads it before it checks a signature:
//! the projection a 1.0 signature covers (docs/signed-cards.md).
//!
//! a2a-python 1.x's card resolver moves the 0.3 members to their 1.0
//! places, parses the card into the 1.0 `AgentCard` proto (members the
//! proto does not have are dropped), and its verifier writes that back as
//! ProtoJSON (default values left out), without `signatures`, with empty
//! strings, lists and objects removed. [`v10`] does the same from the
//! proto's own descriptors, so a field the proto gains is followed.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Value};

const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptors.bin"));

/// The 1.0 card message.
const AGENT_CARD: &str = ".lf.a2a.v1.AgentCard";

/// Every message of the compiled protos, by its full name (`.pkg.Name`).
fn messages() -> &'static HashMap<String, DescriptorProto> {
    static MESSAGES: OnceLock<HashMap<String, DescriptorProto>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let mut all = HashMap::new();
        let set = FileDescriptorSet::decode(DESCRIPTORS).unwrap_or_default();
        for file in set.file {
            let package = file.package.unwrap_or_default();
            for message in file.message_type {
                index(&mut all, &format!(".{package}"), message);
            }
        }
        all
    })
}

fn index(all: &mut HashMap<String, DescriptorProto>, scope: &str, message: DescriptorProto) {
    let name = format!("{scope}.{}", message.name());
    for nested in &message.nested_type {
        index(all, &name, nested.clone());
    }
    all.insert(name, message);
}

/// The 1.0 projection of `card` (a JSON object; anything else is empty).
pub fn v10(card: &Value) -> Value {
    let mut card = card.clone();
    if let Some(object) = card.as_object_mut() {
        legacy_to_v10(object);
        object.remove("signatures");
    }
    let projected = project(&card, AGENT_CARD).unwrap_or(Value::Null);
    clean_empty(projected).unwrap_or_else(|| Value::Object(Map::new()))
}

/// What the 1.x card resolver moves before it parses: 0.3's extended card
/// flag, connection members and security lists to their 1.0 places.
fn legacy_to_v10(card: &mut Map<String, Value>) {
    if card
        .remove("supportsAuthenticatedExtendedCard")
        .is_some_and(|v| truthy(&v))
    {
        let capabilities = card
            .entry("capabilities")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(c) = capabilities.as_object_mut() {
            c.entry("extendedAgentCard").or_insert(Value::Bool(true));
        }
    }
    legacy_interfaces(card);
    legacy_security(card);
    for skill in card
        .get_mut("skills")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(skill) = skill.as_object_mut() {
            let security = skill.remove("security");
            if let Some(list) = security.filter(|_| !skill.contains_key("securityRequirements")) {
                skill.insert("securityRequirements".into(), requirements(&list));
            }
        }
    }
    legacy_schemes(card);
}

/// Python's truth of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

fn legacy_interfaces(card: &mut Map<String, Value>) {
    let url = card.remove("url");
    let transport = card
        .remove("preferredTransport")
        .unwrap_or_else(|| "JSONRPC".into());
    let version = card
        .remove("protocolVersion")
        .unwrap_or_else(|| "0.3.0".into());
    let additional = card.remove("additionalInterfaces");
    let Some(url) = url.filter(truthy) else {
        return;
    };
    if card.contains_key("supportedInterfaces") {
        return;
    }
    let interface = |url: Value, binding: Value| serde_json::json!({"url": url, "protocolBinding": binding, "protocolVersion": version});
    let mut interfaces = vec![interface(url, transport)];
    for extra in additional
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |name: &str| extra.get(name).cloned().unwrap_or(Value::Null);
        interfaces.push(interface(field("url"), field("transport")));
    }
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
}

fn legacy_security(card: &mut Map<String, Value>) {
    let security = card.remove("security");
    if let Some(list) =
        security.filter(|v| !v.is_null() && !card.contains_key("securityRequirements"))
    {
        card.insert("securityRequirements".into(), requirements(&list));
    }
}

/// `[{scheme: [scopes]}]` as `[{"schemes": {scheme: {"list": [scopes]}}}]`.
fn requirements(list: &Value) -> Value {
    let each = |alternative: &Value| {
        let schemes: Map<String, Value> = (alternative.as_object().into_iter().flatten())
            .map(|(name, scopes)| (name.clone(), serde_json::json!({ "list": scopes })))
            .collect();
        serde_json::json!({ "schemes": schemes })
    };
    Value::Array(list.as_array().into_iter().flatten().map(each).collect())
}

/// 0.3's `{"type": "apiKey", "in": …}` as 1.0's `{"apiKeySecurityScheme": {"location": …}}`.
fn legacy_schemes(card: &mut Map<String, Value>) {
    const TYPES: [(&str, &str); 5] = [
        ("apiKey", "apiKeySecurityScheme"),
        ("http", "httpAuthSecurityScheme"),
        ("oauth2", "oauth2SecurityScheme"),
        ("openIdConnect", "openIdConnectSecurityScheme"),
        ("mutualTLS", "mtlsSecurityScheme"),
    ];
    let schemes = card
        .get_mut("securitySchemes")
        .and_then(Value::as_object_mut);
    for scheme in schemes.into_iter().flat_map(|s| s.values_mut()) {
        let Some(object) = scheme.as_object_mut() else {
            continue;
        };
        let kind = object.remove("type");
        let Some((name, wrapper)) = TYPES
            .iter()
            .find(|(t, _)| kind.as_ref().and_then(Value::as_str) == Some(t))
        else {
            continue;
        };
        if *name == "apiKey" {
            if let Some(location) = object.remove("in") {
                object.insert("location".into(), location);
            }
        }
        let inner = std::mem::take(object);
        object.insert((*wrapper).into(), Value::Object(inner));
    }
}

/// `value` read as the message `type_name` and written back as ProtoJSON;
/// `None` when it is not an object.
fn project(value: &Value, type_name: &str) -> Option<Value> {
    let members = value.as_object()?;
    let message = messages().get(type_name)?;
    let mut out = Map::new();
    for field in &message.field {
        let json_name = field
            .json_name
            .clone()
            .unwrap_or_else(|| field.name().to_string());
        let Some(v) = members
            .get(&json_name)
            .or_else(|| members.get(field.name()))
        else {
            continue;
        };
        if let Some(projected) = project_field(field, v) {
            out.insert(json_name, projected);
        }
    }
    Some(Value::Object(out))
}

/// One field's value as ProtoJSON writes it, or `None` when it writes
/// nothing (a default, a null, or a value of the wrong kind).
fn project_field(field: &FieldDescriptorProto, v: &Value) -> Option<Value> {
    if field.label() == Label::Repeated {
        let entry = messages()
            .get(field.type_name())
            .filter(|m| is_map_entry(m));
        return match entry {
            Some(entry) => project_map(entry, v),
            None => Some(Value::Array(
                v.as_array()?
                    .iter()
                    .filter_map(|item| single(field, item))
                    .collect(),
            )),
        };
    }
    let present = field.proto3_optional() || field.oneof_index.is_some();
    let value = single(field, v)?;
    let default = match &value {
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    };
    (present || !default || field.r#type() == Type::Message).then_some(value)
}

fn is_map_entry(message: &DescriptorProto) -> bool {
    message.options.as_ref().is_some_and(|o| o.map_entry())
}

/// A map field: each value projected by the entry's `value` field.
fn project_map(entry: &DescriptorProto, v: &Value) -> Option<Value> {
    let value_field = entry.field.iter().find(|f| f.name() == "value")?;
    let out: Map<String, Value> = (v.as_object()?.iter())
        .filter_map(|(k, item)| Some((k.clone(), single(value_field, item)?)))
        .collect();
    Some(Value::Object(out))
}

/// One (not repeated) value of the field's type.
fn single(field: &FieldDescriptorProto, v: &Value) -> Option<Value> {
    match field.r#type() {
        Type::Message => match field.type_name() {
            ".google.protobuf.Struct" => v.is_object().then(|| v.clone()),
            ".google.protobuf.Value" | ".google.protobuf.ListValue" => Some(v.clone()),
            name if name.starts_with(".google.protobuf.") => Some(v.clone()),
            name => project(v, name),
        },
        Type::String | Type::Bytes | Type::Enum => v.is_string().then(|| v.clone()),
        Type::Bool => v.is_boolean().then(|| v.clone()),
        _ => v.is_number().then(|| v.clone()),
    }
}

/// Empty strings, lists and objects removed, recursively (what is left
/// empty goes too); `None` when nothing is left.
pub fn clean_empty(v: Value) -> Option<Value> {
    match v {
        Value::Object(members) => {
            let kept: Map<String, Value> = members
                .into_iter()
                .filter_map(|(k, v)| Some((k, clean_empty(v)?)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        Value::Array(items) => {
            let kept: Vec<Value> = items.into_iter().filter_map(clean_empty).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::String(s) if s.is_empty() => None,
        Value::Null => None,
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 0.3-and-1.0 card with members the 1.0 proto lacks, defaults,
    /// empties and the legacy security shapes: its 1.0 projection, as the
    /// official SDK would write it before canonicalising (the bytes are
    /// what `canonical::jcs` makes of it).
    #[test]
    fn a_dual_card_projects_as_the_1_0_sdk_reads_it() {
        let card = json!({
            "name": "Fleet",
            "description": "",
            "version": "1.0.0",
            "url": "https://gw.example.com/",
            "preferredTransport": "JSONRPC",
            "protocolVersion": "0.3.0",
            "additionalInterfaces": [{"url": "https://gw.example.com/", "transport": "HTTP+JSON"}],
            "supportsAuthenticatedExtendedCard": true,
            "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": true,
                             "extensions": [{"uri": "urn:x", "required": false, "params": {"n": 1, "deep": {"e": []}}}]},
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
            "security": [{"key": []}],
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": [],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"], "security": [{"key": ["r"]}],
                        "unknownMember": 5}],
            "signatures": [{"protected": "x", "signature": "y"}],
            "notInTheProto": {"a": 1}
        });
        let projected = v10(&card);
        let bytes = String::from_utf8(crate::card::canonical::jcs(&projected).unwrap()).unwrap();
        // What a2a-sdk 1.3.0 writes for this card (parse_agent_card, then
        // the verifier's canonical form): the deep member left empty, the
        // empty requirement and every member the proto lacks are gone.
        let expected = concat!(
            r#"{"capabilities":{"extendedAgentCard":true,"extensions":[{"params":{"n":1},"uri":"urn:x"}],"#,
            r#""pushNotifications":false,"streaming":true},"defaultInputModes":["text/plain"],"name":"Fle"#,
            r#"et","securitySchemes":{"key":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}}"#,
            r#"},"skills":[{"description":"d","id":"s","name":"S","securityRequirements":[{"schemes":{"ke"#,
            r#"y":{"list":["r"]}}}],"tags":["t"]}],"supportedInterfaces":[{"protocolBinding":"JSONRPC","p"#,
            r#"rotocolVersion":"0.3.0","url":"https://gw.example.com/"},{"protocolBinding":"HTTP+JSON","p"#,
            r#"rotocolVersion":"0.3.0","url":"https://gw.example.com/"}],"version":"1.0.0"}"#,
        );
        assert_eq!(bytes, expected);
    }

    #[test]
    fn an_existing_supported_interfaces_list_wins_and_anything_not_an_object_is_empty() {
        let card = json!({
            "name": "A",
            "url": "https://old/",
            "supportedInterfaces": [{"url": "https://new/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
        });
        let projected = v10(&card);
        assert_eq!(projected["supportedInterfaces"][0]["url"], "https://new/");
        assert_eq!(
            projected["supportedInterfaces"].as_array().unwrap().len(),
            1
        );
        assert_eq!(v10(&json!([1, 2])), json!({}));
        assert_eq!(
            v10(&json!({"name": 5})),
            json!({}),
            "a member of the wrong kind is dropped"
        );
    }

    #[test]
    fn empties_go_recursively_but_false_and_zero_stay() {
        let v = json!({"a": "", "b": [], "c": {"d": [""]}, "e": false, "f": 0, "g": [null, "x"]});
        assert_eq!(
            clean_empty(v),
            Some(json!({"e": false, "f": 0, "g": ["x"]}))
        );
        assert_eq!(clean_empty(json!({"a": {}})), None);
    }
}
