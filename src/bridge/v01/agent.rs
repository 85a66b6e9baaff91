//! Agents that speak only A2A 0.1: a call from a client of another version
//! encoded as `tasks/send` and its kin, and the 0.1 answers read back into the
//! pivot (1.0). The other direction (0.1 clients) is `crate::bridge::v01`.
//!
//! A 0.1 agent lets its client pick the task id. A new task (a message
//! without `taskId`) gets a fresh UUID from the gateway; the agent then
//! names the task by it, and later calls use it as the task's id, so no
//! mapping is kept. The message's `contextId` is the `sessionId`.

use serde_json::{json, Value};

use crate::a2a::Family;
use crate::bridge::fields::{at, map_list, object, rename, Obj};
use crate::bridge::{v03, Result, Untranslatable};

use super::message_in;

fn fresh_id() -> Value {
    Value::String(uuid::Uuid::new_v4().to_string())
}

/// Params in the pivot as a 0.1 agent reads them.
pub fn params_out(family: Family, pivot: Value) -> Result<Value> {
    let here = "params";
    use Family::*;
    let mut obj = object(pivot, here)?;
    obj.remove("tenant");
    match family {
        Send | Stream => send_out(obj, here),
        PushSet => {
            let task = obj.remove("taskId").unwrap_or(Value::Null);
            let config = v03::push_config_out(obj);
            Ok(json!({"id": task, "pushNotificationConfig": config}))
        }
        PushGet => Ok(json!({"id": obj.remove("taskId").unwrap_or(Value::Null)})),
        _ => Ok(Value::Object(obj)),
    }
}

/// `SendMessageRequest` as `tasks/send` params. 0.1 has no non-blocking
/// send: `returnImmediately` is dropped, and the agent answers when done.
fn send_out(mut obj: Obj, here: &str) -> Result<Value> {
    let message = obj.remove("message").unwrap_or(Value::Null);
    let mut message = object(
        v03::message_out(message, &at(here, "message"), "type")?,
        here,
    )?;
    let id = message.remove("taskId").unwrap_or_else(fresh_id);
    let session = message.remove("contextId");
    message.remove("messageId");
    let mut out = Obj::new();
    out.insert("id".into(), id);
    if let Some(session) = session {
        out.insert("sessionId".into(), session);
    }
    out.insert("message".into(), Value::Object(message));
    if let Some(Value::Object(mut config)) = obj.remove("configuration") {
        for name in ["acceptedOutputModes", "historyLength"] {
            if let Some(v) = config.remove(name) {
                out.insert(name.into(), v);
            }
        }
        if let Some(Value::Object(push)) = config.remove("taskPushNotificationConfig") {
            let push = v03::push_config_out(push);
            out.insert("pushNotification".into(), Value::Object(push));
        }
    }
    out.extend(obj);
    Ok(Value::Object(out))
}

fn status_in(value: Value, here: &str) -> Result<Value> {
    let mut status = object(value, here)?;
    let message = status.remove("message");
    let mut status = object(
        v03::status_in_tagged(Value::Object(status), here, "type")?,
        here,
    )?;
    if let Some(message) = message.filter(|m| !m.is_null()) {
        status.insert("message".into(), message_in(message, &at(here, "message"))?);
    }
    Ok(Value::Object(status))
}

/// A 0.1 artifact has no id: its `index` names it (`artifact-0`), so the
/// chunks of one artifact in a stream share an id.
fn artifact_in(value: Value, here: &str) -> Result<(Value, Option<Value>, Option<Value>)> {
    let mut obj = object(value, here)?;
    let index = obj.remove("index");
    let append = obj.remove("append");
    let last = obj.remove("lastChunk");
    if !obj.contains_key("artifactId") {
        let n = index.as_ref().and_then(Value::as_u64).unwrap_or(0);
        obj.insert("artifactId".into(), format!("artifact-{n}").into());
    }
    let artifact = v03::artifact_in_tagged(Value::Object(obj), here, "type")?;
    Ok((artifact, append, last))
}

/// A 0.1 Task into the pivot's.
pub fn task_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    rename(&mut obj, "sessionId", "contextId");
    if let Some(status) = obj.remove("status") {
        obj.insert("status".into(), status_in(status, &at(here, "status"))?);
    }
    if let Some(artifacts) = obj.remove("artifacts") {
        let path = at(here, "artifacts");
        let list = crate::bridge::fields::array(artifacts, &path)?
            .into_iter()
            .enumerate()
            .map(|(i, a)| artifact_in(a, &crate::bridge::fields::item(&path, i)).map(|(a, _, _)| a))
            .collect::<Result<Vec<_>>>()?;
        obj.insert("artifacts".into(), Value::Array(list));
    }
    map_list(&mut obj, "history", here, message_in)?;
    Ok(Value::Object(obj))
}

