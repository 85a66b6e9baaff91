//! An agent's JSON-RPC answer (a whole response, or one SSE event's) in
//! the client's version: the result through the pivot (1.0), an error with
//! its code written in the client's version, and the client's request id.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::fields::{array, at, object};
use super::{errors, v01, v03, v10, Result, Untranslatable};
use crate::a2a::{Family, Version};

const HERE: &str = "result";

/// Who asked and who answered.
#[derive(Debug, Clone)]
pub struct Answering {
    pub family: Family,
    pub client: Version,
    pub agent: Version,
    /// A 0.1 client's own task id (its answers show it).
    pub client_task: Option<String>,
    /// The client's request id, as it sent it.
    pub id: Option<Box<RawValue>>,
    /// The conversation the agent was sent, for a 0.1 agent's answers,
    /// which do not name it.
    pub context: Option<String>,
}

/// What a translated answer says, and the agent's task id it named (a 0.1
/// client's id is mapped to it).
#[derive(Debug)]
pub struct Answered {
    pub body: Vec<u8>,
    pub agent_task: Option<String>,
}

/// Translates one JSON-RPC response.
pub fn response(bytes: &[u8], answering: &Answering) -> Result<Answered> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Untranslatable::new("the answer", format!("is not JSON: {e}")))?;
    let mut obj = object(value, "the answer")?;
    let mut agent_task = None;
    if let Some(error) = obj.get_mut("error") {
        if let Some(code) = error.get("code").and_then(Value::as_i64) {
            error["code"] = json!(errors::code_for(answering.client, code));
        }
    } else if let Some(result) = obj.remove("result") {
        let family = answering.family;
        let mut pivot = result_in(family, answering.agent, result)?;
        if answering.agent == Version::V0_1 {
            name_context(&mut pivot, answering.context.as_deref());
        }
        agent_task = task_of(&pivot);
        let out = result_out(family, answering, pivot)?;
        obj.insert("result".into(), out);
    } else {
        let why = "has neither result nor error";
        return Err(Untranslatable::new("the answer", why));
    }
    let id = match &answering.id {
        Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
        None => Value::Null,
    };
    obj.insert("id".into(), id);
    let body = serde_json::to_vec(&obj).map_err(|e| Untranslatable::new(HERE, e.to_string()))?;
    Ok(Answered { body, agent_task })
}

/// A 0.1 agent's update names no conversation: it is the one it was sent.
fn name_context(pivot: &mut Value, context: Option<&str>) {
    let Some(context) = context else {
        return;
    };
    for name in ["statusUpdate", "artifactUpdate", "task"] {
        if let Some(Value::Object(item)) = pivot.get_mut(name) {
            item.entry("contextId").or_insert_with(|| context.into());
        }
    }
}

/// The task a 1.0 result or item names.
fn task_of(pivot: &Value) -> Option<String> {
    let id = pivot
        .pointer("/task/id")
        .or_else(|| pivot.pointer("/statusUpdate/taskId"))
        .or_else(|| pivot.pointer("/artifactUpdate/taskId"))
        .or_else(|| pivot.pointer("/message/taskId"))
        .or_else(|| pivot.get("id"));
    id.and_then(Value::as_str).map(str::to_owned)
}

/// The agent's result into the pivot.
fn result_in(family: Family, agent: Version, result: Value) -> Result<Value> {
    use Family::*;
    if family == PushDelete {
        return Ok(Value::Null);
    }
    match agent {
        Version::V1_0 => match family {
            Send | Stream | Resubscribe => v10::item(result, HERE),
            GetTask | CancelTask => v10::task(result, HERE),
            PushSet | PushGet => v10::push_config(result, HERE),
            PushList => v10::push_configs(result, HERE),
            _ => Ok(result),
        },
        Version::V0_1 => super::v01_agent::result_in(family, result, HERE),
        Version::V0_3 => match family {
            Send | Stream | Resubscribe => v03::item_in(result, HERE),
            GetTask | CancelTask => v03::task_in(result, HERE),
            PushSet | PushGet => v03::task_push_config_in(result, HERE),
            PushList => {
                let configs = array(result, HERE)?
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| v03::task_push_config_in(c, &format!("{HERE}[{i}]")))
                    .collect::<Result<Vec<_>>>()?;
                Ok(json!({ "configs": configs }))
            }
            _ => Ok(result),
        },
    }
}

