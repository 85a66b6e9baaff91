//! What an agent's answer (a unary JSON-RPC response, or one SSE event's
//! data) says about tasks: the ids and states of what it carries, in every
//! version's shape. Read forgivingly (`super::loose`): members the gateway
//! does not use are skipped, and one of an unexpected type reads as
//! nothing; the answer itself goes to the client as the agent sent it.

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::loose::{List, Obj, Text};

/// A JSON-RPC response.
#[derive(Debug, Default, Deserialize)]
pub struct RpcResponse<'a> {
    #[serde(borrow, default)]
    pub result: Obj<Item<'a>>,
    #[serde(default)]
    pub error: Obj<IgnoredAny>,
}

/// A result or what a 1.0 wrapper holds: a task, a message, an event, or a
/// `ListTasks` page. 0.3 says which with `kind`, 1.0 with the wrapper's
/// member name, 0.1 by shape (`{id, status}`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item<'a> {
    #[serde(borrow, default)]
    pub kind: Text<'a>,
    /// Told present whatever its type (0.1 tasks are told by shape).
    #[serde(borrow, default)]
    pub id: Text<'a>,
    #[serde(borrow, default, alias = "task_id")]
    pub task_id: Text<'a>,
    #[serde(borrow, default, alias = "context_id")]
    pub context_id: Text<'a>,
    /// 0.1's conversation id.
    #[serde(borrow, default, alias = "session_id")]
    pub session_id: Text<'a>,
    #[serde(borrow, default)]
    pub status: Obj<Status<'a>>,
    #[serde(default)]
    pub artifact: Obj<IgnoredAny>,
    #[serde(borrow, default)]
    pub task: Obj<Box<Item<'a>>>,
    #[serde(borrow, default)]
    pub message: Obj<Box<Item<'a>>>,
    #[serde(borrow, default, alias = "status_update")]
    pub status_update: Obj<Box<Item<'a>>>,
    #[serde(borrow, default, alias = "artifact_update")]
    pub artifact_update: Obj<Box<Item<'a>>>,
    /// A `ListTasks` page.
    #[serde(borrow, default)]
    pub tasks: List<Obj<Item<'a>>>,
    /// An HTTP+JSON error (`google.rpc.Status`), which comes alone.
    #[serde(default)]
    pub error: Obj<IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Status<'a> {
    #[serde(borrow, default)]
    pub state: Text<'a>,
}

impl<'a> Item<'a> {
    /// `status.state`, when it is a string.
    pub fn state(&self) -> Option<&str> {
        self.status.get()?.state.as_deref()
    }
}

/// Reads all of `text` (nothing may follow the value); `None` if it is not
/// JSON. Any JSON that is not an object is an answer with neither member.
pub fn read(text: &str) -> Option<RpcResponse<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let answer = Obj::<RpcResponse<'_>>::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(match answer {
        Obj::Is(answer) => answer,
        _ => RpcResponse::default(),
    })
}

/// Reads all of `text` as a result alone (an HTTP+JSON answer's body or
/// event); `None` if it is not JSON.
pub fn read_result(text: &str) -> Option<Obj<Item<'_>>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let result = Obj::<Item<'_>>::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_versions_shape() {
        let a = read(r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}}"#).unwrap();
        let r = a.result.get().unwrap();
        assert_eq!(r.kind.as_deref(), Some("task"));
        assert_eq!(r.id.as_deref(), Some("t"));
        assert_eq!(r.context_id.as_deref(), Some("c"));
        assert_eq!(r.state(), Some("working"));

        let a = read(r#"{"result":{"statusUpdate":{"task_id":"t","context_id":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}"#).unwrap();
        let r = a.result.get().unwrap();
        let inner = r.status_update.get().unwrap();
        assert_eq!(inner.task_id.as_deref(), Some("t"));
        assert_eq!(inner.state(), Some("TASK_STATE_COMPLETED"));

        let a = read(r#"{"result":{"tasks":[{"id":"a"},5,{"id":"b"}]}}"#).unwrap();
        let tasks = a.result.get().unwrap().tasks.0.as_ref().unwrap();
        assert_eq!(tasks.len(), 3);
        assert!(matches!(tasks[1], Obj::Other));
    }

    #[test]
    fn odd_members_cost_nothing_but_themselves() {
        let a =
            read(r#"{"result":{"id":5,"taskId":"t","status":"x","task":[1],"tasks":{}}}"#).unwrap();
        let r = a.result.get().unwrap();
        assert_eq!(r.id, Text::Other);
        assert_eq!(r.task_id.as_deref(), Some("t"));
        assert!(matches!(r.status, Obj::Other));
        assert!(matches!(r.task, Obj::Other) && r.tasks.0.is_none());
        let a = read(r#"{"error":{"code":-32001},"result":null}"#).unwrap();
        assert!(a.error.present());
        assert!(matches!(a.result, Obj::Other));
        let a = read("[1,2]").unwrap();
        assert!(!a.result.present() && !a.error.present());
        assert!(read(r#"{"result":{}} x"#).is_none());
        assert!(read(r#"{"result":"#).is_none());
    }
}
