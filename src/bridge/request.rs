//! A call in the client's version, as the agent's version says it: the
//! method's name and its params, through the pivot (1.0).

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::fields::{object, rename, Obj};
use super::v01::AgentTask;
use super::{v01, v03, v10, Result, Untranslatable};
use crate::a2a::methods::METHODS;
use crate::a2a::{Family, Version};

const HERE: &str = "params";

/// The JSON-RPC request the agent gets.
#[derive(Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    /// The client's own id: the answer then mirrors it as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    method: &'static str,
    params: Value,
}

/// The name of the method that does `family` in `version`. 0.1 shares
/// `tasks/get`, `tasks/cancel` and `tasks/resubscribe` with 0.3.
pub fn method_name(family: Family, version: Version) -> Option<&'static str> {
    let find = |v| {
        METHODS
            .iter()
            .find(|m| m.family == family && m.version == v)
    };
    find(version)
        .or_else(|| {
            (version == Version::V0_1)
                .then(|| find(Version::V0_3))
                .flatten()
        })
        .map(|m| m.name)
}

/// The call for the agent.
#[derive(Debug)]
pub struct Translated {
    pub body: Vec<u8>,
    /// The conversation a message was sent in, for answers that do not
    /// name it (a 0.1 agent's events).
    pub context: Option<String>,
}

/// The body of the call for the agent.
pub fn translate(
    family: Family,
    client: Version,
    agent: Version,
    id: Option<&RawValue>,
    params: Option<&RawValue>,
    agent_task: AgentTask<'_>,
) -> Result<Translated> {
    let Some(method) = method_name(family, agent) else {
        let why = format!("has no A2A {} form", agent.label());
        return Err(Untranslatable::new(family.label(), why));
    };
    let params = match params {
        Some(raw) => {
            serde_json::from_str(raw.get()).map_err(|e| Untranslatable::new(HERE, e.to_string()))?
        }
        None => json!({}),
    };
    let mut pivot = into_pivot(family, client, params, agent_task)?;
    let context = context_of(&mut pivot, agent);
    let params = out_of_pivot(family, agent, pivot)?;
    let outgoing = Outgoing {
        jsonrpc: "2.0",
        id,
        method,
        params,
    };
    let body =
        serde_json::to_vec(&outgoing).map_err(|e| Untranslatable::new(HERE, e.to_string()))?;
    Ok(Translated { body, context })
}

