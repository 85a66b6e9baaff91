//! A2A 0.2/0.3 into the pivot (1.0) and out of it.
//!
//! 0.3 marks every object with `kind`; 1.0 says what an object is by the
//! member that holds it. Roles and states are lower-case words in 0.3 and
//! SCREAMING enum names in 1.0; a file part nests its content in `file`.
//! A 1.0 data part may hold any JSON value, a 0.3 one only an object: a
//! non-object is sent as `{"value": …}` with `metadata.data_part_compat:
//! true`, the convention the official SDKs use, and unwrapped on the way in.
//!
//! This file translates the model's objects; `calls` is 0.3's row of the
//! version table (params and results by method family), `rest` and
//! `rest_agent` its HTTP+JSON binding (client and agent side), `grpc_agent`
//! its gRPC binding's messages.

pub mod calls;
pub mod grpc_agent;
pub mod rest;
pub mod rest_agent;

use serde_json::{json, Value};

use crate::bridge::fields::{at, map_list, map_member, object, rename, text, Obj};
use crate::bridge::{Result, Untranslatable};

/// Where a 0.3 data part says its `data` wraps a non-object value.
const DATA_COMPAT: &str = "data_part_compat";

pub const STATES: [(&str, &str); 9] = [
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("canceled", "TASK_STATE_CANCELED"),
    ("failed", "TASK_STATE_FAILED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ("unknown", "TASK_STATE_UNSPECIFIED"),
];

/// A 1.0 state after which a stream ends: terminal or interrupted.
pub fn ends_stream(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// Drops `kind` after checking it says what the caller expects.
fn expect_kind(obj: &mut Obj, kind: &str, here: &str) -> Result<()> {
    match obj.remove("kind") {
        None => Ok(()),
        Some(Value::String(k)) if k == kind => Ok(()),
        Some(other) => Err(Untranslatable::new(
            at(here, "kind"),
            format!("must be \"{kind}\" here, not {other}"),
        )),
    }
}

/// Replaces the word in `member` by its pair in `pairs` (`(from, to)`); a
/// word with no pair is refused as `{word} {why}`.
fn map_word(
    obj: &mut Obj,
    here: &str,
    member: &str,
    pairs: &[(&str, &str)],
    why: &str,
) -> Result<()> {
    let Some(word) = obj.get(member) else {
        return Ok(());
    };
    let found = word
        .as_str()
        .and_then(|w| pairs.iter().find(|(from, _)| *from == w));
    match found {
        Some((_, to)) => {
            obj.insert(member.into(), Value::String((*to).into()));
            Ok(())
        }
        None => Err(Untranslatable::new(
            at(here, member),
            format!("{word} {why}"),
        )),
    }
}

/// Why a role is refused.
const NO_ROLE: &str = "has no counterpart in the agent's version";
/// Why a state is refused.
const NO_STATE: &str = "is not a task state";

const ROLES_IN: [(&str, &str); 2] = [("user", "ROLE_USER"), ("agent", "ROLE_AGENT")];
const ROLES_OUT: [(&str, &str); 2] = [("ROLE_USER", "user"), ("ROLE_AGENT", "agent")];

/// Parts' `kind` (0.3) or `type` (0.1) name.
pub fn message_in(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    expect_kind(&mut obj, "message", here)?;
    map_word(&mut obj, here, "role", &ROLES_IN, NO_ROLE)?;
    map_list(&mut obj, "parts", here, |v, at| part_in(v, at, tag))?;
    Ok(Value::Object(obj))
}

/// A 0.3 part (`tag` is `kind`) or a 0.1 part (`type`) into a 1.0 part.
pub fn part_in(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let kind = obj.remove(tag);
    match kind.as_ref().and_then(Value::as_str) {
        Some("text") => {}
        Some("file") => {
            let file = obj.remove("file").unwrap_or(Value::Null);
            let mut file = object(file, &at(here, "file"))?;
            rename(&mut file, "bytes", "raw");
            rename(&mut file, "uri", "url");
            rename(&mut file, "mimeType", "mediaType");
            rename(&mut file, "name", "filename");
            // The file's members sit on the part in 1.0.
            obj.extend(file);
        }
        Some("data") => unwrap_data(&mut obj),
        _ => {
            let why = format!("must be \"text\", \"file\" or \"data\", not {kind:?}");
            return Err(Untranslatable::new(at(here, tag), why));
        }
    }
    Ok(Value::Object(obj))
}

/// A data part that wraps a non-object value gives the value back.
fn unwrap_data(obj: &mut Obj) {
    let wrapped = obj
        .get("metadata")
        .and_then(|m| m.get(DATA_COMPAT))
        .and_then(Value::as_bool)
        == Some(true);
    if !wrapped {
        return;
    }
    if let Some(value) = obj.get_mut("data").and_then(|d| d.get_mut("value")) {
        let value = value.take();
        obj.insert("data".into(), value);
    }
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove(DATA_COMPAT);
        if meta.is_empty() {
            obj.remove("metadata");
        }
    }
}

pub fn message_out(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    map_word(&mut obj, here, "role", &ROLES_OUT, NO_ROLE)?;
    map_list(&mut obj, "parts", here, |v, at| part_out(v, at, tag))?;
    if tag == "kind" {
        obj.insert("kind".into(), "message".into());
    }
    Ok(Value::Object(obj))
}

/// A 1.0 part into a 0.3 (`kind`) or 0.1 (`type`) part. `mediaType` and
/// `filename` have no place on a 0.x text or data part and are dropped
/// there (docs/version-bridge.md).
pub fn part_out(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let media = obj.remove("mediaType");
    let name = obj.remove("filename");
    let kind = if obj.contains_key("text") {
        "text"
    } else if obj.contains_key("data") {
        wrap_data(&mut obj);
        "data"
    } else if let Some((from, to)) = [("raw", "bytes"), ("url", "uri")]
        .into_iter()
        .find(|(from, _)| obj.contains_key(*from))
    {
        let mut file = Obj::new();
        file.insert(to.into(), obj.remove(from).unwrap_or(Value::Null));
        if let Some(media) = media {
            file.insert("mimeType".into(), media);
        }
        if let Some(name) = name {
            file.insert("name".into(), name);
        }
        obj.insert("file".into(), Value::Object(file));
        "file"
    } else {
        let why = "has none of text, raw, url, data";
        return Err(Untranslatable::new(here, why));
    };
    obj.insert(tag.into(), kind.into());
    Ok(Value::Object(obj))
}

fn wrap_data(obj: &mut Obj) {
    if obj.get("data").is_some_and(Value::is_object) {
        return;
    }
    let value = obj.remove("data").unwrap_or(Value::Null);
    obj.insert("data".into(), json!({ "value": value }));
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(DATA_COMPAT.into(), Value::Bool(true));
    }
}

