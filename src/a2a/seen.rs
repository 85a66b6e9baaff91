//! Which task and context ids an upstream's answer reveals, for every
//! protocol version. Pure: bytes in, ids out.

use std::borrow::Cow;

use crate::a2a::model::answer::{self, Item, RpcResponse};
use crate::a2a::model::loose::{Obj, Text};

/// Task states in the 0.x spelling: the labels of `task_states_total`.
pub const TASK_STATES: [&str; 9] = [
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "failed",
    "canceled",
    "rejected",
    "unknown",
];

/// A few of something, inline: an answer names one task and one context, so
/// reading it allocates nothing (it is read for every call).
pub type Few<T> = smallvec::SmallVec<[T; 2]>;

/// Ids seen in one answer, borrowed from it where they had no escapes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Seen<'a> {
    pub tasks: Few<Cow<'a, str>>,
    pub contexts: Few<Cow<'a, str>>,
    /// (task id, state) with the state as one of [`TASK_STATES`] (0.x
    /// spelling: "working", "input-required"; anything else "unknown").
    pub states: Few<(Cow<'a, str>, &'static str)>,
    /// The kind of each event or result: status, artifact, task, message,
    /// error, other.
    pub kinds: Few<&'static str>,
}

impl Seen<'_> {
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.contexts.is_empty()
    }

    /// The same, owning its ids (for an answer read from a copy).
    fn into_owned(self) -> Seen<'static> {
        let own = |ids: Few<Cow<'_, str>>| {
            ids.into_iter()
                .map(|id| Cow::Owned(id.into_owned()))
                .collect()
        };
        Seen {
            tasks: own(self.tasks),
            contexts: own(self.contexts),
            states: self
                .states
                .into_iter()
                .map(|(task, state)| (Cow::Owned(task.into_owned()), state))
                .collect(),
            kinds: self.kinds,
        }
    }

    fn extend(&mut self, other: Seen<'static>) {
        for id in other.tasks {
            push(&mut self.tasks, id);
        }
        for id in other.contexts {
            push(&mut self.contexts, id);
        }
        // Owned already; rebuilt only to meet `self`'s lifetime.
        let states = other.states.into_iter();
        self.states
            .extend(states.map(|(task, state)| (Cow::Owned(task.into_owned()), state)));
        self.kinds.extend(other.kinds);
    }
}

/// How an answer carries its result: in a JSON-RPC response, or alone
/// (the HTTP+JSON binding's bodies and events, read as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    JsonRpc,
    Alone,
}

/// Ids in a unary JSON-RPC response body (nothing if it is not one).
pub fn from_response(body: &[u8]) -> Seen<'_> {
    from_answer(body, Carried::JsonRpc)
}

/// Ids in a unary answer's body, its result carried as `carried` says
/// (nothing if it is not JSON).
pub fn from_answer(body: &[u8], carried: Carried) -> Seen<'_> {
    let mut seen = Seen::default();
    if let Some(text) = crate::a2a::utf8::text(body) {
        absorb_text(text, carried, &mut seen);
    }
    seen
}

fn absorb_text<'a>(text: &'a str, carried: Carried, seen: &mut Seen<'a>) {
    match carried {
        Carried::JsonRpc => {
            if let Some(answer) = answer::read(text) {
                absorb(&answer, seen);
            }
        }
        Carried::Alone => {
            if let Some(result) = answer::read_result(text) {
                absorb_alone(&result, seen);
            }
        }
    }
}

/// A result that came alone: an HTTP+JSON error is a `google.rpc.Status`.
fn absorb_alone<'a>(result: &Obj<Item<'a>>, seen: &mut Seen<'a>) {
    let result = result.get();
    if result.is_some_and(|r| r.error.present()) {
        seen.kinds.push("error");
        return;
    }
    seen.kinds.push(result.map_or("other", kind_of));
    if let Some(result) = result {
        from_result(result, seen);
    }
}

fn absorb<'a>(answer: &RpcResponse<'a>, seen: &mut Seen<'a>) {
    if answer.result.present() {
        let result = answer.result.get();
        seen.kinds.push(result.map_or("other", kind_of));
        if let Some(result) = result {
            from_result(result, seen);
        }
    } else if answer.error.present() {
        seen.kinds.push("error");
    } else {
        seen.kinds.push("other");
    }
}

