//! Agents that speak HTTP+JSON only in 0.3 (`/v1/...`): the 1.0 call's
//! params written in 0.3's ProtoJSON (the routes are 1.0's under `/v1`, see
//! `crate::a2a::rest_call`), and the agent's 0.3 answers read back into
//! 1.0. The other direction of `crate::bridge::v03::rest`, whose table applies.
//!
//! What 0.3 cannot carry, as for 0.3 REST clients: a part's `metadata` and
//! `filename`, a message's `referenceTaskIds`, a text or data part's
//! `mediaType` are dropped; a `tenant` too (0.3 has no tenants).

use serde_json::{json, Value};

use crate::a2a::Family;
use crate::bridge::fields::{at, map_member, object, rename, Obj};
use crate::bridge::v03::rest::{message_in, message_out, part_in, Way};
use crate::bridge::v03::{push_config_in, push_config_out};
use crate::bridge::{Result, Untranslatable};

/// The 1.0 params as a 0.3 REST call's: what `rest_call` places in the
/// path, the query and the body under `/v1`.
pub fn params_out(family: Family, params: Option<Value>) -> Result<Value> {
    let mut obj = match params {
        None | Some(Value::Null) => Obj::new(),
        Some(params) => object(params, "params")?,
    };
    obj.remove("tenant");
    match family {
        Family::Send | Family::Stream => {
            map_member(&mut obj, "message", "params", message_out)?;
            // 1.0 blocks unless told not to; 0.3's proto `blocking` is
            // false when absent, so it is always written.
            obj.entry("configuration").or_insert_with(|| json!({}));
            map_member(&mut obj, "configuration", "params", config_out)?;
        }
        Family::PushSet => return push_set_out(obj),
        Family::ListTasks => {
            let why = "A2A 0.3's HTTP+JSON binding has no ListTasks";
            return Err(Untranslatable::new("method", why));
        }
        _ => {}
    }
    Ok(Value::Object(obj))
}

fn config_out(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if let Some(push) = obj.remove("taskPushNotificationConfig") {
        let flat = object(push, &at(here, "taskPushNotificationConfig"))?;
        obj.insert(
            "pushNotification".into(),
            Value::Object(push_config_out(flat)),
        );
    }
    let returns_at_once = obj.remove("returnImmediately").and_then(|v| v.as_bool());
    obj.insert(
        "blocking".into(),
        Value::Bool(!returns_at_once.unwrap_or(false)),
    );
    Ok(Value::Object(obj))
}

/// The flat 1.0 config as the 0.3 SDK's `CreateTaskPushNotificationConfigRequest`
/// (`taskId` stays for the path).
fn push_set_out(mut flat: Obj) -> Result<Value> {
    let task = flat.get("taskId").cloned().unwrap_or(Value::Null);
    let Some(task_text) = task.as_str().map(str::to_owned) else {
        return Err(Untranslatable::new("params.taskId", "is required"));
    };
    let id = flat
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    flat.remove("taskId");
    let config = push_config_out(flat);
    Ok(json!({
        "taskId": task,
        "parent": format!("tasks/{task_text}"),
        "configId": id,
        "config": {"name": format!("tasks/{task_text}/pushNotificationConfigs/{id}"),
            "pushNotificationConfig": config},
    }))
}

/// A 0.3 agent's REST answers as 1.0's.
pub const IN: Way = Way {
    status: status_in,
    message: message_in,
    part: part_in,
    push: task_push_config_in,
    out: false,
};

fn status_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    if obj.get("state").and_then(Value::as_str) == Some("TASK_STATE_CANCELLED") {
        obj.insert("state".into(), "TASK_STATE_CANCELED".into());
    }
    rename(&mut obj, "update", "message");
    map_member(&mut obj, "message", here, message_in)?;
    Ok(Value::Object(obj))
}

/// 0.3's `{name: "tasks/T/pushNotificationConfigs/C", pushNotificationConfig}`
/// as the flat 1.0 config.
fn task_push_config_in(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    let name = obj.remove("name");
    let nested = obj
        .remove("pushNotificationConfig")
        .unwrap_or_else(|| json!({}));
    let mut flat = push_config_in(nested, &at(here, "pushNotificationConfig"))?;
    let ids = name.as_ref().and_then(Value::as_str).and_then(|n| {
        let rest = n.strip_prefix("tasks/")?;
        rest.split_once("/pushNotificationConfigs/")
    });
    if let Some((task, id)) = ids {
        flat.insert("taskId".into(), task.into());
        flat.entry("id").or_insert_with(|| id.into());
    }
    Ok(Value::Object(flat))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_send_says_0_3_and_its_answer_reads_back() {
        let params = json!({"message": {"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "hi", "metadata": {"x": 1}}, {"url": "u", "mediaType": "t"}]},
            "configuration": {"returnImmediately": true}, "tenant": "acme"});
        assert_eq!(
            params_out(Family::Send, Some(params)).unwrap(),
            json!({"message": {"messageId": "m", "role": "ROLE_USER",
                "content": [{"text": "hi"}, {"file": {"fileWithUri": "u", "mimeType": "t"}}]},
                "configuration": {"blocking": false}})
        );
        let answer = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELLED",
            "message": {"messageId": "a", "role": "ROLE_AGENT", "content": [{"text": "bye"}]}},
            "artifacts": [{"artifactId": "r", "parts": [{"data": {"data": {"k": 1}}}]}]}});
        assert_eq!(
            IN.answer(Family::Send, answer).unwrap(),
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_CANCELED",
                "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "bye"}]}},
                "artifacts": [{"artifactId": "r", "parts": [{"data": {"k": 1}}]}]}})
        );
        let update = json!({"statusUpdate": {"taskId": "t", "final": true,
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        assert!(IN.item(update, "e").unwrap()["statusUpdate"]
            .get("final")
            .is_none());
    }

    #[test]
    fn push_configs_go_by_name() {
        let flat = json!({"taskId": "t", "id": "c", "url": "https://h/",
            "authentication": {"scheme": "Bearer"}});
        let out = params_out(Family::PushSet, Some(flat.clone())).unwrap();
        assert_eq!(out["parent"], "tasks/t");
        assert_eq!(out["config"]["name"], "tasks/t/pushNotificationConfigs/c");
        assert_eq!(
            out["config"]["pushNotificationConfig"]["authentication"],
            json!({"schemes": ["Bearer"]})
        );
        let back = json!({"name": "tasks/t/pushNotificationConfigs/c",
            "pushNotificationConfig": {"id": "c", "url": "https://h/",
                "authentication": {"schemes": ["Bearer"]}}});
        assert_eq!(IN.answer(Family::PushGet, back).unwrap(), flat);
        assert!(params_out(Family::ListTasks, None).is_err());
        let bare = params_out(Family::Send, Some(json!({"message": {}}))).unwrap();
        assert_eq!(
            bare["configuration"],
            json!({"blocking": true}),
            "1.0 blocks"
        );
    }
}
