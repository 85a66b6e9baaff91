//! Reading a call's params into the model: one serde pass over the
//! `params` member's text, with the path of whatever is wrong.

use serde::Deserialize;
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
    Ok(match method.family {
        Family::Send | Family::Stream => Params::Send(typed::<SendParams<'a>>(text)?),
        Family::GetTask
        | Family::CancelTask
        | Family::Resubscribe
        | Family::PushGet
        | Family::PushList
        | Family::PushDelete => Params::Task(typed::<TaskParams<'a>>(text)?),
        Family::ListTasks => Params::List(typed::<ListParams<'a>>(text)?),
        Family::PushSet => Params::PushSet(typed::<PushConfig<'a>>(text)?),
        Family::ExtendedCard => Params::Card,
    })
}

fn typed<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| describe("params", &e))
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
