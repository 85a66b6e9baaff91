//! A2A 0.1 (`tasks/send`) into the pivot (1.0) and out of it.
//!
//! A 0.1 client picks its task's `id` and a `sessionId`; agents of later
//! versions pick their own task ids. The caller gives the agent's id for
//! the client's (`AgentTask`), and the answers show the client's id again.
//! `sessionId` is the conversation: it becomes the message's `contextId`.
//! A 0.1 message has no id; the gateway gives it one. Parts are tagged with
//! `type` where 0.3 says `kind`.
//!
//! This file is the client side (and 0.1's row of the version table with
//! `agent`, the agent side).

pub mod agent;

use serde_json::{json, Value};

use crate::a2a::Family;
use crate::bridge::fields::{at, map_list, map_member, object, rename, required_text, Obj};
use crate::bridge::v03;
use crate::bridge::{AgentTask, Result};

/// 0.1 has fewer states: these are written as their nearest 0.1 meaning.
const NEAREST_STATE: [(&str, &str); 2] =
    [("rejected", "failed"), ("auth-required", "input-required")];

/// A 0.1 message (`type`-tagged parts, no id) into the pivot: from a client
/// here, from an agent in `agent`.
fn message_in(value: Value, here: &str) -> Result<Value> {
    let mut msg = object(v03::message_in(value, here, "type")?, here)?;
    msg.entry("messageId")
        .or_insert_with(|| Value::String(uuid::Uuid::new_v4().to_string()));
    Ok(Value::Object(msg))
}

/// The client's task id (`params.id`) and the agent's for it.
fn task_ids(obj: &Obj, here: &str, agent: AgentTask<'_>) -> Result<(String, String)> {
    let client = required_text(obj, "id", here)?;
    let theirs = agent(&client).unwrap_or_else(|| client.clone());
    Ok((client, theirs))
}

/// `tasks/send` / `tasks/sendSubscribe` params into `SendMessageRequest`.
pub fn send_in(value: Value, here: &str, agent: AgentTask<'_>) -> Result<Value> {
    let mut obj = object(value, here)?;
    let (client, _) = task_ids(&obj, here, agent)?;
    obj.remove("id");
    let message = obj.remove("message").unwrap_or(Value::Null);
    let mut message = object(message_in(message, &at(here, "message"))?, here)?;
    if let Some(theirs) = agent(&client) {
        message.insert("taskId".into(), theirs.into());
    }
    if let Some(session) = obj.remove("sessionId") {
        message.entry("contextId").or_insert(session);
    }
    let mut config = Obj::new();
    for name in ["acceptedOutputModes", "historyLength"] {
        if let Some(v) = obj.remove(name) {
            config.insert(name.into(), v);
        }
    }
    if let Some(push) = obj.remove("pushNotification") {
        let push = v03::push_config_in(push, &at(here, "pushNotification"))?;
        config.insert("taskPushNotificationConfig".into(), Value::Object(push));
    }
    obj.insert("message".into(), Value::Object(message));
    if !config.is_empty() {
        obj.insert("configuration".into(), Value::Object(config));
    }
    Ok(Value::Object(obj))
}

/// `tasks/get`, `tasks/cancel`, `tasks/resubscribe`: the id is the agent's.
pub fn task_in(value: Value, here: &str, agent: AgentTask<'_>) -> Result<Value> {
    let mut obj = object(value, here)?;
    let (_, theirs) = task_ids(&obj, here, agent)?;
    obj.insert("id".into(), theirs.into());
    Ok(Value::Object(obj))
}

/// `tasks/pushNotification/set {id, pushNotificationConfig}` into the flat
/// 1.0 config.
pub fn push_set_in(value: Value, here: &str, agent: AgentTask<'_>) -> Result<Value> {
    let mut obj = object(value, here)?;
    let (_, theirs) = task_ids(&obj, here, agent)?;
    obj.remove("id");
    obj.insert("taskId".into(), theirs.into());
    v03::task_push_config_in(Value::Object(obj), here)
}