/// What a result is, in every version's spelling.
fn kind_of(result: &Item<'_>) -> &'static str {
    match result.kind.as_deref() {
        Some("status-update") => "status",
        Some("artifact-update") => "artifact",
        Some("task") => "task",
        Some("message") => "message",
        _ if result.status_update.get().is_some() => "status",
        _ if result.artifact_update.get().is_some() => "artifact",
        _ if result.task.get().is_some() => "task",
        _ if result.message.get().is_some() => "message",
        // 0.1 events: {id, status} or {id, artifact}.
        _ if result.artifact.present() => "artifact",
        _ if result.status.present() => "status",
        _ => "other",
    }
}

/// A state's label: its 0.x spelling (`TASK_STATE_INPUT_REQUIRED` →
/// `input-required`) when it is a known state, else `unknown`.
pub fn state_label(state: &str) -> &'static str {
    let s = state.strip_prefix("TASK_STATE_").unwrap_or(state);
    let same = |known: &str| {
        known.len() == s.len()
            && known.bytes().zip(s.bytes()).all(|(k, c)| {
                let c = if c == b'_' {
                    b'-'
                } else {
                    c.to_ascii_lowercase()
                };
                k == c
            })
    };
    TASK_STATES
        .iter()
        .copied()
        .find(|known| same(known))
        .unwrap_or("unknown")
}

/// Ids in a chunk of whole SSE events (each `data:` is a JSON-RPC response).
/// JSON is UTF-8: an event with a line that is not is skipped.
pub fn from_events(chunk: &[u8]) -> Seen<'_> {
    from_events_carried(chunk, Carried::JsonRpc)
}

/// Ids in a chunk of whole SSE events, each `data:` carrying its result
/// as `carried` says.
pub fn from_events_carried(chunk: &[u8], carried: Carried) -> Seen<'_> {
    let mut seen = Seen::default();
    let mut data = EventData::default();
    for line in super::sse::lines(chunk) {
        if line.is_empty() {
            data.absorb(&mut seen, carried);
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            match crate::a2a::utf8::text(rest) {
                Some(text) => data.push(text),
                None => data.broken = true,
            }
        }
    }
    data.absorb(&mut seen, carried);
    seen
}

/// One event's data: its one `data:` line borrowed (the usual case), or
/// several joined with newlines.
#[derive(Default)]
struct EventData<'a> {
    first: Option<&'a str>,
    joined: Option<String>,
    broken: bool,
}

impl<'a> EventData<'a> {
    fn push(&mut self, line: &'a str) {
        match (&mut self.joined, self.first) {
            (Some(joined), _) => {
                joined.push('\n');
                joined.push_str(line);
            }
            (None, Some(first)) => self.joined = Some(format!("{first}\n{line}")),
            (None, None) => self.first = Some(line),
        }
    }

    /// Reads the event (if it had data) and starts the next.
    fn absorb(&mut self, seen: &mut Seen<'a>, carried: Carried) {
        let (first, joined) = (self.first.take(), self.joined.take());
        if std::mem::take(&mut self.broken) {
            return;
        }
        if let Some(joined) = joined {
            let mut own = Seen::default();
            absorb_text(&joined, carried, &mut own);
            seen.extend(own.into_owned());
        } else if let Some(first) = first {
            absorb_text(first, carried, seen);
        }
    }
}

/// 1.0 wraps results (`{"task": …}`, `{"statusUpdate": …}`); 0.x results
/// are the object itself, told apart by `kind` (0.3) or shape (0.1).
fn from_result<'a>(result: &Item<'a>, seen: &mut Seen<'a>) {
    let wrappers = [
        (&result.task, true),
        (&result.message, false),
        (&result.status_update, false),
        (&result.artifact_update, false),
    ];
    for (wrapper, is_task) in wrappers {
        if let Some(inner) = wrapper.get() {
            from_object(inner, is_task, seen);
        }
    }
    for task in result.tasks.0.iter().flatten() {
        if let Some(task) = task.get() {
            from_object(task, true, seen);
        }
    }
    let is_task = result.kind.as_deref() == Some("task")
        || (result.id.present() && (result.status.present() || result.artifact.present()));
    from_object(result, is_task, seen);
}

