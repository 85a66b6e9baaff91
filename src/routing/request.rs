//! What a request says about where it should go: the task or context it
//! continues, the skill it names, and the text a matcher can read. Pure.

use std::borrow::Cow;

use http::{HeaderMap, HeaderName};

use crate::a2a::model::Params;
use crate::a2a::{Family, Method, Version};

/// A task the request refers to. `must_exist` is false for a 0.1
/// `tasks/send`, where the client picks the id of a new task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    pub must_exist: bool,
}

/// A non-empty id, owned.
fn id(value: &Option<Cow<'_, str>>) -> Option<String> {
    value
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The task id a call is about, if any.
pub fn task_ref(method: &Method, params: &Params<'_>) -> Option<TaskRef> {
    let must = |id: Option<String>| {
        id.map(|id| TaskRef {
            id,
            must_exist: true,
        })
    };
    match (params, method.family, method.version) {
        (Params::Send(p), _, Version::V0_1) => id(&p.id).map(|id| TaskRef {
            id,
            must_exist: false,
        }),
        (Params::Send(p), _, _) => must(id(&p.message.as_ref()?.task_id)),
        (
            Params::Task(p),
            Family::PushGet | Family::PushList | Family::PushDelete,
            Version::V1_0,
        ) => must(id(&p.task_id)),
        (Params::Task(p), _, _) => must(id(&p.id)),
        (Params::PushSet(p), _, Version::V0_1) => must(id(&p.id)),
        (Params::PushSet(p), _, _) => must(id(&p.task_id)),
        _ => None,
    }
}

/// The conversation a message continues (0.3/1.0 `contextId`, 0.1 `sessionId`).
pub fn context_ref(method: &Method, params: &Params<'_>) -> Option<String> {
    match (params, method.version) {
        (Params::Send(p), Version::V0_1) => id(&p.session_id),
        (Params::Send(p), _) => id(&p.message.as_ref()?.context_id),
        (Params::List(p), _) => id(&p.context_id),
        _ => None,
    }
}

/// The skill a client names: the configured header first, then the
/// configured keys of `params.metadata` and `params.message.metadata`.
pub fn skill_hint(
    headers: &HeaderMap,
    header: &HeaderName,
    keys: &[String],
    params: &Params<'_>,
) -> Option<String> {
    if let Some(v) = headers.get(header).and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        if !v.is_empty() {
            return Some(v.to_string());
        }
    }
    let metadata = [
        params.metadata(),
        params.message().and_then(|m| m.metadata.as_ref()),
    ];
    metadata.into_iter().flatten().find_map(|m| {
        keys.iter()
            .find_map(|k| m.text(k))
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().to_string())
    })
}

/// The matcher reads at most this much of a message: intent shows early,
/// and scoring cost must not grow with a client's payload.
pub const MAX_MATCHED_CHARS: usize = 2048;

/// The text of a message's text parts, for the matcher (bounded).
pub fn message_text(params: &Params<'_>) -> Option<String> {
    let parts = params.message()?.parts.as_deref()?;
    let mut text = String::new();
    let mut room = MAX_MATCHED_CHARS;
    for part in parts.iter().filter_map(|p| p.text()) {
        if room == 0 {
            break;
        }
        if !text.is_empty() {
            text.push('\n');
            room -= 1;
        }
        let (taken, chars) = first_chars(part, room);
        room -= chars;
        text.push_str(taken);
    }
    (!text.is_empty()).then_some(text)
}

