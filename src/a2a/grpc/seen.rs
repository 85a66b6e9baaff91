//! Which task and context ids a gRPC agent's answer message reveals, read
//! straight from its protobuf: the gRPC twin of `crate::a2a::seen`, for
//! answers passed through to a gRPC client as they came.
//!
//! Only the ids and the state are decoded, by outlines of the official
//! messages (prost skips every other field unread): an answer's artifacts
//! and history cost nothing. Saying the whole message as ProtoJSON to read
//! it as a JSON-RPC answer cost ~5 us a call (bench/DIARY.md, issue #53).
//! The 1.0 (`lf.a2a.v1`) and 0.3 (`a2a.v1`) services number these fields,
//! and the task states, alike. A test holds this reader to the JSON one.

use std::borrow::Cow;

use prost::Message as _;

use super::v1;
use crate::a2a::seen::{state_label, Few, Seen};
use crate::a2a::{Family, Version};

/// `Task`: id, context, status.
#[derive(Clone, PartialEq, prost::Message)]
struct TaskOutline {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    context_id: String,
    #[prost(message, optional, tag = "3")]
    status: Option<StatusOutline>,
}

/// `TaskStatus`: its state.
#[derive(Clone, PartialEq, prost::Message)]
struct StatusOutline {
    #[prost(int32, tag = "1")]
    state: i32,
}

/// `Message`: context and task.
#[derive(Clone, PartialEq, prost::Message)]
struct MessageOutline {
    #[prost(string, tag = "2")]
    context_id: String,
    #[prost(string, tag = "3")]
    task_id: String,
}

/// `TaskArtifactUpdateEvent`: task and context (field 3, the artifact, is
/// skipped unread).
#[derive(Clone, PartialEq, prost::Message)]
struct ArtifactEventOutline {
    #[prost(string, tag = "1")]
    task_id: String,
    #[prost(string, tag = "2")]
    context_id: String,
}

/// `TaskStatusUpdateEvent`: task, context, status.
#[derive(Clone, PartialEq, prost::Message)]
struct StatusEventOutline {
    #[prost(string, tag = "1")]
    task_id: String,
    #[prost(string, tag = "2")]
    context_id: String,
    #[prost(message, optional, tag = "3")]
    status: Option<StatusOutline>,
}

/// `SendMessageResponse` and `StreamResponse`: their payload (a oneof,
/// so at most one is there).
#[derive(Clone, PartialEq, prost::Message)]
struct PayloadOutline {
    #[prost(message, optional, tag = "1")]
    task: Option<TaskOutline>,
    #[prost(message, optional, tag = "2")]
    message: Option<MessageOutline>,
    #[prost(message, optional, tag = "3")]
    status_update: Option<StatusEventOutline>,
    #[prost(message, optional, tag = "4")]
    artifact_update: Option<ArtifactEventOutline>,
}

/// 1.0 `ListTasksResponse`: its tasks.
#[derive(Clone, PartialEq, prost::Message)]
struct TasksOutline {
    #[prost(message, repeated, tag = "1")]
    tasks: Vec<TaskOutline>,
}

/// 1.0 `TaskPushNotificationConfig`: its task.
#[derive(Clone, PartialEq, prost::Message)]
struct PushConfigOutline {
    #[prost(string, tag = "3")]
    task_id: String,
}

/// 0.3 `TaskPushNotificationConfig`: its name, `tasks/{id}/pushNotificationConfigs/{id}`.
#[derive(Clone, PartialEq, prost::Message)]
struct NamedPushConfigOutline {
    #[prost(string, tag = "1")]
    name: String,
}

/// What the answer `message` to a `family` call in the service of
/// `version` reveals. A message that does not decode reveals nothing. Its
/// kind (for a stream's events) is the payload's: task, message, status,
/// artifact, or other.
pub fn of_answer((family, version): (Family, Version), message: &[u8]) -> Seen<'static> {
    let mut seen = Seen::default();
    let kind = match family {
        Family::Send | Family::Stream | Family::Resubscribe => {
            PayloadOutline::decode(message).map_or("other", |payload| payload.absorb(&mut seen))
        }
        Family::GetTask | Family::CancelTask => match TaskOutline::decode(message) {
            Ok(task) => {
                task.absorb(&mut seen);
                "task"
            }
            Err(_) => "other",
        },
        Family::ListTasks if version == Version::V1_0 => {
            for task in TasksOutline::decode(message)
                .map(|l| l.tasks)
                .unwrap_or_default()
            {
                task.absorb(&mut seen);
            }
            "other"
        }
        Family::PushSet | Family::PushGet => {
            let task = match version {
                Version::V1_0 => PushConfigOutline::decode(message).map(|c| c.task_id),
                _ => NamedPushConfigOutline::decode(message).map(|c| task_in_name(&c.name)),
            };
            push(&mut seen.tasks, task.unwrap_or_default());
            "other"
        }
        _ => "other",
    };
    seen.kinds.push(kind);
    seen
}