pub fn task_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    expect_kind(&mut obj, "task", here)?;
    map_member(&mut obj, "status", here, status_in)?;
    map_list(&mut obj, "artifacts", here, artifact_in)?;
    map_list(&mut obj, "history", here, |v, at| message_in(v, at, "kind"))?;
    Ok(Value::Object(obj))
}

pub fn task_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    map_member(&mut obj, "status", here, |v, at| status_out(v, at, "kind"))?;
    map_list(&mut obj, "artifacts", here, |v, at| {
        artifact_out(v, at, "kind")
    })?;
    map_list(&mut obj, "history", here, |v, at| {
        message_out(v, at, "kind")
    })?;
    obj.insert("kind".into(), "task".into());
    Ok(Value::Object(obj))
}

pub fn status_in(value: Value, here: &str) -> Result<Value> {
    status_in_tagged(value, here, "kind")
}

/// A 0.x status; `tag` names the parts' tag of its message.
pub fn status_in_tagged(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    map_word(&mut obj, here, "state", &STATES, NO_STATE)?;
    map_member(&mut obj, "message", here, |v, at| message_in(v, at, tag))?;
    Ok(Value::Object(obj))
}

/// A 1.0 status in 0.3 words; `tag` names the parts' tag of its message.
pub fn status_out(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let new_to_old = STATES.map(|(old, new)| (new, old));
    map_word(&mut obj, here, "state", &new_to_old, NO_STATE)?;
    map_member(&mut obj, "message", here, |v, at| message_out(v, at, tag))?;
    Ok(Value::Object(obj))
}

pub fn artifact_in(value: Value, here: &str) -> Result<Value> {
    artifact_in_tagged(value, here, "kind")
}

pub fn artifact_in_tagged(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    map_list(&mut obj, "parts", here, |v, at| part_in(v, at, tag))?;
    Ok(Value::Object(obj))
}

