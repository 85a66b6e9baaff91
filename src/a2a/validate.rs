//! What each operation's params must carry, per version, checked on the
//! model. Deliberately lenient about what a version may add (unknown
//! members pass) and strict about what every agent needs, so the gateway
//! never refuses a call an agent would take, and never passes one on that
//! no agent can read.

use std::borrow::Cow;

use super::methods::{Family, Method, Version};
use super::model::{Message, Params, Part, PushConfig};

/// Checks `params` for `method`; the message names the member at fault.
pub fn check(method: &Method, params: &Params<'_>) -> Result<(), String> {
    use {Family as F, Version as V};
    let at = "params";
    if let Some(t) = params.tenant() {
        tenant(t)?;
    }
    match (params, method.family, method.version) {
        (Params::Absent, F::ListTasks | F::ExtendedCard, _) => Ok(()),
        (Params::Absent, _, _) => Err("params is required".into()),
        (Params::Send(p), _, V::V0_1) => {
            required(&p.id, at, "id")?;
            message(p.message.as_ref(), method.version)
        }
        (Params::Send(p), _, v) => message(p.message.as_ref(), v),
        (Params::Task(p), F::PushGet | F::PushList, V::V1_0) => {
            required(&p.task_id, at, "taskId").map(drop)
        }
        (Params::Task(p), F::PushDelete, V::V1_0) => {
            required(&p.task_id, at, "taskId")?;
            required(&p.id, at, "id").map(drop)
        }
        (Params::Task(p), F::PushDelete, _) => {
            required(&p.id, at, "id")?;
            required(
                &p.push_notification_config_id,
                at,
                "pushNotificationConfigId",
            )
            .map(drop)
        }
        (Params::Task(p), _, _) => required(&p.id, at, "id").map(drop),
        (Params::PushSet(p), _, V::V1_0) => required(&p.task_id, at, "taskId").map(drop),
        (Params::PushSet(p), _, v) => {
            let task = if v == V::V0_1 { &p.id } else { &p.task_id };
            let name = if v == V::V0_1 { "id" } else { "taskId" };
            required(task, at, name)?;
            nested_config(p)
        }
        (Params::List(_) | Params::Card, _, _) => Ok(()),
    }
}

/// A tenant holds what a URL path may: RFC 3986's unreserved characters
/// (letters, digits, `-`, `.`, `_`, `~`) and `/` between segments (a REST
/// path's tenant is one segment by its route). Anything else, a control
/// character above all, could reach an agent's path or logs as something
/// other than a tenant. The message names it escaped.
pub fn tenant(tenant: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '/');
    if tenant.chars().all(allowed) {
        return Ok(());
    }
    let shown: String = tenant.chars().take(128).collect();
    Err(format!(
        "tenant '{}' may hold only letters, digits, '-', '.', '_', '~' and '/'",
        shown.escape_default()
    ))
}

/// 0.1/0.3 set: `pushNotificationConfig{url}`.
fn nested_config(p: &PushConfig<'_>) -> Result<(), String> {
    let at = "params.pushNotificationConfig";
    match p.push_notification_config.as_deref() {
        None => Err(format!("{at} is required")),
        Some(config) => required(&config.url, at, "url").map(drop),
    }
}

fn message(msg: Option<&Message<'_>>, version: Version) -> Result<(), String> {
    let at = "params.message";
    let msg = msg.ok_or_else(|| format!("{at} is required"))?;
    if msg.role.is_none() {
        return Err(format!("{at}.role is required"));
    }
    // 0.1 messages have no id; later versions require one.
    if version != Version::V0_1 {
        required(&msg.message_id, at, "messageId")?;
    }
    match msg.parts.as_deref() {
        None => return Err(format!("{at}.parts is required")),
        Some([]) => return Err(format!("{at}.parts must contain at least one part")),
        Some(parts) => {
            for (i, part) in parts.iter().enumerate() {
                part_problem(part, version).map_err(|why| format!("{at}.parts[{i}] {why}"))?;
            }
        }
    }
    Ok(())
}

/// A part carries exactly one content, in its version's way.
fn part_problem(part: &Part<'_>, version: Version) -> Result<(), String> {
    match version {
        Version::V0_1 => tagged(part, "type", part.type_.as_deref()),
        Version::V0_3 => tagged(part, "kind", part.kind.as_deref()),
        Version::V1_0 => one_content(part),
    }
}