impl PayloadOutline {
    /// What the payload reveals; its kind.
    fn absorb(self, seen: &mut Seen<'static>) -> &'static str {
        if let Some(task) = self.task {
            task.absorb(seen);
            "task"
        } else if let Some(message) = self.message {
            push(&mut seen.tasks, message.task_id);
            push(&mut seen.contexts, message.context_id);
            "message"
        } else if let Some(event) = self.status_update {
            if let Some(state) = event.status.and_then(|s| label(s.state)) {
                if !event.task_id.is_empty() {
                    seen.states.push((Cow::Owned(event.task_id.clone()), state));
                }
            }
            push(&mut seen.tasks, event.task_id);
            push(&mut seen.contexts, event.context_id);
            "status"
        } else if let Some(event) = self.artifact_update {
            push(&mut seen.tasks, event.task_id);
            push(&mut seen.contexts, event.context_id);
            "artifact"
        } else {
            "other"
        }
    }
}

impl TaskOutline {
    fn absorb(self, seen: &mut Seen<'static>) {
        if let Some(state) = self.status.and_then(|s| label(s.state)) {
            if !self.id.is_empty() {
                seen.states.push((Cow::Owned(self.id.clone()), state));
            }
        }
        push(&mut seen.tasks, self.id);
        push(&mut seen.contexts, self.context_id);
    }
}

/// A task state's label (`crate::a2a::seen::TASK_STATES`); none for
/// UNSPECIFIED, which ProtoJSON leaves out.
fn label(state: i32) -> Option<&'static str> {
    match v1::TaskState::try_from(state) {
        Ok(v1::TaskState::Unspecified) => None,
        Ok(known) => Some(state_label(known.as_str_name())),
        Err(_) => Some("unknown"),
    }
}

/// The task id in a 0.3 push config's name.
fn task_in_name(name: &str) -> String {
    let id = name
        .strip_prefix("tasks/")
        .and_then(|rest| rest.split('/').next());
    id.unwrap_or_default().to_string()
}