/// The message's conversation. A 0.1 agent names none in its events, so
/// one it is sent is always given (a fresh one when the client gave none).
fn context_of(pivot: &mut Value, agent: Version) -> Option<String> {
    let message = pivot.get_mut("message").and_then(Value::as_object_mut)?;
    if agent == Version::V0_1 && !message.contains_key("contextId") {
        let fresh = uuid::Uuid::new_v4().to_string();
        message.insert("contextId".into(), fresh.into());
    }
    message
        .get("contextId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn into_pivot(
    family: Family,
    client: Version,
    params: Value,
    agent_task: AgentTask<'_>,
) -> Result<Value> {
    use Family::*;
    match client {
        Version::V1_0 => v10::params(family, params, HERE),
        Version::V0_3 => v03_in(family, params),
        Version::V0_1 => match family {
            Send | Stream => v01::send_in(params, HERE, agent_task),
            PushSet => v01::push_set_in(params, HERE, agent_task),
            PushGet => v01::push_get_in(params, HERE, agent_task),
            _ => v01::task_in(params, HERE, agent_task),
        },
    }
}

fn v03_in(family: Family, params: Value) -> Result<Value> {
    use Family::*;
    let mut obj = object(params, HERE)?;
    match family {
        Send | Stream => {
            if let Some(message) = obj.remove("message") {
                let message = v03::message_in(message, "params.message", "kind")?;
                obj.insert("message".into(), message);
            }
            if let Some(config) = obj.remove("configuration") {
                obj.insert("configuration".into(), config_in(config)?);
            }
        }
        PushSet => return v03::task_push_config_in(Value::Object(obj), HERE),
        PushGet | PushDelete => {
            rename(&mut obj, "id", "taskId");
            rename(&mut obj, "pushNotificationConfigId", "id");
            // Without a config id, the task's one config: its id is the
            // task's, as the SDKs default it.
            if !obj.contains_key("id") {
                let task = obj.get("taskId").cloned().unwrap_or(Value::Null);
                obj.insert("id".into(), task);
            }
        }
        PushList => rename(&mut obj, "id", "taskId"),
        _ => {}
    }
    Ok(Value::Object(obj))
}

/// 0.3 `configuration` into 1.0's: `blocking` is `returnImmediately`
/// inverted; the push config is flat.
fn config_in(config: Value) -> Result<Value> {
    let here = "params.configuration";
    let mut config = object(config, here)?;
    if let Some(blocking) = config.remove("blocking") {
        let Some(blocking) = blocking.as_bool() else {
            return Err(Untranslatable::new(
                format!("{here}.blocking"),
                "must be a boolean",
            ));
        };
        config.insert("returnImmediately".into(), Value::Bool(!blocking));
    }
    if let Some(push) = config.remove("pushNotificationConfig") {
        let push = v03::push_config_in(push, &format!("{here}.pushNotificationConfig"))?;
        config.insert("taskPushNotificationConfig".into(), Value::Object(push));
    }
    Ok(Value::Object(config))
}

fn out_of_pivot(family: Family, agent: Version, pivot: Value) -> Result<Value> {
    use Family::*;
    match agent {
        Version::V1_0 => return Ok(pivot),
        Version::V0_1 => return super::v01_agent::params_out(family, pivot, HERE),
        Version::V0_3 => {}
    }
    let mut obj = object(pivot, HERE)?;
    // 0.x has no tenants; the agent's interface carried none to echo.
    obj.remove("tenant");
    match family {
        Send | Stream => {
            if let Some(message) = obj.remove("message") {
                let message = v03::message_out(message, "params.message", "kind")?;
                obj.insert("message".into(), message);
            }
            if let Some(config) = obj.remove("configuration") {
                obj.insert("configuration".into(), config_out(config)?);
            }
        }
        PushSet => return v03::task_push_config_out(Value::Object(obj), HERE),
        PushGet | PushDelete => {
            rename(&mut obj, "id", "pushNotificationConfigId");
            rename(&mut obj, "taskId", "id");
        }
        PushList => rename(&mut obj, "taskId", "id"),
        _ => {}
    }
    Ok(Value::Object(obj))
}

fn config_out(config: Value) -> Result<Value> {
    let mut config: Obj = object(config, "params.configuration")?;
    let immediately = config.remove("returnImmediately");
    let blocking = !immediately.and_then(|v| v.as_bool()).unwrap_or(false);
    config.insert("blocking".into(), Value::Bool(blocking));
    if let Some(Value::Object(push)) = config.remove("taskPushNotificationConfig") {
        let push = v03::push_config_out(push);
        config.insert("pushNotificationConfig".into(), Value::Object(push));
    }
    Ok(Value::Object(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    fn call(family: Family, from: Version, to: Version, params: Value) -> Value {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        let id = RawValue::from_string("7".into()).unwrap();
        let sent = translate(family, from, to, Some(&id), Some(&raw), &none).unwrap();
        serde_json::from_slice(&sent.body).unwrap()
    }

    #[test]
    fn a_0_3_send_becomes_send_message() {
        let got = call(
            Family::Send,
            Version::V0_3,
            Version::V1_0,
            json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]},
                "configuration": {"blocking": false, "historyLength": 3,
                    "pushNotificationConfig": {"url": "https://h/", "authentication": {"schemes": ["Bearer"]}}},
                "metadata": {"k": 1}}),
        );
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"returnImmediately": true, "historyLength": 3,
                    "taskPushNotificationConfig": {"url": "https://h/", "authentication": {"scheme": "Bearer"}}},
                "metadata": {"k": 1}}})
        );
    }

    #[test]
    fn a_1_0_stream_becomes_message_stream() {
        let got = call(
            Family::Stream,
            Version::V1_0,
            Version::V0_3,
            json!({"message": {"message_id": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {"accepted_output_modes": ["text/plain"]}}),
        );
        assert_eq!(got["method"], "message/stream");
        assert_eq!(
            got["params"],
            json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]},
                "configuration": {"acceptedOutputModes": ["text/plain"], "blocking": true}})
        );
    }

    #[test]
    fn push_config_calls_change_shape_both_ways() {
        let get = call(
            Family::PushGet,
            Version::V0_3,
            Version::V1_0,
            json!({"id": "t", "pushNotificationConfigId": "p"}),
        );
        assert_eq!(get["method"], "GetTaskPushNotificationConfig");
        assert_eq!(get["params"], json!({"taskId": "t", "id": "p"}));
        let set = call(
            Family::PushSet,
            Version::V1_0,
            Version::V0_3,
            json!({"taskId": "t", "id": "p", "url": "https://h/", "token": "k"}),
        );
        assert_eq!(set["method"], "tasks/pushNotificationConfig/set");
        assert_eq!(
            set["params"],
            json!({"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "https://h/", "token": "k"}})
        );
        let list = call(
            Family::PushList,
            Version::V1_0,
            Version::V0_3,
            json!({"taskId": "t"}),
        );
        assert_eq!(list["params"], json!({"id": "t"}));
    }

    #[test]
    fn a_bad_member_is_named() {
        let raw = RawValue::from_string(
            json!({"message": {"role": "user", "parts": [{"kind": "video"}]}}).to_string(),
        )
        .unwrap();
        let err = translate(
            Family::Send,
            Version::V0_3,
            Version::V1_0,
            None,
            Some(&raw),
            &none,
        )
        .unwrap_err();
        assert_eq!(err.field, "params.message.parts[0].kind");
    }
}
