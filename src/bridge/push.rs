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
/// (whose own id for the task is `task`) reads it.
pub fn translate(agent: Version, client: Version, body: Value, task: &str) -> Result<Value> {
    if agent == client {
        return Ok(body);
    }
    let pivot = (row(agent).result_in)(Family::Stream, body)?;
    (row(client).result_out)(Family::Stream, pivot, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_1_0_task_reaches_a_0_3_client_as_a_0_3_task_and_back() {
        let v10 = json!({"task": {"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"}}});
        let v03 = translate(Version::V1_0, Version::V0_3, v10.clone(), "t1").unwrap();
        assert_eq!(v03["kind"], "task", "{v03}");
        assert_eq!(v03["id"], "t1");
        assert_eq!(v03["status"]["state"], "completed");
        let back = translate(Version::V0_3, Version::V1_0, v03, "t1").unwrap();
        assert_eq!(
            back["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{back}"
        );
        assert_eq!(
            translate(Version::V1_0, Version::V1_0, v10.clone(), "t1").unwrap(),
            v10
        );
    }

    #[test]
    fn a_body_that_is_no_notification_is_refused() {
        let odd = json!({"neither": true});
        assert!(translate(Version::V1_0, Version::V0_3, odd, "t").is_err());
    }
}
