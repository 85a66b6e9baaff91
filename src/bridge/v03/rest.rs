//! The HTTP+JSON binding of A2A 0.3 (`/v1/...`: the ProtoJSON of `a2a.v1`)
//! into the pivot (1.0 ProtoJSON) and out of it. The two are close, both
//! being ProtoJSON of nearly the same proto:
//!
//! | 0.3 (`a2a.v1`) | 1.0 (`lf.a2a.v1`) |
//! |---|---|
//! | `Message.content` | `Message.parts` (an artifact's are `parts` in both) |
//! | `{"file": {"fileWithUri" \| "fileWithBytes", "mimeType"}}` | `{"url" \| "raw", "mediaType"}` |
//! | `{"data": {"data": {…}}}` (a Struct) | `{"data": any value}` |
//! | `TASK_STATE_CANCELLED` | `TASK_STATE_CANCELED` |
//! | `TaskStatusUpdateEvent.final` | none: the stream ends after the state |
//! | `configuration.pushNotification`, `blocking` | `taskPushNotificationConfig`, `returnImmediately` |
//! | `{"name": "tasks/T/pushNotificationConfigs/C", "pushNotificationConfig": {…, "authentication": {"schemes"}}}` | flat `{taskId, id, url, token, authentication: {scheme}}` |
//!
//! 0.3 readers (the SDK parses with `ParseDict`) refuse members their proto
//! lacks, so what 0.3 cannot say is dropped on the way out (listed in
//! `docs/rest.md`): a part's `metadata` and `filename`, a message's
//! `referenceTaskIds`, a text or data part's `mediaType`. A non-object data
//! value is wrapped as `{"value": …}`, as on JSON-RPC 0.3 (whose flag in
//! the part's metadata 0.3 REST cannot carry).

use serde_json::{json, Value};

use crate::a2a::Family;
use crate::bridge::fields::{at, map_list, map_member, object, rename, Obj};
use crate::bridge::v03::{ends_stream, push_config_in, push_config_out};
use crate::bridge::{Result, Untranslatable};

const CANCELLED_03: &str = "TASK_STATE_CANCELLED";
const CANCELED_10: &str = "TASK_STATE_CANCELED";

/// A 0.3 REST body as the members of the 1.0 call's params (the path's
/// ids are placed apart).
pub fn body_in(family: Family, body: Value) -> Result<Value> {
    let mut obj = object(body, "body")?;
    match family {
        Family::Send | Family::Stream => {
            rename(&mut obj, "request", "message");
            map_member(&mut obj, "message", "body", message_in)?;
            map_member(&mut obj, "configuration", "body", config_in)?;
        }
        Family::CancelTask | Family::Resubscribe => {
            // `tasks/{id}`: the path says which task.
            obj.remove("name");
        }
        Family::PushSet => return push_set_in(obj),
        _ => {}
    }
    Ok(Value::Object(obj))
}

/// `CreateTaskPushNotificationConfigRequest` (`{parent, configId,
/// config}`, what the 0.3 SDK sends) or its `config` alone (the proto's
/// `body: "config"`), as the flat 1.0 config.
fn push_set_in(mut obj: Obj) -> Result<Value> {
    let config_id = obj.remove("configId").or_else(|| obj.remove("config_id"));
    obj.remove("parent");
    let mut config = match obj.remove("config") {
        Some(config) => object(config, "body.config")?,
        None => obj,
    };
    config.remove("name");
    let nested = (config.remove("pushNotificationConfig"))
        .or_else(|| config.remove("push_notification_config"))
        .unwrap_or_else(|| json!({}));
    let mut flat = push_config_in(nested, "body.config.pushNotificationConfig")?;
    if let Some(Value::String(id)) = config_id.filter(|id| id.as_str() != Some("")) {
        flat.entry("id").or_insert(Value::String(id));
    }
    Ok(Value::Object(flat))
}

pub(super) fn config_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if let Some(push) = obj.remove("pushNotification") {
        let flat = push_config_in(push, &at(here, "pushNotification"))?;
        obj.insert("taskPushNotificationConfig".into(), Value::Object(flat));
    }
    match obj.remove("blocking") {
        Some(Value::Bool(blocking)) => {
            obj.insert("returnImmediately".into(), Value::Bool(!blocking));
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            let why = format!("must be a boolean, not {other}");
            return Err(Untranslatable::new(at(here, "blocking"), why));
        }
    }
    Ok(Value::Object(obj))
}

pub(super) fn message_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    rename(&mut obj, "content", "parts");
    map_list(&mut obj, "parts", here, part_in)?;
    Ok(Value::Object(obj))
}

