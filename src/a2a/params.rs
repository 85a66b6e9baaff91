//! Required-params checks per method. Deliberately lenient about what a
//! version may add (unknown members pass) and strict about what every upstream
//! needs, so the gateway never refuses a request an agent would accept.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::methods::{Family, Method, Version};

type Obj = Map<String, Value>;

/// Checks `params` for `method`, returning them parsed (routing reads them
/// later) or a message naming the missing or wrong field.
pub fn validate(method: &Method, params: Option<&RawValue>) -> Result<Option<Value>, String> {
    let parsed: Option<Value> = match params {
        None => None,
        Some(raw) => Some(shallow(raw, INSPECTED_LEVELS).map_err(|e| format!("params: {e}"))?),
    };
    check_read(method, parsed)
}

/// The checks of [`validate`] on params already read (by
/// [`read_member`], in the same pass as the envelope).
pub fn check_read(method: &Method, parsed: Option<Value>) -> Result<Option<Value>, String> {
    let obj = match &parsed {
        Some(Value::Object(o)) => Some(o),
        Some(_) => return Err("params must be an object (A2A uses named parameters)".into()),
        None => None,
    };
    check(method, obj)?;
    Ok(parsed)
}

fn check(method: &Method, params: Option<&Obj>) -> Result<(), String> {
    let optional = matches!(method.family, Family::ListTasks | Family::ExtendedCard);
    let p = match params {
        Some(p) => p,
        None if optional => return Ok(()),
        None => return Err("params is required".into()),
    };
    match (method.family, method.version) {
        (Family::Send | Family::Stream, Version::V0_1) => {
            string(p, "params", "id")?;
            message(p, false)
        }
        (Family::Send | Family::Stream, _) => message(p, true),
        (Family::GetTask, _) => {
            string(p, "params", "id")?;
            history_length(p)
        }
        (Family::CancelTask | Family::Resubscribe, _) => string(p, "params", "id").map(drop),
        (Family::ListTasks | Family::ExtendedCard, _) => Ok(()),
        (Family::PushSet, Version::V1_0) => string(p, "params", "taskId").map(drop),
        (Family::PushSet, v) => {
            string(
                p,
                "params",
                if v == Version::V0_1 { "id" } else { "taskId" },
            )?;
            let cfg = object(p, "params", "pushNotificationConfig")?;
            string(cfg, "params.pushNotificationConfig", "url").map(drop)
        }
        (Family::PushGet | Family::PushList, Version::V1_0) => {
            string(p, "params", "taskId").map(drop)
        }
        (Family::PushDelete, Version::V1_0) => {
            string(p, "params", "taskId")?;
            string(p, "params", "id").map(drop)
        }
        (Family::PushDelete, _) => {
            string(p, "params", "id")?;
            string(p, "params", "pushNotificationConfigId").map(drop)
        }
        (Family::PushGet | Family::PushList, _) => string(p, "params", "id").map(drop),
    }
}

/// params → message → parts → part → member: as deep as checks and routing
/// look. Deeper data is the agent's business.
const INSPECTED_LEVELS: usize = 5;

/// Parses `raw` in one pass, only `levels` deep: below that a value is
/// built from its own text, or becomes `null` when serde_json cannot build
/// it (it refuses nesting past 128 levels, and a message carrying deep data
/// is still a valid message — the upstream gets the original bytes either
/// way). Members are read borrowed; nothing is copied but the values kept.
fn shallow(raw: &RawValue, levels: usize) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let value = Shallow(levels).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads a request's `params` member as [`validate`] would, as part of
/// reading the whole request (`serde(deserialize_with)`).
pub(crate) fn read_member<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Shallow(INSPECTED_LEVELS).deserialize(d).map(Some)
}

/// A value read `0`-many levels deep (see [`shallow`]). Object members in
/// those levels must be unique: JSON leaves duplicates undefined, and an
/// agent that keeps the first value would act on something other than what
/// the gateway checked (a webhook URL, a task id).
#[derive(Clone, Copy)]
struct Shallow(usize);

impl<'de> DeserializeSeed<'de> for Shallow {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.0 == 0 {
            let deeper = <&RawValue>::deserialize(d)?;
            return Ok(serde_json::from_str(deeper.get()).unwrap_or(Value::Null));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shallow {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Shallow(self.0 - 1))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Obj::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "member '{key}' appears twice"
                )));
            }
            let value = map.next_value_seed(Shallow(self.0 - 1))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

