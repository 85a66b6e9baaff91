//! A2A 1.0 into the pivot. The pivot *is* 1.0 with JSON (lowerCamel)
//! names, so reading brings proto names (`task_id`) to JSON names and enum
//! numbers to enum names; writing 1.0 is the pivot as it is.
//!
//! Only the members the proto defines are renamed, and only at the levels
//! the proto defines them: `metadata` and `data` are the sender's own JSON
//! and are never touched.

use serde_json::Value;

use super::fields::{map_list, map_member, object, rename, Obj};
use super::AgentTask;
use super::Result;
use crate::a2a::Family;

const ROLES: [&str; 3] = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"];
const STATES: [&str; 9] = [
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
];

/// Proto names of a level, renamed to their JSON names.
fn camel(obj: &mut Obj, names: &[(&str, &str)]) {
    for (proto, json) in names {
        rename(obj, proto, json);
    }
}

/// An enum member given as a number becomes its name.
fn enum_name(obj: &mut Obj, name: &str, names: &[&str]) {
    let named = obj
        .get(name)
        .and_then(Value::as_u64)
        .and_then(|n| names.get(n as usize));
    if let Some(named) = named {
        obj.insert(name.into(), Value::String((*named).into()));
    }
}

pub fn message(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(
        &mut obj,
        &[
            ("message_id", "messageId"),
            ("context_id", "contextId"),
            ("task_id", "taskId"),
            ("reference_task_ids", "referenceTaskIds"),
        ],
    );
    enum_name(&mut obj, "role", &ROLES);
    map_list(&mut obj, "parts", here, part)?;
    Ok(Value::Object(obj))
}

fn part(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(&mut obj, &[("media_type", "mediaType")]);
    Ok(Value::Object(obj))
}

pub fn task(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(&mut obj, &[("context_id", "contextId")]);
    map_member(&mut obj, "status", here, status)?;
    map_list(&mut obj, "artifacts", here, artifact)?;
    map_list(&mut obj, "history", here, message)?;
    Ok(Value::Object(obj))
}

pub fn status(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    enum_name(&mut obj, "state", &STATES);
    map_member(&mut obj, "message", here, message)?;
    Ok(Value::Object(obj))
}

pub fn artifact(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(&mut obj, &[("artifact_id", "artifactId")]);
    map_list(&mut obj, "parts", here, part)?;
    Ok(Value::Object(obj))
}

/// A stream item or a `SendMessage` result: `{task|message|statusUpdate|
/// artifactUpdate}`.
pub fn item(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(
        &mut obj,
        &[
            ("status_update", "statusUpdate"),
            ("artifact_update", "artifactUpdate"),
        ],
    );
    map_member(&mut obj, "task", here, task)?;
    map_member(&mut obj, "message", here, message)?;
    map_member(&mut obj, "statusUpdate", here, |v, at| {
        let mut update = object(v, at)?;
        camel(
            &mut update,
            &[("task_id", "taskId"), ("context_id", "contextId")],
        );
        map_member(&mut update, "status", at, status)?;
        Ok(Value::Object(update))
    })?;
    map_member(&mut obj, "artifactUpdate", here, |v, at| {
        let mut update = object(v, at)?;
        camel(
            &mut update,
            &[
                ("task_id", "taskId"),
                ("context_id", "contextId"),
                ("last_chunk", "lastChunk"),
            ],
        );
        map_member(&mut update, "artifact", at, artifact)?;
        Ok(Value::Object(update))
    })?;
    Ok(Value::Object(obj))
}

/// `TaskPushNotificationConfig` (flat).
pub fn push_config(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(&mut obj, &[("task_id", "taskId")]);
    Ok(Value::Object(obj))
}

/// `ListTaskPushNotificationConfigsResponse`.
pub fn push_configs(value: Value, here: &str) -> Result<Value> {
    let mut obj = object(value, here)?;
    camel(&mut obj, &[("next_page_token", "nextPageToken")]);
    map_list(&mut obj, "configs", here, push_config)?;
    Ok(Value::Object(obj))
}

/// The params of any request, by what the method does.
pub fn params_in(family: Family, value: Value, _: AgentTask<'_>) -> Result<Value> {
    use Family::*;
    let here = "params";
    let mut obj = object(value, here)?;
    match family {
        Send | Stream => {
            map_member(&mut obj, "message", here, message)?;
            map_member(&mut obj, "configuration", here, |v, at| {
                let mut config = object(v, at)?;
                camel(
                    &mut config,
                    &[
                        ("accepted_output_modes", "acceptedOutputModes"),
                        (
                            "task_push_notification_config",
                            "taskPushNotificationConfig",
                        ),
                        ("history_length", "historyLength"),
                        ("return_immediately", "returnImmediately"),
                    ],
                );
                map_member(&mut config, "taskPushNotificationConfig", at, push_config)?;
                Ok(Value::Object(config))
            })?;
        }
        GetTask => camel(&mut obj, &[("history_length", "historyLength")]),
        PushSet | PushGet | PushDelete => camel(&mut obj, &[("task_id", "taskId")]),
        PushList => camel(
            &mut obj,
            &[
                ("task_id", "taskId"),
                ("page_size", "pageSize"),
                ("page_token", "pageToken"),
            ],
        ),
        _ => {}
    }
    Ok(Value::Object(obj))
}

/// A 1.0 agent's result, checked as the pivot it already is.
pub fn result_in(family: Family, result: Value) -> Result<Value> {
    use Family::*;
    const HERE: &str = "result";
    match family {
        Send | Stream | Resubscribe => item(result, HERE),
        GetTask | CancelTask => task(result, HERE),
        PushSet | PushGet => push_config(result, HERE),
        PushList => push_configs(result, HERE),
        _ => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proto_names_and_enum_numbers_become_json_names() {
        let got = item(
            json!({"status_update": {"task_id": "t", "context_id": "c",
                "status": {"state": 3, "message": {"message_id": "m", "role": 2,
                    "parts": [{"text": "hi", "media_type": "text/plain"}]}}}}),
            "result",
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED", "message": {"messageId": "m",
                    "role": "ROLE_AGENT", "parts": [{"text": "hi", "mediaType": "text/plain"}]}}}})
        );
    }

    #[test]
    fn metadata_and_data_are_never_renamed() {
        let got = message(
            json!({"role": "ROLE_USER", "metadata": {"task_id": 1},
                "parts": [{"data": {"context_id": 2}}]}),
            "m",
        )
        .unwrap();
        assert_eq!(got["metadata"], json!({"task_id": 1}));
        assert_eq!(got["parts"][0]["data"], json!({"context_id": 2}));
    }
}