fn push(list: &mut Few<Cow<'static, str>>, id: String) {
    if !id.is_empty() && !list.iter().any(|known| *known == id) {
        list.push(Cow::Owned(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::grpc::v03;
    use crate::a2a::Family::*;

    /// The JSON way this reader stands in for: the 1.0 message as
    /// ProtoJSON, read as a JSON-RPC answer (`crate::a2a::seen`).
    fn by_json(at: (Family, Version), message: &[u8]) -> Seen<'static> {
        let result = crate::a2a::grpc::call::answer_json(at.1, at.0, message).unwrap();
        let result: serde_json::Value = serde_json::from_slice(&result).unwrap();
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
        let seen = crate::a2a::seen::from_response(answer.as_bytes());
        let own =
            |ids: &Few<Cow<'_, str>>| ids.iter().map(|id| Cow::Owned(id.to_string())).collect();
        Seen {
            tasks: own(&seen.tasks),
            contexts: own(&seen.contexts),
            states: (seen.states.iter())
                .map(|(task, state)| (Cow::Owned(task.to_string()), *state))
                .collect(),
            kinds: Few::new(),
        }
    }

    fn seen(tasks: &[&str], contexts: &[&str], states: &[(&str, &'static str)]) -> Seen<'static> {
        let own = |ids: &[&str]| ids.iter().map(|id| Cow::Owned(id.to_string())).collect();
        Seen {
            tasks: own(tasks),
            contexts: own(contexts),
            states: (states.iter())
                .map(|(task, state)| (Cow::Owned(task.to_string()), *state))
                .collect(),
            kinds: Few::new(),
        }
    }

    fn ids_only(mut seen: Seen<'static>) -> Seen<'static> {
        seen.kinds.clear();
        seen
    }

    fn task_1_0(id: &str, state: v1::TaskState) -> v1::Task {
        let text = v1::Part {
            content: Some(v1::part::Content::Text("a long answer".repeat(40))),
            ..Default::default()
        };
        v1::Task {
            id: id.into(),
            context_id: format!("ctx-{id}"),
            status: Some(v1::TaskStatus {
                state: state as i32,
                ..Default::default()
            }),
            artifacts: vec![v1::Artifact {
                artifact_id: "a1".into(),
                parts: vec![text],
                ..Default::default()
            }],
            history: vec![v1::Message {
                message_id: "m0".into(),
                task_id: id.into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_1_0_answer_reveals_what_its_json_would() {
        use v1::send_message_response::Payload as Sent;
        use v1::stream_response::Payload as Event;
        let states = [
            v1::TaskState::Working,
            v1::TaskState::Completed,
            v1::TaskState::InputRequired,
            v1::TaskState::Canceled,
            v1::TaskState::AuthRequired,
        ];
        let mut answers: Vec<((Family, Version), Vec<u8>, &str)> = Vec::new();
        for state in states {
            let task = task_1_0("t1", state);
            let sent = v1::SendMessageResponse {
                payload: Some(Sent::Task(task.clone())),
            };
            answers.push(((Send, Version::V1_0), sent.encode_to_vec(), "task"));
            answers.push(((GetTask, Version::V1_0), task.encode_to_vec(), "task"));
            let event = v1::StreamResponse {
                payload: Some(Event::StatusUpdate(v1::TaskStatusUpdateEvent {
                    task_id: "t2".into(),
                    context_id: "c2".into(),
                    status: task.status.clone(),
                    ..Default::default()
                })),
            };
            answers.push(((Stream, Version::V1_0), event.encode_to_vec(), "status"));
        }
        let message = v1::Message {
            message_id: "m1".into(),
            context_id: "c3".into(),
            task_id: "t3".into(),
            ..Default::default()
        };
        let sent = v1::SendMessageResponse {
            payload: Some(Sent::Message(message.clone())),
        };
        answers.push(((Send, Version::V1_0), sent.encode_to_vec(), "message"));
        let event = v1::StreamResponse {
            payload: Some(Event::ArtifactUpdate(v1::TaskArtifactUpdateEvent {
                task_id: "t4".into(),
                context_id: "c4".into(),
                artifact: task_1_0("x", v1::TaskState::Working).artifacts.pop(),
                ..Default::default()
            })),
        };
        answers.push((
            (Resubscribe, Version::V1_0),
            event.encode_to_vec(),
            "artifact",
        ));
        let listed = v1::ListTasksResponse {
            tasks: vec![
                task_1_0("t5", v1::TaskState::Working),
                task_1_0("t6", v1::TaskState::Failed),
            ],
            ..Default::default()
        };
        answers.push(((ListTasks, Version::V1_0), listed.encode_to_vec(), "other"));
        let config = v1::TaskPushNotificationConfig {
            id: "p1".into(),
            task_id: "t7".into(),
            url: "https://hooks.example/a2a".into(),
            ..Default::default()
        };
        answers.push(((PushSet, Version::V1_0), config.encode_to_vec(), "other"));
        for (at, message, kind) in answers {
            let seen = of_answer(at, &message);
            assert!(!seen.is_empty(), "{at:?}: nothing seen");
            assert_eq!(seen.kinds.as_slice(), [kind], "{at:?}");
            assert_eq!(ids_only(seen), by_json(at, &message), "{at:?}");
        }
    }

    #[test]
    fn a_0_3_answer_reveals_its_ids_and_states() {
        use v03::send_message_response::Payload as Sent;
        use v03::stream_response::Payload as Event;
        let task = v03::Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: Some(v03::TaskStatus {
                state: v03::TaskState::Cancelled as i32,
                ..Default::default()
            }),
            ..Default::default()
        };
        let sent = v03::SendMessageResponse {
            payload: Some(Sent::Task(task.clone())),
        };
        let event = v03::StreamResponse {
            payload: Some(Event::StatusUpdate(v03::TaskStatusUpdateEvent {
                task_id: "t2".into(),
                context_id: "c2".into(),
                status: Some(v03::TaskStatus {
                    state: v03::TaskState::InputRequired as i32,
                    ..Default::default()
                }),
                ..Default::default()
            })),
        };
        let message = v03::SendMessageResponse {
            payload: Some(Sent::Msg(v03::Message {
                message_id: "m1".into(),
                context_id: "c3".into(),
                task_id: "t3".into(),
                ..Default::default()
            })),
        };
        let config = v03::TaskPushNotificationConfig {
            name: "tasks/t4/pushNotificationConfigs/p1".into(),
            ..Default::default()
        };
        let answers = [
            (
                (Send, Version::V0_3),
                sent.encode_to_vec(),
                seen(&["t1"], &["c1"], &[("t1", "canceled")]),
            ),
            (
                (CancelTask, Version::V0_3),
                task.encode_to_vec(),
                seen(&["t1"], &["c1"], &[("t1", "canceled")]),
            ),
            (
                (Stream, Version::V0_3),
                event.encode_to_vec(),
                seen(&["t2"], &["c2"], &[("t2", "input-required")]),
            ),
            (
                (Send, Version::V0_3),
                message.encode_to_vec(),
                seen(&["t3"], &["c3"], &[]),
            ),
            (
                (PushGet, Version::V0_3),
                config.encode_to_vec(),
                seen(&["t4"], &[], &[]),
            ),
        ];
        for (at, message, expected) in answers {
            assert_eq!(ids_only(of_answer(at, &message)), expected, "{at:?}");
        }
    }

    #[test]
    fn what_does_not_decode_reveals_nothing() {
        let seen = of_answer((Send, Version::V1_0), b"\x0a\xff\xff");
        assert!(seen.is_empty());
        assert_eq!(seen.kinds.as_slice(), ["other"]);
        let seen = of_answer((GetTask, Version::V1_0), b"");
        assert!(seen.is_empty());
    }
}