/// `tasks/pushNotification/get {id}`: the task's one config, whose id is
/// the task's (as the SDKs default it).
pub fn push_get_in(value: Value, here: &str, agent: AgentTask<'_>) -> Result<Value> {
    let mut obj = object(value, here)?;
    let (_, theirs) = task_ids(&obj, here, agent)?;
    obj.insert("taskId".into(), theirs.clone().into());
    obj.insert("id".into(), theirs.into());
    Ok(Value::Object(obj))
}

fn message_out(value: Value, here: &str) -> Result<Value> {
    let mut msg = object(v03::message_out(value, here, "type")?, here)?;
    // A 0.1 message names no task or context: the task is the client's.
    msg.remove("taskId");
    msg.remove("contextId");
    Ok(Value::Object(msg))
}

fn status_out(value: Value, here: &str) -> Result<Value> {
    let mut status = object(v03::status_out(value, here, "type")?, here)?;
    if let Some(state) = status.get("state").and_then(Value::as_str) {
        if let Some((_, near)) = NEAREST_STATE.iter().find(|(s, _)| *s == state) {
            status.insert("state".into(), (*near).into());
        }
    }
    if let Some(Value::Object(m)) = status.get_mut("message") {
        m.remove("taskId");
        m.remove("contextId");
    }
    Ok(Value::Object(status))
}

/// A 1.0 task as the 0.1 client's task.
pub fn task_out(value: Value, here: &str, client: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    obj.insert("id".into(), client.into());
    rename(&mut obj, "contextId", "sessionId");
    map_member(&mut obj, "status", here, status_out)?;
    map_list(&mut obj, "artifacts", here, |v, at| {
        v03::artifact_out(v, at, "type")
    })?;
    map_list(&mut obj, "history", here, message_out)?;
    Ok(Value::Object(obj))
}

/// A `SendMessage` result (`{task}` or `{message}`) as 0.1's Task: an
/// agent that answers with a message alone has completed the exchange.
pub fn send_result_out(value: Value, here: &str, client: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if let Some(task) = obj.remove("task") {
        return task_out(task, &at(here, "task"), client);
    }
    if let Some(message) = obj.remove("message") {
        return completed_by(message, here, client);
    }
    let why = "has neither task nor message";
    Err(crate::bridge::Untranslatable::new(here, why))
}

fn completed_by(message: Value, here: &str, client: &str) -> Result<Value> {
    let session = message.get("contextId").cloned();
    let message = message_out(message, &at(here, "message"))?;
    let mut task = json!({"id": client, "status": {"state": "completed", "message": message}});
    if let Some(session) = session {
        task["sessionId"] = session;
    }
    Ok(task)
}

/// A 1.0 stream item as a 0.1 event: status and artifact updates, with
/// `final` on the one that ends the stream. A task is told by its status,
/// a lone message as the completed status it is.
pub fn item_out(value: Value, here: &str, client: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let (status, metadata) = if let Some(update) = obj.remove("artifactUpdate") {
        let here = at(here, "artifactUpdate");
        let mut update = object(update, &here)?;
        let mut artifact = update.remove("artifact").unwrap_or_else(|| json!({}));
        artifact = v03::artifact_out(artifact, &at(&here, "artifact"), "type")?;
        for name in ["append", "lastChunk"] {
            if let (Some(v), Value::Object(a)) = (update.remove(name), &mut artifact) {
                a.insert(name.into(), v);
            }
        }
        let mut event = json!({"id": client, "artifact": artifact});
        if let Some(meta) = update.remove("metadata") {
            event["metadata"] = meta;
        }
        return Ok(event);
    } else if let Some(update) = obj.remove("statusUpdate") {
        let mut update = object(update, &at(here, "statusUpdate"))?;
        (update.remove("status"), update.remove("metadata"))
    } else if let Some(task) = obj.remove("task") {
        let mut task = object(task, &at(here, "task"))?;
        (task.remove("status"), None)
    } else if let Some(message) = obj.remove("message") {
        let task = completed_by(message, here, client)?;
        return Ok(json!({"id": client, "status": task["status"], "final": true}));
    } else {
        let why = "has none of task, message, statusUpdate, artifactUpdate";
        return Err(crate::bridge::Untranslatable::new(here, why));
    };
    let status = status.unwrap_or_else(|| json!({}));
    let ends = status
        .get("state")
        .and_then(Value::as_str)
        .is_some_and(v03::ends_stream);
    let status = status_out(status, &at(here, "status"))?;
    let mut event = json!({"id": client, "status": status, "final": ends});
    if let Some(meta) = metadata {
        event["metadata"] = meta;
    }
    Ok(event)
}

