//! An agent's JSON-RPC answer (a whole response, or one SSE event's) in
//! the client's version: the result through the pivot (1.0), an error with
//! its code written in the client's version, and the client's request id.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::fields::object;
use super::{errors, versions, Result, Untranslatable};
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
        let mut pivot = match family {
            Family::PushDelete => Value::Null,
            _ => (versions::row(answering.agent).result_in)(family, result)?,
        };
        if answering.agent == Version::V0_1 {
            name_context(&mut pivot, answering.context.as_deref());
        }
        agent_task = task_of(&pivot);
        let client_task = answering.client_task.as_deref().unwrap_or_default();
        let out = match family {
            Family::PushDelete => Value::Null,
            _ => (versions::row(answering.client).result_out)(family, pivot, client_task)?,
        };
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