/// A 0.1 result of any family into the pivot.
pub fn result_in(family: Family, result: Value) -> Result<Value> {
    let here = "result";
    use Family::*;
    match family {
        Send => Ok(json!({"task": task_in(result, here)?})),
        Stream | Resubscribe => event_in(result, here),
        GetTask | CancelTask => task_in(result, here),
        PushSet | PushGet => {
            let mut obj = object(result, here)?;
            let task = obj.remove("id");
            let config = obj
                .remove("pushNotificationConfig")
                .unwrap_or_else(|| json!({}));
            let mut flat = v03::push_config_in(config, &at(here, "pushNotificationConfig"))?;
            if let Some(task) = task {
                flat.insert("taskId".into(), task);
            }
            Ok(Value::Object(flat))
        }
        _ => Ok(result),
    }
}

/// A 0.1 stream event (`{id, status, final}` or `{id, artifact}`) into the
/// pivot's item. 0.1 events name no context; the item has none either.
fn event_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    obj.remove("final");
    rename(&mut obj, "id", "taskId");
    if let Some(artifact) = obj.remove("artifact") {
        let (artifact, append, last) = artifact_in(artifact, &at(here, "artifact"))?;
        obj.insert("artifact".into(), artifact);
        if let Some(append) = append {
            obj.insert("append".into(), append);
        }
        if let Some(last) = last {
            obj.insert("lastChunk".into(), last);
        }
        return Ok(json!({"artifactUpdate": obj}));
    }
    if let Some(status) = obj.remove("status") {
        obj.insert("status".into(), status_in(status, &at(here, "status"))?);
        return Ok(json!({"statusUpdate": obj}));
    }
    // A whole task (some agents send one first).
    if obj.contains_key("taskId") && obj.contains_key("artifacts") {
        rename(&mut obj, "taskId", "id");
        return Ok(json!({"task": task_in(Value::Object(obj), here)?}));
    }
    Err(Untranslatable::new(here, "has neither status nor artifact"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_send_becomes_tasks_send_with_a_fresh_id() {
        let got = params_out(
            Family::Send,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "contextId": "c",
                "parts": [{"text": "hi"}]},
                "configuration": {"returnImmediately": false, "historyLength": 2}}),
        )
        .unwrap();
        assert!(got["id"].as_str().is_some_and(|id| id.len() == 36), "{got}");
        assert_eq!(got["sessionId"], "c");
        assert_eq!(
            got["message"],
            json!({"role": "user", "parts": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(got["historyLength"], 2);
        let follow = params_out(
            Family::Send,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "t",
                "parts": [{"text": "more"}]}}),
        )
        .unwrap();
        assert_eq!(follow["id"], "t", "a follow-up names its task");
    }

    #[test]
    fn a_0_1_task_and_events_come_into_the_pivot() {
        let task = result_in(
            Family::Send,
            json!({"id": "t", "sessionId": "s", "status": {"state": "completed",
                "message": {"role": "agent", "parts": [{"type": "text", "text": "ok"}]}},
                "artifacts": [{"index": 0, "parts": [{"type": "text", "text": "x"}]}]}),
        )
        .unwrap();
        assert_eq!(task["task"]["contextId"], "s");
        assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(task["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert!(task["task"]["status"]["message"]["messageId"].is_string());
        assert_eq!(
            task["task"]["artifacts"],
            json!([{"artifactId": "artifact-0", "parts": [{"text": "x"}]}])
        );
        let update = result_in(
            Family::Stream,
            json!({"id": "t", "artifact": {"index": 1, "append": true, "lastChunk": false,
                "parts": [{"type": "text", "text": "y"}]}}),
        )
        .unwrap();
        assert_eq!(
            update,
            json!({"artifactUpdate": {"taskId": "t", "append": true, "lastChunk": false,
                "artifact": {"artifactId": "artifact-1", "parts": [{"text": "y"}]}}})
        );
        let status = result_in(
            Family::Stream,
            json!({"id": "t", "status": {"state": "working"}, "final": false}),
        )
        .unwrap();
        assert_eq!(
            status,
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}})
        );
    }
}