/// 0.1 (`type`) and 0.2/0.3 (`kind`): the tag names the member that holds
/// the content.
fn tagged(part: &Part<'_>, tag: &str, value: Option<&str>) -> Result<(), String> {
    let Some(value) = value else {
        return Err(format!(
            "has no '{tag}': it must be \"text\", \"file\" or \"data\""
        ));
    };
    match value {
        "text" if part.text.is_some() => Ok(()),
        "text" => Err("is a text part without 'text'".into()),
        "data" => match part.data.map(|d| d.get().starts_with('{')) {
            Some(true) => Ok(()),
            Some(false) => Err("has 'data' that is not an object".into()),
            None => Err("is a data part without 'data'".into()),
        },
        "file" => match &part.file {
            None => Err("is a file part without 'file'".into()),
            Some(f) => match (&f.bytes, &f.uri) {
                (Some(_), None) | (None, Some(_)) => Ok(()),
                (None, None) => Err("has a 'file' with neither 'bytes' nor 'uri'".into()),
                (Some(_), Some(_)) => Err("has a 'file' with both 'bytes' and 'uri'".into()),
            },
        },
        other => Err(format!(
            "has '{tag}' \"{}\": it must be \"text\", \"file\" or \"data\"",
            shown(other)
        )),
    }
}

/// 1.0: the `content` oneof, exactly one of `text`, `raw`, `url`, `data`.
fn one_content(part: &Part<'_>) -> Result<(), String> {
    let set: Vec<&str> = [
        ("text", part.text.is_some()),
        ("raw", part.raw.is_some()),
        ("url", part.url.is_some()),
        ("data", part.data.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, is_set)| is_set.then_some(name))
    .collect();
    match set.as_slice() {
        [_] => Ok(()),
        [] => Err("has no content: a 1.0 part needs exactly one of text, raw, url, data".into()),
        many => Err(format!(
            "has {}: a 1.0 part carries exactly one of text, raw, url, data",
            many.join(" and ")
        )),
    }
}

/// A client's value in a message, cut short.
fn shown(value: &str) -> String {
    value.chars().take(32).collect()
}