pub(super) fn part_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if let Some(file) = obj.remove("file") {
        let mut file = object(file, &at(here, "file"))?;
        rename(&mut file, "fileWithUri", "url");
        rename(&mut file, "file_with_uri", "url");
        rename(&mut file, "fileWithBytes", "raw");
        rename(&mut file, "file_with_bytes", "raw");
        rename(&mut file, "mimeType", "mediaType");
        rename(&mut file, "mime_type", "mediaType");
        obj.extend(file);
    } else if let Some(data) = obj.remove("data") {
        let mut data = object(data, &at(here, "data"))?;
        // A Struct: what the client sent stays an object (a `{"value"}`
        // object is not unwrapped, 0.3 REST has no flag that says so).
        let inner = data.remove("data").unwrap_or_else(|| json!({}));
        obj.insert("data".into(), inner);
    }
    Ok(Value::Object(obj))
}

/// A function that turns one part of an answer one way.
type Turn = fn(Value, &str) -> Result<Value>;

/// Which way REST answers go between 0.3 and 1.0: [`OUT`] (1.0 as 0.3)
/// or `rest_agent::IN` (0.3 as 1.0). The wrappers are the same in both
/// versions; only their leaves and `final` differ.
pub struct Way {
    pub(super) status: Turn,
    pub(super) message: Turn,
    pub(super) part: Turn,
    pub(super) push: Turn,
    /// 0.3's status update has `final`, true after which a stream ends:
    /// written on the way out, dropped on the way in.
    pub(super) out: bool,
}

/// 1.0 answers as 0.3's.
pub const OUT: Way = Way {
    status: status_out,
    message: message_out,
    part: part_out,
    push: task_push_config_out,
    out: true,
};

impl Way {
    /// An answer (the REST body of `family`).
    pub fn answer(&self, family: Family, value: Value) -> Result<Value> {
        use Family::*;
        match family {
            Send | Stream | Resubscribe => self.item(value, "answer"),
            GetTask | CancelTask => self.task(value, "answer"),
            PushSet | PushGet => (self.push)(value, "answer"),
            PushList => {
                let mut obj = object(value, "answer")?;
                map_list(&mut obj, "configs", "answer", self.push)?;
                Ok(Value::Object(obj))
            }
            _ => Ok(value),
        }
    }

    /// A `SendMessageResponse` or `StreamResponse`.
    pub fn item(&self, value: Value, here: &str) -> Result<Value> {
        let mut obj = object(value, here)?;
        map_member(&mut obj, "task", here, |v, h| self.task(v, h))?;
        map_member(&mut obj, "message", here, self.message)?;
        map_member(&mut obj, "statusUpdate", here, |v, here| {
            let mut update = object(v, here)?;
            let state = (update.get("status"))
                .and_then(|s| s.get("state"))
                .and_then(Value::as_str);
            let ends = state.is_some_and(ends_stream);
            map_member(&mut update, "status", here, self.status)?;
            match self.out {
                true => update.insert("final".into(), Value::Bool(ends)),
                false => update.remove("final"),
            };
            Ok(Value::Object(update))
        })?;
        map_member(&mut obj, "artifactUpdate", here, |v, here| {
            let mut update = object(v, here)?;
            map_member(&mut update, "artifact", here, |v, h| self.artifact(v, h))?;
            Ok(Value::Object(update))
        })?;
        Ok(Value::Object(obj))
    }

    fn task(&self, value: Value, here: &str) -> Result<Value> {
        let mut obj = object(value, here)?;
        map_member(&mut obj, "status", here, self.status)?;
        map_list(&mut obj, "artifacts", here, |v, h| self.artifact(v, h))?;
        map_list(&mut obj, "history", here, self.message)?;
        Ok(Value::Object(obj))
    }

    fn artifact(&self, value: Value, here: &str) -> Result<Value> {
        let mut obj = object(value, here)?;
        map_list(&mut obj, "parts", here, self.part)?;
        Ok(Value::Object(obj))
    }
}

fn status_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if obj.get("state").and_then(Value::as_str) == Some(CANCELED_10) {
        obj.insert("state".into(), CANCELLED_03.into());
    }
    map_member(&mut obj, "message", here, message_out)?;
    Ok(Value::Object(obj))
}

pub(super) fn message_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    obj.remove("referenceTaskIds");
    map_list(&mut obj, "parts", here, part_out)?;
    rename(&mut obj, "parts", "content");
    Ok(Value::Object(obj))
}