fn from_object<'a>(obj: &Item<'a>, is_task: bool, seen: &mut Seen<'a>) {
    let text = |id: &Text<'a>| id.get().filter(|s| !s.is_empty()).cloned();
    let task = if is_task {
        text(&obj.id)
    } else {
        text(&obj.task_id)
    };
    if let (Some(task), Some(state)) = (&task, obj.state()) {
        seen.states.push((task.clone(), state_label(state)));
    }
    if is_task {
        if let Some(id) = task {
            push(&mut seen.tasks, id);
        }
    }
    if let Some(id) = text(&obj.task_id) {
        push(&mut seen.tasks, id);
    }
    for id in [&obj.context_id, &obj.session_id] {
        if let Some(id) = text(id) {
            push(&mut seen.contexts, id);
        }
    }
}

fn push<'a>(list: &mut Few<Cow<'a, str>>, id: Cow<'a, str>) {
    if !list.contains(&id) {
        list.push(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_kinds_of_every_version() {
        let chunk = concat!(
            "data: {\"result\":{\"kind\":\"status-update\",\"taskId\":\"t1\",\"status\":{\"state\":\"working\"}}}\n\n",
            "data: {\"result\":{\"statusUpdate\":{\"taskId\":\"t2\",\"status\":{\"state\":\"TASK_STATE_INPUT_REQUIRED\"}}}}\n\n",
            "data: {\"result\":{\"artifactUpdate\":{\"taskId\":\"t2\"}}}\n\n",
            "data: {\"error\":{\"code\":-32053}}\n\n",
            "data: {\"result\":{\"id\":\"t3\",\"status\":{\"state\":\"completed\"},\"final\":true}}\n\n",
        );
        let seen = from_events(chunk.as_bytes());
        assert_eq!(
            seen.kinds[..],
            ["status", "status", "artifact", "error", "status"]
        );
        let states: Vec<(&str, &str)> = seen.states.iter().map(|(t, s)| (t.as_ref(), *s)).collect();
        assert_eq!(
            states,
            [
                ("t1", "working"),
                ("t2", "input-required"),
                ("t3", "completed")
            ]
        );
        let unary = from_response(
            br#"{"result":{"task":{"id":"t4","status":{"state":"TASK_STATE_COMPLETED"}}}}"#,
        );
        assert_eq!(unary.kinds[..], ["task"]);
        assert_eq!(unary.states[..], [(Cow::from("t4"), "completed")]);
    }

    #[test]
    fn an_event_over_several_data_lines_is_read_whole() {
        let chunk = concat!(
            "event: message\n",
            "data: {\"result\":\n",
            "data: {\"kind\":\"task\",\"id\":\"t9\",\"status\":{\"state\":\"working\"}}}\n",
            "\n",
            "data: {\"result\":{\"kind\":\"status-update\",\"taskId\":\"t9\",\"status\":{\"state\":\"completed\"}}}\n\n",
        );
        let seen = from_events(chunk.as_bytes());
        assert_eq!(seen.kinds[..], ["task", "status"]);
        assert_eq!(
            seen.states[..],
            [(Cow::from("t9"), "working"), (Cow::from("t9"), "completed")]
        );
    }

    /// CRLF is one line end: the event is not cut after its first line, and
    /// the task id on its second line is learned. With each CR and LF read
    /// as a line end, the empty "line" between them ended the event early.
    #[test]
    fn a_multi_line_event_with_crlf_endings_is_read_whole() {
        for ending in ["\r\n", "\r", "\n"] {
            let chunk = [
                "event: message",
                "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
                "data: {\"kind\":\"task\",\"id\":\"t7\",\"contextId\":\"c7\",\"status\":{\"state\":\"working\"}}}",
                "",
                "",
            ]
            .join(ending);
            let seen = from_events(chunk.as_bytes());
            assert_eq!(seen.tasks[..], [Cow::from("t7")], "{ending:?}");
            assert_eq!(seen.contexts[..], [Cow::from("c7")], "{ending:?}");
        }
    }

    #[test]
    fn results_that_come_alone_are_read_as_they_are() {
        let body =
            br#"{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}"#;
        let seen = from_answer(body, Carried::Alone);
        assert_eq!(seen.tasks.as_slice(), ["t1"]);
        assert_eq!(seen.contexts.as_slice(), ["c1"]);
        assert_eq!(seen.states.as_slice(), [("t1".into(), "working")]);
        assert_eq!(seen.kinds.as_slice(), ["task"]);
        // The same body is no JSON-RPC response: nothing in it is a result.
        assert!(from_response(body).tasks.is_empty());
        let error = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"no task"}}"#;
        assert_eq!(
            from_answer(error, Carried::Alone).kinds.as_slice(),
            ["error"]
        );
        assert!(from_answer(b"<html>", Carried::Alone).is_empty());
        let events = concat!(
            "data: {\"statusUpdate\":{\"taskId\":\"t2\",\"contextId\":\"c2\",",
            "\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}\n\n",
            "data: {\"error\":{\"code\":500,\"message\":\"broke\"}}\n\n",
        );
        let seen = from_events_carried(events.as_bytes(), Carried::Alone);
        assert_eq!(seen.tasks.as_slice(), ["t2"]);
        assert_eq!(seen.contexts.as_slice(), ["c2"]);
        assert_eq!(seen.kinds.as_slice(), ["status", "error"]);
    }

    #[test]
    fn states_are_labelled_in_the_0x_spelling_or_unknown() {
        for (raw, label) in [
            ("TASK_STATE_INPUT_REQUIRED", "input-required"),
            ("TASK_STATE_COMPLETED", "completed"),
            ("auth-required", "auth-required"),
            ("Working", "working"),
            ("input_required", "input-required"),
            ("TASK_STATE_", "unknown"),
            ("", "unknown"),
            ("completedd", "unknown"),
            ("paused", "unknown"),
        ] {
            assert_eq!(state_label(raw), label, "{raw}");
        }
    }

    #[test]
    fn parts_and_metadata_do_not_hide_the_ids() {
        let answer = br#"{"result":{"kind":"task","id":"t5","contextId":"c5",
            "status":{"state":"working","message":{"parts":[{"kind":"text","text":"{\"id\":\"x\"}"}]}},
            "artifacts":[{"parts":[{"kind":"data","data":{"taskId":"nope"}}]}],
            "metadata":{"contextId":"nope"}}}"#;
        let seen = from_response(answer);
        assert_eq!(seen.tasks[..], ["t5"]);
        assert_eq!(seen.contexts[..], ["c5"]);
        assert_eq!(seen.states[..], [(Cow::from("t5"), "working")]);
    }

    fn ids(seen: Seen<'_>) -> (Vec<String>, Vec<String>) {
        let own = |ids: Few<Cow<'_, str>>| ids.into_iter().map(Cow::into_owned).collect();
        (own(seen.tasks), own(seen.contexts))
    }

    fn v(tasks: &[&str], contexts: &[&str]) -> (Vec<String>, Vec<String>) {
        (
            tasks.iter().map(|s| s.to_string()).collect(),
            contexts.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn unary_results_of_every_version() {
        let cases = [
            (
                r#"{"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed"}}}"#,
                v(&["t1"], &["c1"]),
            ),
            (
                r#"{"result":{"kind":"message","messageId":"m","taskId":"t2","contextId":"c2"}}"#,
                v(&["t2"], &["c2"]),
            ),
            (
                r#"{"result":{"task":{"id":"t3","contextId":"c3","status":{}}}}"#,
                v(&["t3"], &["c3"]),
            ),
            (
                r#"{"result":{"message":{"messageId":"m","contextId":"c4"}}}"#,
                v(&[], &["c4"]),
            ),
            (
                r#"{"result":{"id":"t5","sessionId":"s5","status":{"state":"completed"}}}"#,
                v(&["t5"], &["s5"]),
            ),
            (
                r#"{"result":{"tasks":[{"id":"t6","contextId":"c6"},{"id":"t7","contextId":"c6"}]}}"#,
                v(&["t6", "t7"], &["c6"]),
            ),
            (
                r#"{"result":{"kind":"message","messageId":"m"}}"#,
                v(&[], &[]),
            ),
            (r#"{"error":{"code":-32001,"message":"x"}}"#, v(&[], &[])),
            ("not json", v(&[], &[])),
        ];
        for (body, want) in cases {
            assert_eq!(ids(from_response(body.as_bytes())), want, "{body}");
        }
    }

    #[test]
    fn events_of_every_version() {
        let chunk = concat!(
            "data: {\"result\":{\"kind\":\"status-update\",\"taskId\":\"t1\",\"contextId\":\"c1\",\"final\":false}}\n\n",
            "data: {\"result\":{\"statusUpdate\":{\"taskId\":\"t2\",\"contextId\":\"c2\"}}}\r\n\r\n",
            ": comment\n\n",
            "data: {\"result\":{\"id\":\"t3\",\"artifact\":{\"parts\":[]}}}\n\n",
            "data: {\"result\":\n",
            "data: {\"artifactUpdate\":{\"taskId\":\"t4\",\"contextId\":\"c2\"}}}\n\n",
        );
        assert_eq!(
            ids(from_events(chunk.as_bytes())),
            v(&["t1", "t2", "t3", "t4"], &["c1", "c2"])
        );
    }

    #[test]
    fn an_event_that_is_not_utf8_is_skipped_and_the_others_are_read() {
        let mut chunk = b"data: {\"result\":{\"kind\":\"task\",\"id\":\"t1\"}}\n\n".to_vec();
        chunk.extend_from_slice(b"data: {\"result\":{\"kind\":\"task\",\"id\":\"t\xff\"}}\n\n");
        chunk.extend_from_slice(b"data: {\"result\":\ndata: {\"taskId\":\"\xfe\"}}\n\n");
        chunk.extend_from_slice(b"data: {\"result\":{\"kind\":\"task\",\"id\":\"t3\"}}\n\n");
        let seen = from_events(&chunk);
        assert_eq!(seen.tasks[..], ["t1", "t3"]);
        assert_eq!(seen.kinds[..], ["task", "task"]);
    }

    #[test]
    fn escaped_ids_are_owned_and_plain_ones_borrowed() {
        let seen = from_response(br#"{"result":{"kind":"task","id":"t\u0031","contextId":"c1"}}"#);
        assert_eq!(seen.tasks[..], ["t1"]);
        assert!(matches!(seen.tasks[0], Cow::Owned(_)));
        assert!(matches!(seen.contexts[0], Cow::Borrowed("c1")));
    }

    #[test]
    fn a_message_id_is_not_a_task_id() {
        let body = r#"{"result":{"kind":"message","id":"not-a-task","messageId":"m"}}"#;
        assert!(from_response(body.as_bytes()).is_empty());
    }

    /// The rules of this module over `serde_json::Value`: slow, obviously
    /// right, and independent of the typed reading in `answer`.
    fn reference(body: &str) -> Seen<'static> {
        use serde_json::Value;
        fn text(obj: &Value, key: &str) -> Option<Cow<'static, str>> {
            obj.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(|s| Cow::Owned(s.to_owned()))
        }
        fn object(obj: &Value, is_task: bool, seen: &mut Seen<'static>) {
            let task = text(obj, if is_task { "id" } else { "taskId" });
            let state = obj
                .get("status")
                .and_then(|s| s.get("state"))
                .and_then(Value::as_str);
            if let (Some(task), Some(state)) = (&task, state) {
                seen.states.push((task.clone(), state_label(state)));
            }
            if let (true, Some(id)) = (is_task, task) {
                push(&mut seen.tasks, id);
            }
            if let Some(id) = text(obj, "taskId") {
                push(&mut seen.tasks, id);
            }
            for key in ["contextId", "sessionId"] {
                if let Some(id) = text(obj, key) {
                    push(&mut seen.contexts, id);
                }
            }
        }
        let mut seen = Seen::default();
        let Ok(v) = serde_json::from_str::<Value>(body) else {
            return seen;
        };
        let Some(result) = v.get("result") else {
            seen.kinds.push(if v.get("error").is_some() {
                "error"
            } else {
                "other"
            });
            return seen;
        };
        let wrapped = |k: &str| result.get(k).is_some_and(Value::is_object);
        let kind = result.get("kind").and_then(Value::as_str);
        seen.kinds.push(match kind {
            Some("status-update") => "status",
            Some("artifact-update") => "artifact",
            Some("task") => "task",
            Some("message") => "message",
            _ if wrapped("statusUpdate") => "status",
            _ if wrapped("artifactUpdate") => "artifact",
            _ if wrapped("task") => "task",
            _ if wrapped("message") => "message",
            _ if result.get("artifact").is_some() => "artifact",
            _ if result.get("status").is_some() => "status",
            _ => "other",
        });
        if !result.is_object() {
            return seen;
        }
        for w in ["task", "message", "statusUpdate", "artifactUpdate"] {
            if let Some(inner) = result.get(w).filter(|v| v.is_object()) {
                object(inner, w == "task", &mut seen);
            }
        }
        if let Some(Value::Array(tasks)) = result.get("tasks") {
            for t in tasks.iter().filter(|t| t.is_object()) {
                object(t, true, &mut seen);
            }
        }
        let is_task = kind == Some("task")
            || (result.get("id").is_some()
                && (result.get("status").is_some() || result.get("artifact").is_some()));
        object(result, is_task, &mut seen);
        seen
    }

    /// JSON text from a tree whose objects may repeat a member name.
    #[derive(Debug, Clone)]
    enum J {
        Str(&'static str),
        /// A long text with escapes.
        Long,
        Num(i64),
        Null,
        Arr(Vec<J>),
        Obj(Vec<(&'static str, J)>),
    }

    impl J {
        fn render(&self, out: &mut String) {
            match self {
                J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
                J::Long => {
                    out.push_str(&serde_json::to_string(&"long \"text\"\n".repeat(50)).unwrap())
                }
                J::Num(n) => out.push_str(&n.to_string()),
                J::Null => out.push_str("null"),
                J::Arr(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.render(out);
                    }
                    out.push(']');
                }
                J::Obj(members) => {
                    out.push('{');
                    // A repeated name fails the typed reading (the answer
                    // teaches nothing), where a Value keeps the last: both
                    // are fine for learning, so the comparison leaves them.
                    let mut written: Vec<&str> = Vec::new();
                    for (k, v) in members {
                        if written.contains(k) {
                            continue;
                        }
                        if !written.is_empty() {
                            out.push(',');
                        }
                        written.push(k);
                        out.push_str(&format!("\"{k}\":"));
                        v.render(out);
                    }
                    out.push('}');
                }
            }
        }
    }

    fn answers() -> impl proptest::strategy::Strategy<Value = J> {
        use proptest::prelude::*;
        const NAMES: [&str; 20] = [
            "result",
            "error",
            "kind",
            "task",
            "tasks",
            "message",
            "statusUpdate",
            "artifactUpdate",
            "artifact",
            "status",
            "state",
            "id",
            "taskId",
            "contextId",
            "sessionId",
            "parts",
            "text",
            "artifacts",
            "history",
            "x",
        ];
        const TEXTS: [&str; 14] = [
            "",
            "t1",
            "t2",
            "c1",
            "task",
            "message",
            "status-update",
            "artifact-update",
            "working",
            "TASK_STATE_COMPLETED",
            "paused",
            "t\u{e9}",
            "t\"1",
            "line\nbreak",
        ];
        let leaf = prop_oneof![
            8 => proptest::sample::select(TEXTS.to_vec()).prop_map(J::Str),
            4 => (-2i64..3).prop_map(J::Num),
            2 => Just(J::Null),
            1 => Just(J::Long),
        ];
        let any = leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
                proptest::collection::vec((proptest::sample::select(NAMES.to_vec()), inner), 0..6)
                    .prop_map(J::Obj),
            ]
        });
        // Mostly `{"result": …}` or `{"error": …}`, the answers that matter.
        let top = proptest::collection::vec(
            (
                proptest::sample::select(vec!["result", "result", "error", "id"]),
                any.clone(),
            ),
            1..3,
        )
        .prop_map(J::Obj);
        prop_oneof![1 => any, 4 => top]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn reads_answers_as_the_value_based_reference_does(answer in answers()) {
            let mut text = String::new();
            answer.render(&mut text);
            // Compared as text: a borrowed and an owned id print alike.
            let want = format!("{:?}", reference(&text));
            let got = format!("{:?}", from_response(text.as_bytes()));
            proptest::prop_assert_eq!(&got, &want, "{}", text);
            // And as one SSE event.
            let event = format!("data: {text}\n\n");
            let got = format!("{:?}", from_events(event.as_bytes()));
            proptest::prop_assert_eq!(&got, &want, "{}", text);
        }
    }
}
