//! What a request says about where it should go: the task or context it
//! continues, the skill it names, and the text a matcher can read. Pure.

use http::{HeaderMap, HeaderName};

use crate::a2a::{Family, Method, Version};
use crate::sketch::Sketch;

/// A task the request refers to. `must_exist` is false for a 0.1
/// `tasks/send`, where the client picks the id of a new task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRef {
    pub id: String,
    pub must_exist: bool,
}

/// The task id a call is about, if any.
pub fn task_ref(method: &Method, params: Option<&Sketch<'_>>) -> Option<TaskRef> {
    let p = params?;
    let text = |v: &Sketch<'_>, key: &str| {
        v.get(key)
            .and_then(Sketch::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let id = match (method.family, method.version) {
        (Family::Send | Family::Stream, Version::V0_1) => {
            return text(p, "id").map(|id| TaskRef {
                id,
                must_exist: false,
            });
        }
        (Family::Send | Family::Stream, _) => text(p.get("message")?, "taskId"),
        (Family::GetTask | Family::CancelTask | Family::Resubscribe, _) => text(p, "id"),
        (Family::PushSet, Version::V0_3) => text(p, "taskId"),
        (
            Family::PushSet | Family::PushGet | Family::PushList | Family::PushDelete,
            Version::V1_0,
        ) => text(p, "taskId"),
        (Family::PushSet | Family::PushGet | Family::PushList | Family::PushDelete, _) => {
            text(p, "id")
        }
        (Family::ListTasks | Family::ExtendedCard, _) => None,
    }?;
    Some(TaskRef {
        id,
        must_exist: true,
    })
}

/// The conversation a message continues (0.3/1.0 `contextId`, 0.1 `sessionId`).
pub fn context_ref(method: &Method, params: Option<&Sketch<'_>>) -> Option<String> {
    let p = params?;
    let found = match (method.family, method.version) {
        (Family::Send | Family::Stream, Version::V0_1) => p.get("sessionId"),
        (Family::Send | Family::Stream, _) => p.get("message")?.get("contextId"),
        (Family::ListTasks, _) => p.get("contextId"),
        _ => None,
    };
    found
        .and_then(Sketch::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The skill a client names: the configured header first, then the
/// configured keys of `params.metadata` and `params.message.metadata`.
pub fn skill_hint(
    headers: &HeaderMap,
    header: &HeaderName,
    keys: &[String],
    params: Option<&Sketch<'_>>,
) -> Option<String> {
    if let Some(v) = headers.get(header).and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        if !v.is_empty() {
            return Some(v.to_string());
        }
    }
    let p = params?;
    let metadata = [
        p.get("metadata"),
        p.get("message").and_then(|m| m.get("metadata")),
    ];
    metadata.into_iter().flatten().find_map(|m| {
        keys.iter()
            .find_map(|k| m.get(k).and_then(Sketch::as_str))
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().to_string())
    })
}

/// The matcher reads at most this much of a message: intent shows early,
/// and scoring cost must not grow with a client's payload.
pub const MAX_MATCHED_CHARS: usize = 2048;

/// The text of a message's text parts, for the matcher (bounded).
pub fn message_text(params: Option<&Sketch<'_>>) -> Option<String> {
    let parts = params?.get("message")?.get("parts")?.as_array()?;
    let mut text = String::new();
    let mut room = MAX_MATCHED_CHARS;
    for part in parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Sketch::as_str))
    {
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
    use crate::a2a::params::sketch_of as sk;
    use serde_json::{json, Value};

    fn tref(method: &str, params: Value) -> Option<TaskRef> {
        task_ref(lookup(method).unwrap(), Some(sk(&params)))
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
                Some(sk(&json!({"message": {"contextId": "c"}})))
            ),
            Some("c".into())
        );
        assert_eq!(
            context_ref(m("tasks/send"), Some(sk(&json!({"sessionId": "s"})))),
            Some("s".into())
        );
        assert_eq!(
            context_ref(m("tasks/get"), Some(sk(&json!({"id": "t"})))),
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
            skill_hint(&h, &header, &keys, Some(sk(&p))),
            Some("from-params".into())
        );
        let p2 = json!({"message": {"metadata": {"skillId": " from-message "}}});
        assert_eq!(
            skill_hint(&h, &header, &keys, Some(sk(&p2))),
            Some("from-message".into())
        );
        h.insert("a2a-skill", "from-header".parse().unwrap());
        assert_eq!(
            skill_hint(&h, &header, &keys, Some(sk(&p))),
            Some("from-header".into())
        );
        assert_eq!(
            skill_hint(&HeaderMap::new(), &header, &keys, Some(sk(&json!({})))),
            None
        );
    }

    #[test]
    fn text_of_all_text_parts() {
        let p = json!({"message": {"parts": [{"kind": "text", "text": "a"}, {"data": {}}, {"text": "b"}]}});
        assert_eq!(message_text(Some(sk(&p))), Some("a\nb".into()));
        assert_eq!(
            message_text(Some(sk(&json!({"message": {"parts": [{"data": 1}]}})))),
            None
        );
    }

    #[test]
    fn matched_text_is_bounded() {
        let long = "é".repeat(10 * MAX_MATCHED_CHARS);
        let p = json!({"message": {"parts": [{"text": long}, {"text": "more"}]}});
        assert_eq!(
            message_text(Some(sk(&p))).unwrap().chars().count(),
            MAX_MATCHED_CHARS
        );
    }
}
