//! A2A objects in the shape of each protocol version, for the sample agents.

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Working,
    InputRequired,
    Completed,
}

impl State {
    /// The 0.x spelling.
    pub fn word(self) -> &'static str {
        match self {
            State::Working => "working",
            State::InputRequired => "input-required",
            State::Completed => "completed",
        }
    }

    /// The 1.0 spelling.
    fn enum_name(self) -> &'static str {
        match self {
            State::Working => "TASK_STATE_WORKING",
            State::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            State::Completed => "TASK_STATE_COMPLETED",
        }
    }
}

/// 1 for 0.1 method names, 3 for 0.2/0.3, 10 for 1.0.
pub fn version_of(method: &str) -> u8 {
    match method {
        "tasks/send" | "tasks/sendSubscribe" => 1,
        m if m.starts_with(|c: char| c.is_ascii_uppercase()) => 10,
        _ => 3,
    }
}

pub fn first_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find_map(|p| p["text"].as_str()))
        .unwrap_or("")
        .to_string()
}

fn status(v: u8, state: State, text: &str) -> Value {
    let message = match v {
        1 => json!({"role": "agent", "parts": [{"type": "text", "text": text}]}),
        3 => {
            json!({"kind": "message", "messageId": "status", "role": "agent", "parts": [{"kind": "text", "text": text}]})
        }
        _ => json!({"messageId": "status", "role": "ROLE_AGENT", "parts": [{"text": text}]}),
    };
    let state = if v == 10 {
        state.enum_name()
    } else {
        state.word()
    };
    json!({"state": state, "message": message})
}

fn artifact(v: u8, text: &str) -> Value {
    match v {
        1 => json!({"parts": [{"type": "text", "text": text}]}),
        3 => json!({"artifactId": "answer", "parts": [{"kind": "text", "text": text}]}),
        _ => json!({"artifactId": "answer", "parts": [{"text": text}]}),
    }
}

/// A task in its version's shape (1.0 wraps it in `{"task": …}`).
pub fn task(v: u8, id: &str, ctx: &str, state: State, text: &str) -> Value {
    let artifacts = if state == State::Completed {
        json!([artifact(v, text)])
    } else {
        json!([])
    };
    match v {
        1 => {
            json!({"id": id, "sessionId": ctx, "status": status(v, state, text), "artifacts": artifacts})
        }
        3 => {
            json!({"kind": "task", "id": id, "contextId": ctx, "status": status(v, state, text), "artifacts": artifacts})
        }
        _ => {
            json!({"task": {"id": id, "contextId": ctx, "status": status(v, state, text), "artifacts": artifacts}})
        }
    }
}

/// A status-update event in its version's shape.
pub fn status_event(v: u8, id: &str, ctx: &str, state: State, text: &str) -> Value {
    let last = state != State::Working;
    match v {
        1 => json!({"id": id, "status": status(v, state, text), "final": last}),
        3 => {
            json!({"kind": "status-update", "taskId": id, "contextId": ctx, "status": status(v, state, text), "final": last})
        }
        _ => {
            json!({"statusUpdate": {"taskId": id, "contextId": ctx, "status": status(v, state, text)}})
        }
    }
}

fn artifact_event(v: u8, id: &str, ctx: &str, text: &str, append: bool, last: bool) -> Value {
    match v {
        1 => json!({"id": id, "artifact": artifact(v, text)}),
        3 => {
            json!({"kind": "artifact-update", "taskId": id, "contextId": ctx, "artifact": artifact(v, text), "append": append, "lastChunk": last})
        }
        _ => {
            json!({"artifactUpdate": {"taskId": id, "contextId": ctx, "artifact": artifact(v, text), "append": append, "lastChunk": last}})
        }
    }
}

/// working → the answer in three chunks → completed, each a whole JSON-RPC
/// response with the request's id.
pub fn forecast_events(v: u8, id: &Value, task: &str, ctx: &str, text: &str) -> Vec<Value> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let third = words.len().div_ceil(3).max(1);
    let mut items = vec![status_event(
        v,
        task,
        ctx,
        State::Working,
        "Computing the forecast...",
    )];
    let chunks: Vec<String> = words.chunks(third).map(|c| c.concat()).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        items.push(artifact_event(
            v,
            task,
            ctx,
            chunk,
            i > 0,
            i + 1 == chunks.len(),
        ));
    }
    items.push(status_event(v, task, ctx, State::Completed, "Done."));
    items
        .into_iter()
        .map(|item| result(id.clone(), item))
        .collect()
}

pub fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn error(id: Value, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_the_version() {
        assert_eq!(task(1, "t", "s", State::Completed, "x")["sessionId"], "s");
        assert_eq!(
            task(3, "t", "c", State::InputRequired, "x")["status"]["state"],
            "input-required"
        );
        assert_eq!(
            task(10, "t", "c", State::InputRequired, "x")["task"]["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
    }

    #[test]
    fn forecast_streams_working_chunks_completed() {
        let events = forecast_events(3, &json!(1), "t", "c", "sunny spells with light wind today");
        assert!(events.len() >= 4);
        assert_eq!(events[0]["result"]["status"]["state"], "working");
        assert_eq!(events.last().unwrap()["result"]["final"], true);
        assert!(events.iter().all(|e| e["id"] == 1));
    }
}