const ROLES: [&str; 4] = ["user", "agent", "ROLE_USER", "ROLE_AGENT"];

fn message(p: &Obj, needs_message_id: bool) -> Result<(), String> {
    let msg = object(p, "params", "message")?;
    let role = string(msg, "params.message", "role").map(|_| msg["role"].as_str())?;
    if !role.is_some_and(|r| ROLES.contains(&r)) {
        return Err(format!(
            "params.message.role must be one of {}",
            ROLES.join(", ")
        ));
    }
    match msg.get("parts") {
        None => return Err("params.message.parts is required".into()),
        Some(Value::Array(parts)) if parts.is_empty() => {
            return Err("params.message.parts must contain at least one part".into())
        }
        Some(Value::Array(parts)) => {
            if let Some(i) = parts.iter().position(|part| !part.is_object()) {
                return Err(format!("params.message.parts[{i}] must be an object"));
            }
        }
        Some(_) => return Err("params.message.parts must be an array".into()),
    }
    if needs_message_id {
        string(msg, "params.message", "messageId")?;
    }
    Ok(())
}

fn history_length(p: &Obj) -> Result<(), String> {
    match p.get("historyLength") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(()),
        Some(_) => Err("params.historyLength must be a non-negative integer".into()),
    }
}

fn object<'a>(p: &'a Obj, at: &str, key: &str) -> Result<&'a Obj, String> {
    match p.get(key) {
        Some(Value::Object(o)) => Ok(o),
        None | Some(Value::Null) => Err(format!("{at}.{key} is required")),
        Some(_) => Err(format!("{at}.{key} must be an object")),
    }
}

