//! An answer read by hand on [`Cursor`]: the same [`Answer`] that
//! `answer::read_with` builds through serde_json, in one walk over the
//! bytes. serde_json read a 300-byte task answer in ~5,500 instructions,
//! most of them its calls per token (bench/profile.md).
//!
//! What the cursor gives up on (see `crate::json_cursor`) is read through
//! serde_json as before, which has the last word; so this changes how fast
//! an answer is read, never what is read from it. The reading is as
//! forgiving as serde's: a member of an unexpected type is present but holds
//! nothing, and when a name repeats the last one wins.

use std::borrow::Cow;

use super::answer::{Answer, Ids, Node, Obj};
use crate::json_cursor::Cursor;

/// Reads all of `text`, or `None` to leave it to serde_json (which also
/// says when it is not JSON).
pub(super) fn read(text: &str) -> Option<Answer<'_>> {
    let mut c = Cursor::new(text);
    c.ws();
    let mut answer = Answer::default();
    if c.peek()? == b'{' {
        c.object(|c, name| match name {
            "result" => in_place(c, &mut answer.result, node),
            "error" => {
                answer.error = true;
                c.skip()
            }
            _ => c.skip(),
        })?;
    } else {
        // Anything but an object is an answer with neither member.
        other(&mut c)?;
    }
    c.end()?;
    Some(answer)
}

/// A member that should be an object, read into `obj` in place (a
/// result is a few hundred bytes, not moved through the calls): its
/// members go to `member`, any other value is skipped.
fn in_place<'a, T: Default>(
    c: &mut Cursor<'a>,
    obj: &mut Obj<T>,
    mut member: impl FnMut(&mut T, &mut Cursor<'a>, &'a str) -> Option<()>,
) -> Option<()> {
    if obj.present {
        // A repeated member: the last one wins.
        *obj = Obj::default();
    }
    obj.present = true;
    if c.peek()? == b'{' {
        obj.object = true;
        c.object(|c, name| member(&mut obj.value, c, name))
    } else {
        other(c)
    }
}

fn node<'a>(node: &mut Node<'a>, c: &mut Cursor<'a>, name: &'a str) -> Option<()> {
    match name {
        "kind" => node.kind = text(c)?,
        "id" => {
            node.has_id = true;
            node.ids.id = text(c)?;
        }
        "status" => {
            node.has_status = true;
            node.ids.state = state(c)?;
        }
        "artifact" => {
            node.has_artifact = true;
            c.skip()?;
        }
        "task" => in_place(c, &mut node.task, ids)?,
        "message" => in_place(c, &mut node.message, ids)?,
        "statusUpdate" => in_place(c, &mut node.status_update, ids)?,
        "artifactUpdate" => in_place(c, &mut node.artifact_update, ids)?,
        "tasks" => node.tasks = tasks(c)?,
        _ => ids(&mut node.ids, c, name)?,
    }
    Some(())
}

fn ids<'a>(ids: &mut Ids<'a>, c: &mut Cursor<'a>, name: &'a str) -> Option<()> {
    let slot = match name {
        "id" => &mut ids.id,
        "taskId" => &mut ids.task_id,
        "contextId" => &mut ids.context_id,
        "sessionId" => &mut ids.session_id,
        "status" => {
            ids.state = state(c)?;
            return Some(());
        }
        _ => return c.skip(),
    };
    *slot = text(c)?;
    Some(())
}

/// A `status` member's `state`, when it is an object with a string one.
fn state<'a>(c: &mut Cursor<'a>) -> Option<Option<Cow<'a, str>>> {
    let mut status = Obj::default();
    in_place(
        c,
        &mut status,
        |state: &mut Option<Cow<'a, str>>, c, name| {
            if name == "state" {
                *state = text(c)?;
                Some(())
            } else {
                c.skip()
            }
        },
    )?;
    Some(status.value)
}

/// `tasks`: its elements that are objects, when it is an array.
fn tasks<'a>(c: &mut Cursor<'a>) -> Option<Option<Vec<Ids<'a>>>> {
    if c.peek()? != b'[' {
        return other(c).map(|()| None);
    }
    let mut tasks = Vec::new();
    c.array(|c| {
        let mut item = Obj::default();
        in_place(c, &mut item, ids)?;
        if item.object {
            tasks.push(item.value);
        }
        Some(())
    })?;
    Some(Some(tasks))
}

/// A string member's text; `None` for any other type.
fn text<'a>(c: &mut Cursor<'a>) -> Option<Option<Cow<'a, str>>> {
    if c.peek()? == b'"' {
        c.string().map(Some)
    } else {
        other(c).map(|()| None)
    }
}