pub fn artifact_out(value: Value, here: &str, tag: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    map_list(&mut obj, "parts", here, |v, at| part_out(v, at, tag))?;
    Ok(Value::Object(obj))
}

/// A 0.3 stream event or `message/send` result into the 1.0 item.
pub fn item_in(value: Value, here: &str) -> Result<Value> {
    let obj = object(value, here)?;
    let kind = text(&obj, "kind").unwrap_or_default().to_owned();
    let value = Value::Object(obj);
    let (name, inner) = match kind.as_str() {
        "task" => ("task", task_in(value, here)?),
        "message" => ("message", message_in(value, here, "kind")?),
        "status-update" => ("statusUpdate", status_update_in(value, here)?),
        "artifact-update" => ("artifactUpdate", artifact_update_in(value, here)?),
        _ => {
            let why = format!("{kind:?} is not a task, message or update");
            return Err(Untranslatable::new(at(here, "kind"), why));
        }
    };
    Ok(json!({ name: inner }))
}

fn status_update_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    obj.remove("kind");
    // 1.0 has no `final`: its stream ends after the state that ends it.
    obj.remove("final");
    map_member(&mut obj, "status", here, status_in)?;
    Ok(Value::Object(obj))
}

fn artifact_update_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    obj.remove("kind");
    map_member(&mut obj, "artifact", here, artifact_in)?;
    Ok(Value::Object(obj))
}

/// A 1.0 item into a 0.3 event or result. A status update gets `final:
/// true` when its state ends the stream.
pub fn item_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if let Some(task) = obj.remove("task") {
        return task_out(task, &at(here, "task"));
    }
    if let Some(message) = obj.remove("message") {
        return message_out(message, &at(here, "message"), "kind");
    }
    if let Some(update) = obj.remove("statusUpdate") {
        let here = at(here, "statusUpdate");
        let mut update = object(update, &here)?;
        let ends = update
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .is_some_and(ends_stream);
        map_member(&mut update, "status", &here, |v, at| {
            status_out(v, at, "kind")
        })?;
        update.insert("kind".into(), "status-update".into());
        update.insert("final".into(), Value::Bool(ends));
        return Ok(Value::Object(update));
    }
    if let Some(update) = obj.remove("artifactUpdate") {
        let here = at(here, "artifactUpdate");
        let mut update = object(update, &here)?;
        map_member(&mut update, "artifact", &here, |v, at| {
            artifact_out(v, at, "kind")
        })?;
        update.insert("kind".into(), "artifact-update".into());
        return Ok(Value::Object(update));
    }
    let why = "has none of task, message, statusUpdate, artifactUpdate";
    Err(Untranslatable::new(here, why))
}

/// 0.3 `PushNotificationConfig` (nested, `schemes[]`) into the flat 1.0
/// config (one `scheme`).
pub fn push_config_in(value: Value, here: &str) -> Result<Obj> {
    let mut obj = object(value, here)?;
    if let Some(auth) = obj.remove("authentication") {
        let path = at(here, "authentication");
        let mut auth = object(auth, &path)?;
        let schemes = auth.remove("schemes").unwrap_or(Value::Array(vec![]));
        let schemes = crate::bridge::fields::array(schemes, &at(&path, "schemes"))?;
        match schemes.as_slice() {
            [] => {}
            [one] => {
                auth.insert("scheme".into(), one.clone());
            }
            more => {
                let why = format!(
                    "the agent's version takes one scheme, and {} were given",
                    more.len()
                );
                return Err(Untranslatable::new(at(&path, "schemes"), why));
            }
        }
        obj.insert("authentication".into(), Value::Object(auth));
    }
    Ok(obj)
}

/// The flat 1.0 config into 0.3's `PushNotificationConfig` (its `taskId`
/// and `tenant` are left out: the caller places the task id).
pub fn push_config_out(mut obj: Obj) -> Obj {
    obj.remove("taskId");
    obj.remove("tenant");
    if let Some(Value::Object(auth)) = obj.get_mut("authentication") {
        let scheme = auth.remove("scheme");
        let schemes: Vec<Value> = scheme.into_iter().collect();
        auth.insert("schemes".into(), Value::Array(schemes));
    }
    obj
}

