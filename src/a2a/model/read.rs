//! Reading a call's params into the model: one serde pass over the
//! `params` member (`by_family`, which the one-pass read of a JSON-RPC
//! request uses too), with the path of whatever is wrong.

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::params::{ListParams, Params, PushConfig, SendParams, TaskParams};
use crate::a2a::{Family, Method};

/// Reads `params` for `method`. The message names the member at fault, as
/// `params.message.parts[1].text must be a string`.
pub fn params<'a>(method: &Method, raw: Option<&'a RawValue>) -> Result<Params<'a>, String> {
    let Some(raw) = raw else {
        return Ok(Params::Absent);
    };
    // A2A's params are named: serde would read an array as a struct's
    // fields in order.
    if !raw.get().starts_with('{') {
        return Err("params must be an object (A2A uses named parameters)".into());
    }
    let text = raw.get();
    let mut de = serde_json::Deserializer::from_str(text);
    if let Ok(read) = by_family(method, &mut de) {
        if de.end().is_ok() {
            return Ok(read);
        }
    }
    // Refused params are read a second time, with the path tracked, for
    // the message: tracking the path of every value cost more than the
    // reading itself (callgrind), and most calls are valid.
    let mut track = serde_path_to_error::Track::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let tracked = serde_path_to_error::Deserializer::new(&mut de, &mut track);
    match by_family(method, tracked) {
        Ok(read) => Ok(read),
        Err(e) => Err(describe(
            "params",
            &serde_path_to_error::Error::new(track.path(), e),
        )),
    }
}

/// The params object in `d` read as `method`'s params type.
pub fn by_family<'de, D: Deserializer<'de>>(
    method: &Method,
    d: D,
) -> Result<Params<'de>, D::Error> {
    Ok(match method.family {
        Family::Send | Family::Stream => Params::Send(Box::new(SendParams::deserialize(d)?)),
        Family::GetTask
        | Family::CancelTask
        | Family::Resubscribe
        | Family::PushGet
        | Family::PushList
        | Family::PushDelete => Params::Task(TaskParams::deserialize(d)?),
        Family::ListTasks => Params::List(ListParams::deserialize(d)?),
        Family::PushSet => Params::PushSet(PushConfig::deserialize(d)?),
        Family::ExtendedCard => {
            IgnoredAny::deserialize(d)?;
            Params::Card
        }
    })
}

/// `at.path` and what is wrong there, in words a client can act on:
/// serde's `invalid type: integer `7`, expected a string` becomes
/// `… must be a string`.
pub fn describe(at: &str, e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let at = if path == "." {
        at.to_string()
    } else {
        format!("{at}.{path}")
    };
    let inner = e.inner().to_string();
    let inner = match inner.find(" at line ") {
        Some(i) => &inner[..i],
        None => &inner,
    };
    if let Some((_, expected)) = inner
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.split_once(", expected "))
    {
        return format!("{at} must be {}", plain(expected));
    }
    if let Some(name) = inner
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return format!(
            "{at}: member '{name}' appears twice (or under both its JSON and proto names)"
        );
    }
    if inner.starts_with("must ") {
        return format!("{at} {inner}");
    }
    format!("{at}: {inner}")
}

/// serde's names of JSON types, as a client knows them.
fn plain(expected: &str) -> &str {
    match expected {
        "a sequence" => "an array",
        "a boolean" => "true or false",
        "a map" => "an object",
        s if s.starts_with("struct ") => "an object",
        s => s,
    }
}

