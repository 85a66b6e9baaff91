//! Required-params checks per method. Deliberately lenient about what a
//! version may add (unknown members pass) and strict about what every upstream
//! needs, so the gateway never refuses a request an agent would accept.

use bumpalo::Bump;
use serde_json::value::RawValue;

use super::methods::{Family, Method, Version};
use crate::sketch::{Plain, Reading, Sketch};

/// Checks `params` for `method`, returning them read into `arena` (routing
/// reads them later) or a message naming the missing or wrong field.
pub fn validate<'a>(
    method: &Method,
    params: Option<&'a RawValue>,
    arena: &'a Bump,
) -> Result<Option<Sketch<'a>>, String> {
    let read = match params {
        None => None,
        Some(raw) => Some(read(raw.get(), arena)?),
    };
    check_read(method, read)
}

/// The checks of [`validate`] on params already read (by
/// [`read_member`], in the same pass as the envelope).
pub fn check_read<'a>(
    method: &Method,
    read: Option<Sketch<'a>>,
) -> Result<Option<Sketch<'a>>, String> {
    match &read {
        Some(p @ Sketch::Obj(_)) => check(method, Some(p))?,
        Some(_) => return Err("params must be an object (A2A uses named parameters)".into()),
        None => check(method, None)?,
    }
    Ok(read)
}

fn check(method: &Method, params: Option<&Sketch<'_>>) -> Result<(), String> {
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

/// params → message → parts → part → member → its members: as deep as the
/// checks, routing and the webhook guard look, and the levels in which a
/// repeated member name is refused. Deeper data is the agent's business.
pub(crate) const INSPECTED: Reading<'static> = Reading {
    levels: 6,
    keep: |_| true,
    unique: true,
    plain: None,
};

/// Members to which A2A gives long strings: a text part's `text`, a file's
/// `bytes` (0.2/0.3) and a 1.0 part's `raw`.
pub(crate) fn long_text(name: &str) -> bool {
    matches!(name, "text" | "bytes" | "raw")
}

/// Reads params text as [`validate`] does. Object members in the inspected
/// levels must be unique: JSON leaves duplicates undefined, and an agent
/// that keeps the first value would act on something other than what the
/// gateway checked (a webhook URL, a task id).
pub fn read<'a>(text: &'a str, arena: &'a Bump) -> Result<Sketch<'a>, String> {
    INSPECTED
        .parse(text, arena)
        .map_err(|e| format!("params: {e}"))
}

/// How a request's `params` member is read as part of reading the whole
/// request, `source`: as [`validate`] reads it, with long strings read plain
/// when `source` allows it (the same reading, with less work).
pub(crate) fn member_reading(source: &str) -> Reading<'_> {
    Reading {
        plain: Plain::of(source, long_text),
        ..INSPECTED
    }
}

/// Tests write params with `json!`: this reads one as [`read`] does. The
/// text is leaked so that the reading can borrow it for the whole test.
#[cfg(test)]
pub(crate) fn sketch_of(params: &serde_json::Value) -> &'static Sketch<'static> {
    let text: &'static str = Box::leak(params.to_string().into_boxed_str());
    let arena: &'static Bump = Box::leak(Box::default());
    Box::leak(Box::new(read(text, arena).expect("test params are JSON")))
}

const ROLES: [&str; 4] = ["user", "agent", "ROLE_USER", "ROLE_AGENT"];

fn message(p: &Sketch<'_>, needs_message_id: bool) -> Result<(), String> {
    let msg = object(p, "params", "message")?;
    let role = string(msg, "params.message", "role")?;
    if !ROLES.contains(&role) {
        return Err(format!(
            "params.message.role must be one of {}",
            ROLES.join(", ")
        ));
    }
    match msg.get("parts") {
        None => return Err("params.message.parts is required".into()),
        Some(Sketch::Arr([])) => {
            return Err("params.message.parts must contain at least one part".into())
        }
        Some(Sketch::Arr(parts)) => {
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

fn history_length(p: &Sketch<'_>) -> Result<(), String> {
    match p.get("historyLength") {
        None | Some(Sketch::Null) => Ok(()),
        Some(n) if n.as_u64().is_some() => Ok(()),
        Some(_) => Err("params.historyLength must be a non-negative integer".into()),
    }
}

fn object<'s, 'a>(p: &'s Sketch<'a>, at: &str, key: &str) -> Result<&'s Sketch<'a>, String> {
    match p.get(key) {
        Some(o @ Sketch::Obj(_)) => Ok(o),
        None | Some(Sketch::Null) => Err(format!("{at}.{key} is required")),
        Some(_) => Err(format!("{at}.{key} must be an object")),
    }
}

fn string<'s>(p: &'s Sketch<'_>, at: &str, key: &str) -> Result<&'s str, String> {
    match p.get(key) {
        Some(Sketch::Str(s)) if !s.is_empty() => Ok(s),
        Some(Sketch::Str(_)) => Err(format!("{at}.{key} must not be empty")),
        None | Some(Sketch::Null) => Err(format!("{at}.{key} is required")),
        Some(_) => Err(format!("{at}.{key} must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;

    fn run(method: &str, params: &str) -> Result<(), String> {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        validate(lookup(method).unwrap(), Some(&raw), &Bump::new()).map(|_| ())
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
        assert!(validate(lookup("ListTasks").unwrap(), None, &Bump::new()).is_ok());
        assert!(validate(
            lookup("agent/getAuthenticatedExtendedCard").unwrap(),
            None,
            &Bump::new()
        )
        .is_ok());
        assert_eq!(
            validate(lookup("message/send").unwrap(), None, &Bump::new()).unwrap_err(),
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
