//! A call in the client's version, as the agent's version says it: the
//! method's name and its params, through the pivot (1.0).

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::AgentTask;
use super::{versions, Result, Untranslatable};
use crate::a2a::jsonrpc;
use crate::a2a::methods::METHODS;
use crate::a2a::{Family, Version};

const HERE: &str = "params";

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
    let (params, context) = translate_params(family, client, agent, params, agent_task)?;
    // The client's own id: the answer then mirrors it as it is.
    let body = jsonrpc::request_body(id, method, &params)
        .map_err(|e| Untranslatable::new(HERE, e.to_string()))?;
    Ok(Translated { body, context })
}

/// The call's params in the agent's version (what an agent binding other
/// than JSON-RPC encodes), and the conversation a message was sent in.
pub fn translate_params(
    family: Family,
    client: Version,
    agent: Version,
    params: Option<&RawValue>,
    agent_task: AgentTask<'_>,
) -> Result<(Value, Option<String>)> {
    let params = match params {
        Some(raw) => {
            serde_json::from_str(raw.get()).map_err(|e| Untranslatable::new(HERE, e.to_string()))?
        }
        None => json!({}),
    };
    let mut pivot = (versions::row(client).params_in)(family, params, agent_task)?;
    let context = context_of(&mut pivot, agent);
    let params = (versions::row(agent).params_out)(family, pivot)?;
    Ok((params, context))
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