/// Tests write params with `json!`: this reads one for `method` as the
/// front door does. The text is leaked so that the reading can borrow it
/// for the whole test.
#[cfg(test)]
pub(crate) fn params_of(method: &str, params: &serde_json::Value) -> &'static Params<'static> {
    let method = crate::a2a::methods::lookup(method).expect("a known method");
    let raw: &'static RawValue =
        Box::leak(RawValue::from_string(params.to_string()).expect("test params are JSON"));
    Box::leak(Box::new(
        self::params(method, Some(raw)).expect("test params read"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;

    fn read(method: &str, text: &str) -> Result<String, String> {
        let raw = RawValue::from_string(text.to_string()).unwrap();
        let raw: &'static RawValue = Box::leak(raw);
        params(lookup(method).unwrap(), Some(raw)).map(|p| format!("{p:?}"))
    }

    #[test]
    fn type_errors_name_the_member() {
        let cases = [
            (
                "message/send",
                r#"{"message":{"messageId":7}}"#,
                "params.message.messageId must be a string",
            ),
            (
                "message/send",
                r#"{"message":"hi"}"#,
                "params.message must be an object",
            ),
            (
                "message/send",
                r#"{"message":{"parts":"x"}}"#,
                "params.message.parts must be an array",
            ),
            (
                "message/send",
                r#"{"message":{"parts":[{},3]}}"#,
                "params.message.parts[1] must be an object",
            ),
            (
                "SendMessage",
                r#"{"message":{"parts":[{"text":5}]}}"#,
                "params.message.parts[0].text must be a string",
            ),
            (
                "message/send",
                r#"{"message":{"role":"boss"}}"#,
                "params.message.role must be one of user, agent, ROLE_USER, ROLE_AGENT",
            ),
            ("GetTask", r#"{"id":5}"#, "params.id must be a string"),
            (
                "tasks/get",
                r#"{"id":"t","historyLength":-1}"#,
                "params.historyLength must be a non-negative integer",
            ),
            (
                "SendMessage",
                r#"{"configuration":{"returnImmediately":"yes"}}"#,
                "params.configuration.returnImmediately must be true or false",
            ),
            ("tasks/get", "[1,2]", "params must be an object"),
        ];
        for (method, params, want) in cases {
            let got = read(method, params).unwrap_err();
            assert!(
                got.contains(want),
                "{method} {params}: {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn a_repeated_member_is_refused_with_its_place() {
        let got = read(
            "tasks/pushNotificationConfig/set",
            r#"{"taskId":"t","pushNotificationConfig":{"url":"https://ok.example","url":"http://10.0.0.1"}}"#,
        )
        .unwrap_err();
        assert!(got.contains("params.pushNotificationConfig"), "{got}");
        assert!(got.contains("member 'url' appears twice"), "{got}");
        let got = read("GetTask", r#"{"id":"a","id":"b"}"#).unwrap_err();
        assert!(got.contains("member 'id' appears twice"), "{got}");
        let got = read(
            "message/send",
            r#"{"message":{"metadata":{"skillId":"a","skillId":"b"}}}"#,
        )
        .unwrap_err();
        assert!(got.contains("params.message.metadata"), "{got}");
        assert!(got.contains("member 'skillId' appears twice"), "{got}");
    }

    #[test]
    fn unknown_members_and_deep_data_pass() {
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let p = format!(
            r#"{{"message":{{"messageId":"m","x":{{"a":1,"a":2}},"parts":[{{"kind":"data","data":{{"v":{deep},"k":1,"k":2}}}}]}},"extra":true}}"#
        );
        assert!(read("message/send", &p).is_ok());
    }

    #[test]
    fn absent_params_are_absent() {
        let p = params(lookup("ListTasks").unwrap(), None).unwrap();
        assert!(matches!(p, Params::Absent));
    }
}

/// Every member the model reads under two names, read both ways: the
/// lowerCamel JSON name and the proto field name give the same value.
#[cfg(test)]
mod proto_names {
    use super::params_of;
    use crate::a2a::model::Params;
    use serde_json::json;

    type Pick = fn(&'static Params<'static>) -> Option<String>;

    fn send(p: &'static Params<'static>) -> &'static crate::a2a::model::SendParams<'static> {
        p.send().expect("send params")
    }

    fn message(p: &'static Params<'static>) -> &'static crate::a2a::model::Message<'static> {
        p.message().expect("a message")
    }

    fn part(p: &'static Params<'static>) -> &'static crate::a2a::model::Part<'static> {
        &message(p).parts.as_ref().expect("parts")[0]
    }

    fn task(p: &'static Params<'static>) -> &'static crate::a2a::model::TaskParams<'static> {
        p.task().expect("task params")
    }

    fn list(p: &'static Params<'static>) -> &'static crate::a2a::model::ListParams<'static> {
        match p {
            Params::List(l) => l,
            other => panic!("list params, not {other:?}"),
        }
    }

    fn push(p: &'static Params<'static>) -> &'static crate::a2a::model::PushConfig<'static> {
        match p {
            Params::PushSet(c) => c,
            other => panic!("a push config, not {other:?}"),
        }
    }

    fn configuration(
        p: &'static Params<'static>,
    ) -> &'static crate::a2a::model::SendConfiguration<'static> {
        send(p).configuration.as_ref().expect("configuration")
    }

    /// (method, JSON name, proto name, where the member sits as JSON with
    /// `@` for the member, the value, what reads it).
    fn cases() -> Vec<(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        serde_json::Value,
        Pick,
    )> {
        let s = |v: &str| json!(v);
        vec![
            (
                "SendMessage",
                "messageId",
                "message_id",
                r#"{"message":{@}}"#,
                s("m"),
                |p| message(p).message_id.as_deref().map(str::to_owned),
            ),
            (
                "SendMessage",
                "taskId",
                "task_id",
                r#"{"message":{@}}"#,
                s("t"),
                |p| message(p).task_id.as_deref().map(str::to_owned),
            ),
            (
                "SendMessage",
                "contextId",
                "context_id",
                r#"{"message":{@}}"#,
                s("c"),
                |p| message(p).context_id.as_deref().map(str::to_owned),
            ),
            (
                "SendMessage",
                "referenceTaskIds",
                "reference_task_ids",
                r#"{"message":{"parts":[{"text":"x"}],@}}"#,
                json!(["r"]),
                |p| message(p).reference_task_ids.map(|r| r.get().to_owned()),
            ),
            (
                "SendMessage",
                "mediaType",
                "media_type",
                r#"{"message":{"parts":[{"raw":"aGk=",@}]}}"#,
                s("text/plain"),
                |p| part(p).media_type.as_deref().map(str::to_owned),
            ),
            (
                "message/send",
                "mimeType",
                "mime_type",
                r#"{"message":{"parts":[{"kind":"file","file":{"uri":"u",@}}]}}"#,
                s("a/b"),
                |p| {
                    part(p)
                        .file
                        .as_ref()
                        .and_then(|f| f.mime_type.as_deref())
                        .map(str::to_owned)
                },
            ),
            (
                "SendMessage",
                "acceptedOutputModes",
                "accepted_output_modes",
                r#"{"configuration":{@}}"#,
                json!(["text/plain"]),
                |p| {
                    configuration(p)
                        .accepted_output_modes
                        .map(|r| r.get().to_owned())
                },
            ),
            (
                "SendMessage",
                "historyLength",
                "history_length",
                r#"{"configuration":{@}}"#,
                json!(3),
                |p| configuration(p).history_length.map(|c| c.0.to_string()),
            ),
            (
                "SendMessage",
                "returnImmediately",
                "return_immediately",
                r#"{"configuration":{@}}"#,
                json!(true),
                |p| configuration(p).return_immediately.map(|b| b.to_string()),
            ),
            (
                "SendMessage",
                "taskPushNotificationConfig",
                "task_push_notification_config",
                r#"{"configuration":{@}}"#,
                json!({"url": "https://x"}),
                |p| {
                    configuration(p)
                        .task_push_notification_config
                        .as_ref()
                        .and_then(|c| c.url.as_deref())
                        .map(str::to_owned)
                },
            ),
            (
                "message/send",
                "pushNotificationConfig",
                "push_notification_config",
                r#"{"configuration":{@}}"#,
                json!({"url": "https://x"}),
                |p| {
                    configuration(p)
                        .push_notification_config
                        .as_ref()
                        .and_then(|c| c.url.as_deref())
                        .map(str::to_owned)
                },
            ),
            (
                "tasks/send",
                "sessionId",
                "session_id",
                "{@}",
                s("s"),
                |p| send(p).session_id.as_deref().map(str::to_owned),
            ),
            (
                "tasks/send",
                "pushNotification",
                "push_notification",
                "{@}",
                json!({"url": "https://x"}),
                |p| {
                    send(p)
                        .push_notification
                        .as_ref()
                        .and_then(|c| c.url.as_deref())
                        .map(str::to_owned)
                },
            ),
            (
                "tasks/send",
                "historyLength",
                "history_length",
                "{@}",
                json!(2),
                |p| send(p).history_length.map(|c| c.0.to_string()),
            ),
            (
                "GetTask",
                "historyLength",
                "history_length",
                "{@}",
                json!(4),
                |p| task(p).history_length.map(|c| c.0.to_string()),
            ),
            (
                "GetTaskPushNotificationConfig",
                "taskId",
                "task_id",
                "{@}",
                s("t"),
                |p| task(p).task_id.as_deref().map(str::to_owned),
            ),
            (
                "tasks/pushNotificationConfig/get",
                "pushNotificationConfigId",
                "push_notification_config_id",
                "{@}",
                s("c"),
                |p| {
                    task(p)
                        .push_notification_config_id
                        .as_deref()
                        .map(str::to_owned)
                },
            ),
            ("ListTasks", "contextId", "context_id", "{@}", s("c"), |p| {
                list(p).context_id.as_deref().map(str::to_owned)
            }),
            (
                "ListTasks",
                "pageSize",
                "page_size",
                "{@}",
                json!(10),
                |p| list(p).page_size.map(|c| c.0.to_string()),
            ),
            ("ListTasks", "pageToken", "page_token", "{@}", s("n"), |p| {
                list(p).page_token.as_deref().map(str::to_owned)
            }),
            (
                "ListTasks",
                "historyLength",
                "history_length",
                "{@}",
                json!(1),
                |p| list(p).history_length.map(|c| c.0.to_string()),
            ),
            (
                "CreateTaskPushNotificationConfig",
                "taskId",
                "task_id",
                "{@}",
                s("t"),
                |p| push(p).task_id.as_deref().map(str::to_owned),
            ),
            (
                "tasks/pushNotificationConfig/set",
                "pushNotificationConfig",
                "push_notification_config",
                "{@}",
                json!({"url": "https://x"}),
                |p| {
                    push(p)
                        .push_notification_config
                        .as_ref()
                        .and_then(|c| c.url.as_deref())
                        .map(str::to_owned)
                },
            ),
        ]
    }

    #[test]
    fn each_member_reads_the_same_under_both_names() {
        for (method, json_name, proto_name, shape, value, pick) in cases() {
            let read = |name: &str| {
                let member = format!("{}:{}", json!(name), value);
                let text = shape.replace('@', &member);
                let params: serde_json::Value = serde_json::from_str(&text).expect("a case's JSON");
                pick(params_of(method, &params))
            };
            let (camel, snake) = (read(json_name), read(proto_name));
            assert!(camel.is_some(), "{method} {json_name}: not read");
            assert_eq!(camel, snake, "{method}: {json_name} / {proto_name}");
        }
    }

    #[test]
    fn answers_read_both_names_too() {
        use crate::a2a::model::answer::read;
        for (json_name, proto_name) in [
            ("taskId", "task_id"),
            ("contextId", "context_id"),
            ("sessionId", "session_id"),
        ] {
            for name in [json_name, proto_name] {
                let text = format!(r#"{{"result":{{"{name}":"x"}}}}"#);
                let answer = read(&text).expect("JSON");
                let item = answer.result.get().expect("an object");
                let got = match json_name {
                    "taskId" => item.task_id.as_deref(),
                    "contextId" => item.context_id.as_deref(),
                    _ => item.session_id.as_deref(),
                };
                assert_eq!(got, Some("x"), "{name}");
            }
        }
        for (json_name, proto_name) in [
            ("statusUpdate", "status_update"),
            ("artifactUpdate", "artifact_update"),
        ] {
            for name in [json_name, proto_name] {
                let text = format!(r#"{{"result":{{"{name}":{{"taskId":"t"}}}}}}"#);
                let answer = read(&text).expect("JSON");
                let item = answer.result.get().expect("an object");
                let inner = if json_name == "statusUpdate" {
                    &item.status_update
                } else {
                    &item.artifact_update
                };
                assert!(inner.get().is_some(), "{name}");
            }
        }
    }
}