/// 1.0 `TaskPushNotificationConfig` into 0.3's `{taskId,
/// pushNotificationConfig}`.
pub fn task_push_config_out(value: Value, here: &str) -> Result<Value> {
    let obj = object(value, here)?;
    let task = obj.get("taskId").cloned().unwrap_or(Value::Null);
    let config = push_config_out(obj);
    Ok(json!({"taskId": task, "pushNotificationConfig": config}))
}

/// 0.3 `{taskId, pushNotificationConfig}` into the flat 1.0 config.
pub fn task_push_config_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let config = obj
        .remove("pushNotificationConfig")
        .unwrap_or_else(|| json!({}));
    let mut flat = push_config_in(config, &at(here, "pushNotificationConfig"))?;
    if let Some(task) = obj.remove("taskId") {
        flat.insert("taskId".into(), task);
    }
    // Anything else the wrapper carried stays with it.
    for (k, v) in obj {
        flat.entry(k).or_insert(v);
    }
    Ok(Value::Object(flat))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_through_1_0() {
        let old = json!({"kind": "message", "messageId": "m", "role": "user",
        "contextId": "c", "metadata": {"a": 1}, "extensions": ["x"],
        "parts": [
            {"kind": "text", "text": "hi", "metadata": {"p": 1}},
            {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}},
            {"kind": "file", "file": {"bytes": "aGk="}},
            {"kind": "data", "data": {"k": [1, 2]}}
        ]});
        let new = message_in(old.clone(), "message", "kind").unwrap();
        assert_eq!(
            new,
            json!({"messageId": "m", "role": "ROLE_USER", "contextId": "c",
            "metadata": {"a": 1}, "extensions": ["x"],
            "parts": [
                {"text": "hi", "metadata": {"p": 1}},
                {"url": "https://x/y.png", "mediaType": "image/png", "filename": "y.png"},
                {"raw": "aGk="},
                {"data": {"k": [1, 2]}}
            ]})
        );
        assert_eq!(message_out(new, "message", "kind").unwrap(), old);
    }

    #[test]
    fn states_map_both_ways_and_unknown_words_are_refused() {
        let new = status_in(json!({"state": "input-required"}), "s").unwrap();
        assert_eq!(new, json!({"state": "TASK_STATE_INPUT_REQUIRED"}));
        let old = status_out(new, "s", "kind").unwrap();
        assert_eq!(old, json!({"state": "input-required"}));
        let refused = |r: Result<Value>| r.map(|_| ()).unwrap_err();
        let e = refused(status_in(json!({"state": "sleeping"}), "s"));
        assert_eq!(
            (e.field.as_str(), e.why.as_str()),
            ("s.state", "\"sleeping\" is not a task state")
        );
        let e = refused(message_out(json!({"role": "ROLE_SYSTEM"}), "m", "kind"));
        assert_eq!(
            (e.field.as_str(), e.why.as_str()),
            (
                "m.role",
                "\"ROLE_SYSTEM\" has no counterpart in the agent's version"
            )
        );
    }

    #[test]
    fn non_object_data_is_wrapped_and_unwrapped() {
        let out = part_out(json!({"data": [1, 2]}), "p", "kind").unwrap();
        assert_eq!(
            out,
            json!({"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}})
        );
        assert_eq!(part_in(out, "p", "kind").unwrap(), json!({"data": [1, 2]}));
    }

    #[test]
    fn a_status_update_that_ends_the_stream_is_final() {
        for (state, last) in [
            ("TASK_STATE_WORKING", false),
            ("TASK_STATE_INPUT_REQUIRED", true),
            ("TASK_STATE_COMPLETED", true),
        ] {
            let got = item_out(
                json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": state}}}),
                "result",
            )
            .unwrap();
            assert_eq!(got["kind"], "status-update");
            assert_eq!(got["final"], last, "{state}");
        }
    }

    #[test]
    fn more_than_one_push_scheme_cannot_be_said_in_1_0() {
        let err = push_config_in(
            json!({"url": "https://h/", "authentication": {"schemes": ["a", "b"]}}),
            "params.pushNotificationConfig",
        )
        .unwrap_err();
        assert_eq!(
            err.field,
            "params.pushNotificationConfig.authentication.schemes"
        );
    }

    #[test]
    fn a_part_without_content_is_named() {
        let err = part_out(json!({"metadata": {}}), "result.parts[0]", "kind").unwrap_err();
        assert_eq!(err.field, "result.parts[0]");
    }
}