/// The pivot as the client's version says it.
fn result_out(family: Family, answering: &Answering, pivot: Value) -> Result<Value> {
    use Family::*;
    if family == PushDelete {
        return Ok(Value::Null);
    }
    match answering.client {
        Version::V1_0 => Ok(pivot),
        Version::V0_3 => match family {
            Send | Stream | Resubscribe => v03::item_out(pivot, HERE),
            GetTask | CancelTask => v03::task_out(pivot, HERE),
            PushSet | PushGet => v03::task_push_config_out(pivot, HERE),
            PushList => {
                let mut obj = object(pivot, HERE)?;
                let configs = obj.remove("configs").unwrap_or_else(|| json!([]));
                let configs = array(configs, &at(HERE, "configs"))?
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| v03::task_push_config_out(c, &format!("{HERE}[{i}]")))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Value::Array(configs))
            }
            _ => Ok(pivot),
        },
        Version::V0_1 => {
            let client = answering.client_task.as_deref().unwrap_or_default();
            match family {
                Send => v01::send_result_out(pivot, HERE, client),
                Stream | Resubscribe => v01::item_out(pivot, HERE, client),
                GetTask | CancelTask => v01::task_out(pivot, HERE, client),
                PushSet | PushGet => v01::push_config_out(pivot, HERE, client),
                _ => Ok(pivot),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answering(family: Family, client: Version, agent: Version) -> Answering {
        Answering {
            family,
            client,
            agent,
            client_task: None,
            id: Some(RawValue::from_string("\"c-1\"".into()).unwrap()),
            context: None,
        }
    }

    fn translate(a: &Answering, body: Value) -> Value {
        let got = response(body.to_string().as_bytes(), a).unwrap();
        serde_json::from_slice(&got.body).unwrap()
    }

    #[test]
    fn a_1_0_task_answers_a_0_3_client() {
        let a = answering(Family::Send, Version::V0_3, Version::V1_0);
        let got = translate(
            &a,
            json!({"jsonrpc": "2.0", "id": "c-1", "result": {"task": {"id": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
                "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}]}}}),
        );
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": "c-1", "result": {"kind": "task", "id": "t", "contextId": "c",
                "status": {"state": "completed", "timestamp": "2026-01-01T00:00:00Z"},
                "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}]}})
        );
    }

    #[test]
    fn a_0_3_message_answers_a_1_0_client() {
        let a = answering(Family::Send, Version::V1_0, Version::V0_3);
        let got = translate(
            &a,
            json!({"jsonrpc": "2.0", "id": "c-1", "result": {"kind": "message", "messageId": "m",
                "role": "agent", "parts": [{"kind": "text", "text": "hi"}]}}),
        );
        assert_eq!(
            got["result"],
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}})
        );
    }

    #[test]
    fn errors_keep_message_and_data_and_say_the_code_in_the_clients_version() {
        let a = answering(Family::Send, Version::V0_3, Version::V1_0);
        let got = translate(
            &a,
            json!({"jsonrpc": "2.0", "id": "c-1", "error": {"code": -32009, "message": "no", "data": {"x": 1}}}),
        );
        assert_eq!(
            got["error"],
            json!({"code": -32004, "message": "no", "data": {"x": 1}})
        );
    }

    #[test]
    fn push_config_lists_change_shape() {
        let a = answering(Family::PushList, Version::V1_0, Version::V0_3);
        let got = translate(
            &a,
            json!({"jsonrpc": "2.0", "id": "c-1", "result": [{"taskId": "t",
                "pushNotificationConfig": {"id": "p", "url": "https://h/"}}]}),
        );
        assert_eq!(
            got["result"],
            json!({"configs": [{"taskId": "t", "id": "p", "url": "https://h/"}]})
        );
    }

    #[test]
    fn an_answer_that_is_not_json_rpc_is_refused() {
        let a = answering(Family::Send, Version::V0_3, Version::V1_0);
        assert!(response(b"<html>", &a).is_err());
        assert!(response(b"{\"id\": 1}", &a).is_err());
        let bad_state = json!({"id": 1, "result": {"task": {"id": "t", "status": {"state": "TASK_STATE_SLEEPING"}}}});
        let err = response(bad_state.to_string().as_bytes(), &a).unwrap_err();
        assert_eq!(err.field, "result.task.status.state");
    }
}