fn required<'s>(value: &'s Option<Cow<'_, str>>, at: &str, name: &str) -> Result<&'s str, String> {
    match value.as_deref() {
        Some("") => Err(format!("{at}.{name} must not be empty")),
        Some(s) => Ok(s),
        None => Err(format!("{at}.{name} is required")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;
    use crate::a2a::model::read;
    use serde_json::value::RawValue;

    fn run(method: &str, params: &str) -> Result<(), String> {
        let method = lookup(method).unwrap();
        let raw: &'static RawValue = Box::leak(RawValue::from_string(params.to_string()).unwrap());
        let p = read::params(method, Some(raw))?;
        check(method, &p)
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

    /// Every member the gateway reads, under its proto name (the 1.0
    /// conformance suite writes these).
    #[test]
    fn proto_field_names_are_accepted() {
        let ok = [
            (
                "CreateTaskPushNotificationConfig",
                r#"{"task_id":"t1","url":"https://x"}"#,
            ),
            (
                "GetTaskPushNotificationConfig",
                r#"{"task_id":"t1","id":"p1"}"#,
            ),
            ("ListTaskPushNotificationConfigs", r#"{"task_id":"t1"}"#),
            (
                "DeleteTaskPushNotificationConfig",
                r#"{"task_id":"t1","id":"p1"}"#,
            ),
            ("GetTask", r#"{"id":"t1","history_length":2}"#),
            (
                "ListTasks",
                r#"{"context_id":"c","page_size":"5","page_token":"x","history_length":1}"#,
            ),
            (
                "SendMessage",
                r#"{"message":{"message_id":"m","role":"ROLE_USER","task_id":"t","context_id":"c","parts":[{"raw":"aGk=","media_type":"text/plain"}]},
                    "configuration":{"accepted_output_modes":["text/plain"],"history_length":1,"return_immediately":true,
                                     "task_push_notification_config":{"url":"https://x"}}}"#,
            ),
            (
                "message/send",
                r#"{"message":{"kind":"message","message_id":"m","role":"user","parts":[{"kind":"file","file":{"uri":"https://x","mime_type":"a/b"}}]},
                    "configuration":{"push_notification_config":{"url":"https://x"}}}"#,
            ),
            (
                "tasks/pushNotificationConfig/set",
                r#"{"task_id":"t1","push_notification_config":{"url":"https://x"}}"#,
            ),
            (
                "tasks/pushNotificationConfig/delete",
                r#"{"id":"t1","push_notification_config_id":"p1"}"#,
            ),
        ];
        for (method, params) in ok {
            assert_eq!(run(method, params), Ok(()), "{method} {params}");
        }
        // ProtoJSON enums by number.
        assert_eq!(
            run(
                "SendMessage",
                r#"{"message":{"messageId":"m","role":1,"parts":[{"text":"x"}]}}"#
            ),
            Ok(())
        );
    }

    #[test]
    fn parts_carry_exactly_one_content() {
        let bad03 = |part: &str| {
            format!(
                r#"{{"message":{{"messageId":"m","role":"user","parts":[{{"kind":"text","text":"ok"}},{part}]}}}}"#
            )
        };
        let bad10 = |part: &str| {
            format!(r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{part}]}}}}"#)
        };
        let bad01 =
            |part: &str| format!(r#"{{"id":"t","message":{{"role":"user","parts":[{part}]}}}}"#);
        let cases = [
            (
                "message/send",
                bad03(r#"{"kind":"bogus"}"#),
                "params.message.parts[1] has 'kind' \"bogus\"",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"text"}"#),
                "params.message.parts[1] is a text part without 'text'",
            ),
            (
                "message/send",
                bad03(r#"{"text":"no kind"}"#),
                "params.message.parts[1] has no 'kind'",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"file","file":{}}"#),
                "neither 'bytes' nor 'uri'",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"file","file":{"bytes":"aGk=","uri":"https://x"}}"#),
                "both 'bytes' and 'uri'",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"file"}"#),
                "file part without 'file'",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"data"}"#),
                "data part without 'data'",
            ),
            (
                "message/send",
                bad03(r#"{"kind":"data","data":[1]}"#),
                "'data' that is not an object",
            ),
            (
                "SendMessage",
                bad10("{}"),
                "params.message.parts[0] has no content",
            ),
            (
                "SendMessage",
                bad10(r#"{"text":"a","url":"https://x"}"#),
                "params.message.parts[0] has text and url",
            ),
            (
                "SendMessage",
                bad10(r#"{"mediaType":"text/plain"}"#),
                "has no content",
            ),
            (
                "tasks/send",
                bad01(r#"{"type":"bogus"}"#),
                "params.message.parts[0] has 'type' \"bogus\"",
            ),
            (
                "tasks/send",
                bad01(r#"{"type":"text"}"#),
                "text part without 'text'",
            ),
        ];
        for (method, params, want) in cases {
            let got = run(method, &params).unwrap_err();
            assert!(
                got.contains(want),
                "{method} {params}: {got:?}, want {want:?}"
            );
        }
        // Every content of each version, alone, passes.
        for part in [
            r#"{"text":"a"}"#,
            r#"{"raw":"aGk="}"#,
            r#"{"url":"https://x"}"#,
            r#"{"data":[1]}"#,
            r#"{"data":"s"}"#,
        ] {
            assert_eq!(run("SendMessage", &bad10(part)), Ok(()), "{part}");
        }
        for part in [
            r#"{"kind":"file","file":{"bytes":"aGk="}}"#,
            r#"{"kind":"data","data":{}}"#,
        ] {
            assert_eq!(run("message/stream", &bad03(part)), Ok(()), "{part}");
        }
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
                r#"{"message":{"parts":[{"text":"x"}]}}"#,
                "params.message.role is required",
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
                r#"{"message":{"role":"user","parts":[{"kind":"text","text":"x"}]}}"#,
                "params.message.messageId is required",
            ),
            (
                "tasks/send",
                r#"{"message":{"role":"user","parts":[{"type":"text","text":"x"}]}}"#,
                "params.id is required",
            ),
            ("tasks/get", r#"{}"#, "params.id is required"),
            ("GetTask", r#"{"id":""}"#, "params.id must not be empty"),
            ("CancelTask", r#"{"id":null}"#, "params.id is required"),
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
            (
                "CreateTaskPushNotificationConfig",
                r#"{"url":"https://x"}"#,
                "params.taskId is required",
            ),
        ];
        for (method, params, want) in cases {
            let got = run(method, params).unwrap_err();
            assert!(
                got.contains(want),
                "{method} {params}: got {got:?}, want {want:?}"
            );
        }
        let absent = check(lookup("message/send").unwrap(), &Params::Absent).unwrap_err();
        assert_eq!(absent, "params is required");
        assert!(check(lookup("ListTasks").unwrap(), &Params::Absent).is_ok());
        assert!(check(
            lookup("agent/getAuthenticatedExtendedCard").unwrap(),
            &Params::Absent
        )
        .is_ok());
    }
}