pub(super) fn part_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let media = obj.remove("mediaType");
    obj.remove("filename");
    obj.remove("metadata");
    if obj.contains_key("text") {
        return Ok(Value::Object(obj));
    }
    if let Some(data) = obj.remove("data") {
        let data = match data {
            Value::Object(o) => Value::Object(o),
            other => json!({ "value": other }),
        };
        return Ok(json!({ "data": { "data": data } }));
    }
    let (from, to) = match (obj.contains_key("url"), obj.contains_key("raw")) {
        (true, _) => ("url", "fileWithUri"),
        (_, true) => ("raw", "fileWithBytes"),
        _ => {
            return Err(Untranslatable::new(
                here,
                "has none of text, raw, url, data",
            ))
        }
    };
    let mut file = Obj::new();
    file.insert(to.into(), obj.remove(from).unwrap_or(Value::Null));
    if let Some(media) = media {
        file.insert("mimeType".into(), media);
    }
    Ok(json!({ "file": file }))
}

/// The flat 1.0 config as 0.3's `{name, pushNotificationConfig}`.
fn task_push_config_out(value: Value, here: &str) -> Result<Value> {
    let obj = object(value, here)?;
    let task = obj.get("taskId").and_then(Value::as_str).unwrap_or("");
    let id = obj.get("id").and_then(Value::as_str).unwrap_or("");
    let name = format!("tasks/{task}/pushNotificationConfigs/{id}");
    Ok(json!({"name": name, "pushNotificationConfig": push_config_out(obj)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0_3_send_body_reads_as_1_0() {
        let body = json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [
                {"text": "hi"},
                {"file": {"fileWithUri": "https://f/x.png", "mimeType": "image/png"}},
                {"data": {"data": {"k": 1}}}]},
            "configuration": {"blocking": false, "historyLength": 2,
                "pushNotification": {"url": "https://h/", "authentication": {"schemes": ["Bearer"]}}},
            "metadata": {"m": 1}});
        let params = body_in(Family::Send, body).unwrap();
        assert_eq!(
            params,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [
                    {"text": "hi"},
                    {"url": "https://f/x.png", "mediaType": "image/png"},
                    {"data": {"k": 1}}]},
                "configuration": {"returnImmediately": true, "historyLength": 2,
                    "taskPushNotificationConfig": {"url": "https://h/",
                        "authentication": {"scheme": "Bearer"}}},
                "metadata": {"m": 1}})
        );
    }

    #[test]
    fn the_sdks_push_config_request_reads_flat() {
        let body = json!({"parent": "tasks/t", "configId": "c",
            "config": {"name": "tasks/t/pushNotificationConfigs/c",
                "pushNotificationConfig": {"url": "https://h/", "token": "k"}}});
        assert_eq!(
            body_in(Family::PushSet, body).unwrap(),
            json!({"url": "https://h/", "token": "k", "id": "c"})
        );
        let bare = json!({"pushNotificationConfig": {"id": "d", "url": "https://h/"}});
        assert_eq!(
            body_in(Family::PushSet, bare).unwrap(),
            json!({"id": "d", "url": "https://h/"})
        );
    }

    #[test]
    fn answers_in_1_0_say_0_3() {
        let task = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELED",
            "message": {"messageId": "a", "role": "ROLE_AGENT", "referenceTaskIds": ["x"],
                "parts": [{"text": "bye", "metadata": {"p": 1}}]}},
            "artifacts": [{"artifactId": "r", "parts": [{"data": [1, 2]},
                {"raw": "AAE=", "mediaType": "application/octet-stream", "filename": "f"}]}]}});
        assert_eq!(
            OUT.answer(Family::Send, task).unwrap(),
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELLED",
                "message": {"messageId": "a", "role": "ROLE_AGENT",
                    "content": [{"text": "bye"}]}},
                "artifacts": [{"artifactId": "r", "parts": [
                    {"data": {"data": {"value": [1, 2]}}},
                    {"file": {"fileWithBytes": "AAE=", "mimeType": "application/octet-stream"}}]}]}})
        );
        let update =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        assert_eq!(
            OUT.item(update, "e").unwrap()["statusUpdate"]["final"],
            true
        );
        let config = json!({"taskId": "t", "id": "c", "url": "https://h/",
            "authentication": {"scheme": "Bearer"}});
        assert_eq!(
            OUT.answer(Family::PushGet, config).unwrap(),
            json!({"name": "tasks/t/pushNotificationConfigs/c", "pushNotificationConfig":
                {"id": "c", "url": "https://h/", "authentication": {"schemes": ["Bearer"]}}})
        );
    }

    #[test]
    fn a_message_comes_back_as_it_went() {
        let sent = json!({"message": {"messageId": "m", "content": [{"data": {"data": {"value": 1}}},
            {"file": {"fileWithUri": "u", "mimeType": "t"}}, {"text": "x"}]}});
        let pivot = body_in(Family::Send, sent.clone()).unwrap();
        assert_eq!(OUT.answer(Family::Send, pivot).unwrap(), sent);
    }
}
