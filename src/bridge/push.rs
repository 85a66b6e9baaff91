//! A push notification's body, from the agent's version into the client's:
//! read as a streamed item of the agent's version into the pivot (a 0.3
//! Task or event, a 1.0 `StreamResponse`), written as the client's. The
//! push relay uses it, so a 0.3 client bridged to a 1.0 agent still gets
//! the 0.3 Task it can read.

use serde_json::Value;

use super::versions::row;
use super::Result;
use crate::a2a::{Family, Version};

/// `body`, posted by an agent speaking `agent`, as a client of `client`
/// (whose own id for the task is `task`) reads it; `None` when it has no
/// form that client reads.
///
/// A 0.x client's webhook receives Tasks only (its SDKs parse the body as
/// one). So a 1.0 agent's status update reaches it as the Task that
/// status describes; an artifact update or a message, which no Task
/// carries whole, is not sent to it.
pub fn translate(
    agent: Version,
    client: Version,
    body: Value,
    task: &str,
) -> Result<Option<Value>> {
    if agent == client {
        // Read, to refuse what is no notification, but sent as it came.
        let pivot = (row(agent).result_in)(Family::Stream, body.clone())?;
        stream_item(&pivot)?;
        return Ok(Some(body));
    }
    let pivot = (row(agent).result_in)(Family::Stream, body)?;
    stream_item(&pivot)?;
    let pivot = match client {
        Version::V1_0 => pivot,
        _ if pivot.get("artifactUpdate").is_some() || pivot.get("message").is_some() => {
            return Ok(None)
        }
        Version::V0_1 | Version::V0_3 => status_as_task(pivot),
    };
    (row(client).result_out)(Family::Stream, pivot, task).map(Some)
}

/// A 1.0 `StreamResponse`: one of its four members, an object.
fn stream_item(pivot: &Value) -> Result<()> {
    const ITEMS: [&str; 4] = ["task", "message", "statusUpdate", "artifactUpdate"];
    let is_item = |name: &str| pivot.get(name).is_some_and(Value::is_object);
    match ITEMS.into_iter().filter(|name| is_item(name)).count() {
        1 => Ok(()),
        _ => Err(super::Untranslatable::new(
            "the notification",
            "is not one Task, Message, status update or artifact update",
        )),
    }
}

/// A 1.0 status update as the Task it describes; anything else as it is.
fn status_as_task(mut pivot: Value) -> Value {
    let Some(update) = pivot.get_mut("statusUpdate").and_then(Value::as_object_mut) else {
        return pivot;
    };
    let Some(id) = update.remove("taskId") else {
        return pivot;
    };
    let mut task = serde_json::Map::new();
    task.insert("id".into(), id);
    for member in ["contextId", "status", "metadata"] {
        if let Some(value) = update.remove(member) {
            task.insert(member.into(), value);
        }
    }
    serde_json::json!({ "task": task })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_1_0_task_reaches_a_0_3_client_as_a_0_3_task_and_back() {
        let v10 = json!({"task": {"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        let v03 = translate(Version::V1_0, Version::V0_3, v10.clone(), "t1")
            .unwrap()
            .unwrap();
        assert_eq!(v03["kind"], "task", "{v03}");
        assert_eq!(v03["id"], "t1");
        assert_eq!(v03["status"]["state"], "completed");
        let back = translate(Version::V0_3, Version::V1_0, v03, "t1")
            .unwrap()
            .unwrap();
        assert_eq!(
            back["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{back}"
        );
        assert_eq!(
            translate(Version::V1_0, Version::V1_0, v10.clone(), "t1").unwrap(),
            Some(v10)
        );
    }

    #[test]
    fn a_0_3_webhook_gets_a_status_update_as_its_task_and_no_artifact_update() {
        let status = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        let task = translate(Version::V1_0, Version::V0_3, status.clone(), "t1")
            .unwrap()
            .unwrap();
        assert_eq!(task["kind"], "task", "{task}");
        assert_eq!(task["id"], "t1");
        assert_eq!(task["contextId"], "c1");
        assert_eq!(task["status"]["state"], "completed");
        let artifact = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}});
        assert_eq!(
            translate(Version::V1_0, Version::V0_3, artifact, "t1").unwrap(),
            None
        );
        // A 1.0 client gets the update as it is.
        let v10 = translate(Version::V1_0, Version::V1_0, status.clone(), "t1").unwrap();
        assert_eq!(v10, Some(status));
    }

    #[test]
    fn a_body_that_is_no_notification_is_refused() {
        let odd = json!({"neither": true});
        assert!(translate(Version::V1_0, Version::V0_3, odd.clone(), "t").is_err());
        assert!(translate(Version::V1_0, Version::V1_0, odd, "t").is_err());
    }
}
