//! A2A 0.3's calls and results against the pivot (1.0), method family by
//! family: its row in `crate::bridge::versions`. The members are translated by
//! `crate::bridge::v03`.

use serde_json::{json, Value};

use crate::a2a::Family;
use crate::bridge::fields::{array, at, object, rename, Obj};
use crate::bridge::AgentTask;
use crate::bridge::{v03, Result, Untranslatable};

const HERE: &str = "params";
const RESULT: &str = "result";

/// A 0.3 client's params, read into the pivot.
pub fn params_in(family: Family, params: Value, _: AgentTask<'_>) -> Result<Value> {
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

/// The pivot's params, written for a 0.3 agent.
pub fn params_out(family: Family, pivot: Value) -> Result<Value> {
    use Family::*;
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

/// A 0.3 agent's result, read into the pivot.
pub fn result_in(family: Family, result: Value) -> Result<Value> {
    use Family::*;
    match family {
        Send | Stream | Resubscribe => v03::item_in(result, RESULT),
        GetTask | CancelTask => v03::task_in(result, RESULT),
        PushSet | PushGet => v03::task_push_config_in(result, RESULT),
        PushList => {
            let configs = array(result, RESULT)?
                .into_iter()
                .enumerate()
                .map(|(i, c)| v03::task_push_config_in(c, &format!("{RESULT}[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            Ok(json!({ "configs": configs }))
        }
        _ => Ok(result),
    }
}

/// The pivot's result, written for a 0.3 client.
pub fn result_out(family: Family, pivot: Value, _: &str) -> Result<Value> {
    use Family::*;
    match family {
        Send | Stream | Resubscribe => v03::item_out(pivot, RESULT),
        GetTask | CancelTask => v03::task_out(pivot, RESULT),
        PushSet | PushGet => v03::task_push_config_out(pivot, RESULT),
        PushList => {
            let mut obj = object(pivot, RESULT)?;
            let configs = obj.remove("configs").unwrap_or_else(|| json!([]));
            let configs = array(configs, &at(RESULT, "configs"))?
                .into_iter()
                .enumerate()
                .map(|(i, c)| v03::task_push_config_out(c, &format!("{RESULT}[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            Ok(Value::Array(configs))
        }
        _ => Ok(pivot),
    }
}