/// A 1.0 push config as 0.1's `{id, pushNotificationConfig}`.
pub fn push_config_out(value: Value, here: &str, client: &str) -> Result<Value> {
    let obj = object(value, here)?;
    let config = v03::push_config_out(obj);
    Ok(json!({"id": client, "pushNotificationConfig": config}))
}

/// A 0.1 client's params, read into the pivot (its task ids mapped to
/// the agent's by `agent`).
pub fn params_in(family: Family, params: Value, agent: AgentTask<'_>) -> Result<Value> {
    use Family::*;
    const HERE: &str = "params";
    match family {
        Send | Stream => send_in(params, HERE, agent),
        PushSet => push_set_in(params, HERE, agent),
        PushGet => push_get_in(params, HERE, agent),
        _ => task_in(params, HERE, agent),
    }
}

/// The pivot's result, written for a 0.1 client, whose own task id is
/// `client`.
pub fn result_out(family: Family, pivot: Value, client: &str) -> Result<Value> {
    use Family::*;
    const HERE: &str = "result";
    match family {
        Send => send_result_out(pivot, HERE, client),
        Stream | Resubscribe => item_out(pivot, HERE, client),
        GetTask | CancelTask => task_out(pivot, HERE, client),
        PushSet | PushGet => push_config_out(pivot, HERE, client),
        _ => Ok(pivot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(id: &str) -> Option<String> {
        (id == "mine").then(|| "theirs".to_string())
    }

    #[test]
    fn a_follow_up_names_the_agents_task_and_the_session_as_context() {
        let got = send_in(
            json!({"id": "mine", "sessionId": "s", "historyLength": 2,
                "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}),
            "params",
            &known,
        )
        .unwrap();
        let msg = &got["message"];
        assert_eq!(msg["taskId"], "theirs");
        assert_eq!(msg["contextId"], "s");
        assert_eq!(msg["role"], "ROLE_USER");
        assert_eq!(msg["parts"], json!([{"text": "hi"}]));
        assert!(msg["messageId"].as_str().is_some_and(|m| !m.is_empty()));
        assert_eq!(got["configuration"], json!({"historyLength": 2}));
        assert!(got.get("id").is_none() && got.get("sessionId").is_none());
    }

    #[test]
    fn a_first_send_names_no_task() {
        let got = send_in(
            json!({"id": "new", "message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}),
            "params",
            &known,
        )
        .unwrap();
        assert!(got["message"].get("taskId").is_none());
    }

    #[test]
    fn the_answer_shows_the_clients_ids() {
        let got = send_result_out(
            json!({"task": {"id": "theirs", "contextId": "s",
                "status": {"state": "TASK_STATE_REJECTED"},
                "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}]}}),
            "result",
            "mine",
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"id": "mine", "sessionId": "s", "status": {"state": "failed"},
                "artifacts": [{"artifactId": "a", "parts": [{"type": "text", "text": "done"}]}]})
        );
    }

    #[test]
    fn stream_items_become_0_1_events() {
        let status = item_out(
            json!({"statusUpdate": {"taskId": "theirs", "contextId": "s",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}),
            "result",
            "mine",
        )
        .unwrap();
        assert_eq!(
            status,
            json!({"id": "mine", "status": {"state": "input-required"}, "final": true})
        );
        let artifact = item_out(
            json!({"artifactUpdate": {"taskId": "theirs", "append": true,
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}),
            "result",
            "mine",
        )
        .unwrap();
        assert_eq!(
            artifact,
            json!({"id": "mine", "artifact": {"artifactId": "a", "append": true,
                "parts": [{"type": "text", "text": "x"}]}})
        );
    }
}
