//! Agents that speak gRPC only in 0.3 (`a2a.v1.A2AService`): the 1.0
//! call's params as the 0.3 request message's ProtoJSON. That is 0.3
//! HTTP+JSON's body (`crate::bridge::v03::rest_agent`, whose table of what 0.3
//! cannot carry applies), with the ids the REST routes carry in the path
//! encoded as the message's resource names: `tasks/{id}`, and
//! `tasks/{id}/pushNotificationConfigs/{configId}`. Answers are read back
//! as 0.3 REST's are (`crate::bridge::v03::rest_agent::IN`).

use serde_json::Value;

use super::rest_agent;
use crate::a2a::Family;
use crate::bridge::fields::{object, Obj};
use crate::bridge::{Result, Untranslatable};

/// The 1.0 params as the 0.3 gRPC request message's ProtoJSON.
pub fn params_out(family: Family, params: Option<Value>) -> Result<Value> {
    let encoded = rest_agent::params_out(family, params)?;
    let mut obj = object(encoded, "params")?;
    match family {
        Family::GetTask | Family::CancelTask | Family::Resubscribe => {
            let id = take_id(&mut obj, "id")?;
            obj.insert("name".into(), Value::String(format!("tasks/{id}")));
        }
        Family::PushSet => {
            // The parent and the config's name say the task.
            obj.remove("taskId");
        }
        Family::PushGet | Family::PushDelete => {
            let task = take_id(&mut obj, "taskId")?;
            let config = take_id(&mut obj, "id")?;
            let name = format!("tasks/{task}/pushNotificationConfigs/{config}");
            obj.insert("name".into(), Value::String(name));
        }
        Family::PushList => {
            let task = take_id(&mut obj, "taskId")?;
            obj.insert("parent".into(), Value::String(format!("tasks/{task}")));
        }
        _ => {}
    }
    Ok(Value::Object(obj))
}

/// A required id, taken out of the params.
fn take_id(obj: &mut Obj, key: &str) -> Result<String> {
    match obj.remove(key) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id),
        _ => Err(Untranslatable::new(
            format!("params.{key}"),
            "is required, as a non-empty string",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_become_resource_names() {
        let get = params_out(
            Family::GetTask,
            Some(json!({"id": "t", "historyLength": 2})),
        );
        assert_eq!(get.unwrap(), json!({"name": "tasks/t", "historyLength": 2}));
        let cancel = params_out(Family::CancelTask, Some(json!({"id": "t", "tenant": "x"})));
        assert_eq!(cancel.unwrap(), json!({"name": "tasks/t"}));
        let get = params_out(Family::PushGet, Some(json!({"taskId": "t", "id": "c"})));
        assert_eq!(
            get.unwrap(),
            json!({"name": "tasks/t/pushNotificationConfigs/c"})
        );
        let list = params_out(Family::PushList, Some(json!({"taskId": "t"})));
        assert_eq!(list.unwrap(), json!({"parent": "tasks/t"}));
        let set = params_out(
            Family::PushSet,
            Some(json!({"taskId": "t", "id": "c", "url": "https://h/"})),
        )
        .unwrap();
        assert_eq!(set["parent"], "tasks/t");
        assert_eq!(set["config"]["name"], "tasks/t/pushNotificationConfigs/c");
        assert!(set.get("taskId").is_none());
        assert!(params_out(Family::GetTask, Some(json!({}))).is_err());
        assert!(params_out(Family::ListTasks, Some(json!({}))).is_err());
    }
}