fn string<'a>(p: &'a Obj, at: &str, key: &str) -> Result<&'a str, String> {
    match p.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("{at}.{key} must not be empty")),
        None | Some(Value::Null) => Err(format!("{at}.{key} is required")),
        Some(_) => Err(format!("{at}.{key} must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;

    fn run(method: &str, params: &str) -> Result<(), String> {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        validate(lookup(method).unwrap(), Some(&raw)).map(|_| ())
    }

    const MSG03: &str = r#"{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}"#;
    const MSG10: &str =
        r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    const MSG01: &str = r#"{"id":"t1","sessionId":"s1","message":{"role":"user","parts":[{"type":"text","text":"hi"}]}}"#;

    #[test]
    fn valid_requests_of_every_version_pass() {
        let ok = [
            ("message/send", MSG03),
            ("message/stream", MSG03),
            ("SendMessage", MSG10),
            ("SendStreamingMessage", MSG10),
            ("tasks/send", MSG01),
            ("tasks/sendSubscribe", MSG01),
            ("tasks/get", r#"{"id":"t1","historyLength":3}"#),
            ("GetTask", r#"{"id":"t1"}"#),
            ("tasks/cancel", r#"{"id":"t1"}"#),
            ("CancelTask", r#"{"id":"t1"}"#),
            ("tasks/resubscribe", r#"{"id":"t1"}"#),
            ("SubscribeToTask", r#"{"id":"t1"}"#),
            ("ListTasks", r#"{"contextId":"c1","pageSize":10}"#),
            (
                "tasks/pushNotificationConfig/set",
                r#"{"taskId":"t1","pushNotificationConfig":{"url":"https://x"}}"#,
            ),
            (
                "tasks/pushNotification/set",
                r#"{"id":"t1","pushNotificationConfig":{"url":"https://x"}}"#,
            ),
            ("tasks/pushNotificationConfig/get", r#"{"id":"t1"}"#),
            ("tasks/pushNotificationConfig/list", r#"{"id":"t1"}"#),
            (
                "tasks/pushNotificationConfig/delete",
                r#"{"id":"t1","pushNotificationConfigId":"p1"}"#,
            ),
            (
                "CreateTaskPushNotificationConfig",
                r#"{"taskId":"t1","url":"https://x"}"#,
            ),
            (
                "GetTaskPushNotificationConfig",
                r#"{"taskId":"t1","id":"p1"}"#,
            ),
            ("ListTaskPushNotificationConfigs", r#"{"taskId":"t1"}"#),
            (
                "DeleteTaskPushNotificationConfig",
                r#"{"taskId":"t1","id":"p1"}"#,
            ),
            ("GetExtendedAgentCard", "{}"),
        ];
        for (method, params) in ok {
            assert_eq!(run(method, params), Ok(()), "{method} {params}");
        }
    }

    #[test]
    fn duplicate_members_are_refused_where_the_gateway_looks() {
        let twice = r#"{"taskId":"t","pushNotificationConfig":{"url":"https://ok.example","url":"http://10.0.0.1"}}"#;
        let err = run("tasks/pushNotificationConfig/set", twice).unwrap_err();
        assert!(err.contains("member 'url' appears twice"), "{err}");
        // Deeper than the gateway reads, data is the agent's business.
        let deep =
            r#"{"message":{"messageId":"m","role":"user","parts":[{"data":{"a":{"b":1,"b":2}}}]}}"#;
        assert_eq!(run("message/send", deep), Ok(()));
    }

    #[test]
    fn deeply_nested_data_is_not_refused() {
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let params = format!(
            r#"{{"message":{{"messageId":"m","role":"user","parts":[{{"kind":"data","data":{{"v":{deep}}}}}]}}}}"#
        );
        assert_eq!(run("message/send", &params), Ok(()));
    }

    #[test]
    fn params_may_be_absent_only_where_optional() {
        assert!(validate(lookup("ListTasks").unwrap(), None).is_ok());
        assert!(validate(lookup("agent/getAuthenticatedExtendedCard").unwrap(), None).is_ok());
        assert_eq!(
            validate(lookup("message/send").unwrap(), None).unwrap_err(),
            "params is required"
        );
    }

    #[test]
    fn each_problem_names_its_field() {
        let cases = [
            ("message/send", r#"{}"#, "params.message is required"),
            (
                "SendMessage",
                r#"{"":"not_a_dict"}"#,
                "params.message is required",
            ),
            (
                "SendMessage",
                r#"{"message":"x"}"#,
                "params.message must be an object",
            ),
            (
                "SendMessage",
                r#"{"message":{"parts":"invalid"}}"#,
                "params.message.role is required",
            ),
            (
                "message/send",
                r#"{"message":{"role":"boss","parts":[{}],"messageId":"m"}}"#,
                "params.message.role must be one of",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","messageId":"m"}}"#,
                "params.message.parts is required",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","parts":[],"messageId":"m"}}"#,
                "at least one part",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","parts":{},"messageId":"m"}}"#,
                "params.message.parts must be an array",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","parts":[{},3],"messageId":"m"}}"#,
                "params.message.parts[1] must be an object",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","parts":[{}]}}"#,
                "params.message.messageId is required",
            ),
            (
                "message/send",
                r#"{"message":{"role":"user","parts":[{}],"messageId":7}}"#,
                "params.message.messageId must be a string",
            ),
            (
                "tasks/send",
                r#"{"message":{"role":"user","parts":[{}]}}"#,
                "params.id is required",
            ),
            ("tasks/get", r#"{}"#, "params.id is required"),
            ("GetTask", r#"{"id":""}"#, "params.id must not be empty"),
            ("GetTask", r#"{"id":5}"#, "params.id must be a string"),
            (
                "tasks/get",
                r#"{"id":"t","historyLength":-1}"#,
                "params.historyLength",
            ),
            (
                "tasks/pushNotificationConfig/set",
                r#"{"taskId":"t"}"#,
                "params.pushNotificationConfig is required",
            ),
            (
                "tasks/pushNotificationConfig/set",
                r#"{"taskId":"t","pushNotificationConfig":{}}"#,
                "params.pushNotificationConfig.url is required",
            ),
            (
                "tasks/pushNotificationConfig/delete",
                r#"{"id":"t"}"#,
                "params.pushNotificationConfigId is required",
            ),
            (
                "DeleteTaskPushNotificationConfig",
                r#"{"taskId":"t"}"#,
                "params.id is required",
            ),
            ("message/send", r#"[1,2]"#, "params must be an object"),
        ];
        for (method, params, want) in cases {
            let got = run(method, params).unwrap_err();
            assert!(
                got.contains(want),
                "{method} {params}: got {got:?}, want {want:?}"
            );
        }
    }
}