/// The first `max` characters of `s` (all of it when shorter), and how
/// many characters that is.
fn first_chars(s: &str, max: usize) -> (&str, usize) {
    if s.len() <= max {
        // At most `max` bytes: at most `max` characters.
        return (s, s.chars().count());
    }
    match s.char_indices().nth(max) {
        Some((end, _)) => (&s[..end], max),
        None => (s, s.chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::methods::lookup;
    use crate::a2a::model::read::params_of;
    use serde_json::{json, Value};

    fn tref(method: &str, params: Value) -> Option<TaskRef> {
        task_ref(lookup(method).unwrap(), params_of(method, &params))
    }

    #[test]
    fn task_refs_of_every_version() {
        let must = |id: &str| {
            Some(TaskRef {
                id: id.into(),
                must_exist: true,
            })
        };
        assert_eq!(tref("tasks/get", json!({"id": "t1"})), must("t1"));
        assert_eq!(tref("GetTask", json!({"id": "t1"})), must("t1"));
        assert_eq!(tref("CancelTask", json!({"id": "t1"})), must("t1"));
        assert_eq!(tref("SubscribeToTask", json!({"id": "t1"})), must("t1"));
        assert_eq!(
            tref("message/send", json!({"message": {"taskId": "t2"}})),
            must("t2")
        );
        assert_eq!(
            tref("SendStreamingMessage", json!({"message": {"taskId": "t2"}})),
            must("t2")
        );
        assert_eq!(
            tref("tasks/pushNotificationConfig/set", json!({"taskId": "t3"})),
            must("t3")
        );
        assert_eq!(
            tref("tasks/pushNotificationConfig/get", json!({"id": "t3"})),
            must("t3")
        );
        assert_eq!(
            tref("tasks/pushNotification/set", json!({"id": "t3"})),
            must("t3")
        );
        assert_eq!(
            tref("CreateTaskPushNotificationConfig", json!({"taskId": "t4"})),
            must("t4")
        );
        assert_eq!(
            tref(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": "t4", "id": "p"})
            ),
            must("t4")
        );
        assert_eq!(
            tref("tasks/send", json!({"id": "new"})),
            Some(TaskRef {
                id: "new".into(),
                must_exist: false
            })
        );
        assert_eq!(tref("message/send", json!({"message": {}})), None);
        assert_eq!(tref("ListTasks", json!({})), None);
    }

    #[test]
    fn context_refs() {
        let m = |name| lookup(name).unwrap();
        assert_eq!(
            context_ref(
                m("message/send"),
                params_of("message/send", &json!({"message": {"contextId": "c"}}))
            ),
            Some("c".into())
        );
        assert_eq!(
            context_ref(
                m("tasks/send"),
                params_of("tasks/send", &json!({"sessionId": "s"}))
            ),
            Some("s".into())
        );
        assert_eq!(
            context_ref(m("tasks/get"), params_of("tasks/get", &json!({"id": "t"}))),
            None
        );
    }

    #[test]
    fn hints_from_header_then_metadata() {
        let header = HeaderName::from_static("a2a-skill");
        let keys = vec!["skillId".to_string()];
        let mut h = HeaderMap::new();
        let p = json!({"metadata": {"skillId": "from-params"}, "message": {"metadata": {"skillId": "from-message"}}});
        assert_eq!(
            skill_hint(&h, &header, &keys, params_of("message/send", &p)),
            Some("from-params".into())
        );
        let p2 = json!({"message": {"metadata": {"skillId": " from-message "}}});
        assert_eq!(
            skill_hint(&h, &header, &keys, params_of("message/send", &p2)),
            Some("from-message".into())
        );
        h.insert("a2a-skill", "from-header".parse().unwrap());
        assert_eq!(
            skill_hint(&h, &header, &keys, params_of("message/send", &p)),
            Some("from-header".into())
        );
        assert_eq!(
            skill_hint(
                &HeaderMap::new(),
                &header,
                &keys,
                params_of("message/send", &json!({}))
            ),
            None
        );
    }

    #[test]
    fn text_of_all_text_parts() {
        let p = json!({"message": {"parts": [{"kind": "text", "text": "a"}, {"data": {}}, {"text": "b"}]}});
        assert_eq!(
            message_text(params_of("message/send", &p)),
            Some("a\nb".into())
        );
        assert_eq!(
            message_text(params_of(
                "message/send",
                &json!({"message": {"parts": [{"data": 1}]}})
            )),
            None
        );
    }

    #[test]
    fn matched_text_is_bounded() {
        let long = "é".repeat(10 * MAX_MATCHED_CHARS);
        let p = json!({"message": {"parts": [{"text": long}, {"text": "more"}]}});
        assert_eq!(
            message_text(params_of("message/send", &p))
                .unwrap()
                .chars()
                .count(),
            MAX_MATCHED_CHARS
        );
    }
}