/// Past a value of a type the reading does not keep, where serde_json
/// reads it (`deserialize_any`) rather than skips it, and so refuses a
/// number out of `f64`'s range: a number that could be one (with an
/// exponent, or of 300 characters or more) is left to serde_json.
fn other(c: &mut Cursor<'_>) -> Option<()> {
    match c.peek()? {
        b'-' | b'0'..=b'9' => {
            let n = c.number()?;
            (n.len() < 300 && !n.contains(['e', 'E'])).then_some(())
        }
        _ => c.skip(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_cursor::arbitrary::{cut, doc, rendered, space, Doc};
    use proptest::prelude::*;

    /// Everything a reading found, as text.
    fn described(answer: &Answer<'_>) -> String {
        fn ids(i: &Ids<'_>) -> String {
            format!(
                "{:?}/{:?}/{:?}/{:?}/{:?}",
                i.id, i.task_id, i.context_id, i.session_id, i.state
            )
        }
        fn obj(o: &Obj<Ids<'_>>) -> String {
            format!("{}{} {}", o.present, o.object, ids(&o.value))
        }
        let r = &answer.result;
        let n = &r.value;
        format!(
            "error={} result={}{} kind={:?} ids={} has={}{}{} task={} message={} status={} artifact={} tasks={:?}",
            answer.error,
            r.present,
            r.object,
            n.kind,
            ids(&n.ids),
            n.has_id,
            n.has_status,
            n.has_artifact,
            obj(&n.task),
            obj(&n.message),
            obj(&n.status_update),
            obj(&n.artifact_update),
            n.tasks.as_ref().map(|t| t.iter().map(ids).collect::<Vec<_>>()),
        )
    }

    /// The serde reading's outcome when the hand reader reads `text`.
    fn agrees(text: &str) -> Result<bool, String> {
        let Some(hand) = read(text) else {
            return Ok(false);
        };
        let serde = super::super::answer::read_by_serde(text)
            .ok_or_else(|| format!("the hand reader read what serde refuses: {text:?}"))?;
        let (hand, serde) = (described(&hand), described(&serde));
        if hand != serde {
            return Err(format!("{text:?}:\n hand  {hand}\n serde {serde}"));
        }
        Ok(true)
    }

    #[test]
    fn answers_of_every_version_are_read_by_hand() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"completed","message":{"parts":[{"kind":"text","text":"done \u00e9 \"q\""}]}},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}],"history":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"id":"t1","sessionId":"s1","status":{"state":"working"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"t1","artifact":{"parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"id":"a"},7,{"id":"b","status":{"state":"failed"}}],"nextPageToken":""}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","contextId":"c\n1","parts":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t-\ud83d\ude00", "contextId": "c", "status": {"state": "completed", "message": {"parts": [{"kind": "text", "text": "\u00e9\ud83d\ude00"}]}}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"id":5,"status":"odd","kind":null,"tasks":{},"task":[1]}}"#,
            r#"{"result":{"id":"a","id":"b","status":{"state":"x"},"status":3}}"#,
            " [1, 2] ",
            "\"just a string\"",
            r#"{"result":{"id":-12.5,"status":{"state":18446744073709551616}}}"#,
        ] {
            assert_eq!(agrees(text), Ok(true), "{text}");
        }
    }

    #[test]
    fn numbers_out_of_range_where_serde_reads_them_are_left_to_serde() {
        let huge = format!(r#"{{"result":{{"id":1{}}}}}"#, "0".repeat(400));
        for text in [r#"{"result":1e400}"#, r#"{"result":{"id":1e4}}"#, &huge] {
            assert!(read(text).is_none(), "{text}");
        }
        // Skipped, a number is only checked against the grammar, as serde
        // skips it.
        assert_eq!(agrees(r#"{"result":{"other":1e400}}"#), Ok(true));
    }

    const NAMES: &[&str] = &[
        "result",
        "error",
        "kind",
        "id",
        "status",
        "state",
        "artifact",
        "task",
        "message",
        "statusUpdate",
        "artifactUpdate",
        "tasks",
        "taskId",
        "contextId",
        "sessionId",
        "parts",
        "text",
        "x\\u0041",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn whatever_the_hand_reader_reads_serde_reads_the_same(
            result in doc(NAMES),
            extra in prop::collection::vec((prop::sample::select(NAMES), doc(NAMES)), 0..3),
            space in space(),
            cut in cut(),
        ) {
            let mut members = vec![("jsonrpc", Doc::Atom("\"2.0\"")), ("result", result)];
            members.extend(extra);
            let text = rendered(&Doc::Obj(members), &space, cut);
            if let Err(e) = agrees(&text) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}
