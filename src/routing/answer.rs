//! The members of an answer (a JSON-RPC response: a unary body or one SSE
//! event's data) that [`super::learn`] asks about, read by serde straight
//! into fixed fields. No tree is built and nothing is allocated unless an id
//! has escapes; every other member is skipped unread (still checked to be
//! JSON, at any depth). This replaced a generic borrowed tree that cost
//! ~6,000 instructions per 300-byte answer (bench/profile.md).
//!
//! The reading is forgiving, as the tree was: a member of an unexpected type
//! is present but holds nothing, and when a name repeats the last one wins.
//!
//! Most of a long answer's bytes are usually a part's `text`, inside
//! members that are skipped. In an answer of [`PLAIN_FROM`] bytes or more
//! with no control byte anywhere, those are skipped with [`Skip`], which
//! finds a text's end with `memchr` instead of serde_json's check of every
//! byte (as `crate::sketch::Plain` does for requests); the reading is
//! otherwise the same, and refuses the same answers.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::sketch::Name;

/// A visitor's methods for the scalars it reads nothing from (every one
/// but strings): each gives `$value`.
macro_rules! scalars_give {
    ($value:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// A whole answer.
#[derive(Default)]
pub struct Answer<'a> {
    pub result: Obj<Node<'a>>,
    /// `error` is present, of whatever type.
    pub error: bool,
}

/// A member that should be an object, read in place: no reading is moved
/// through the parser's frames (a result is a few hundred bytes).
#[derive(Default)]
pub struct Obj<T> {
    pub present: bool,
    pub object: bool,
    pub(super) value: T,
}

impl<T> Obj<T> {
    /// The reading, when the member is an object.
    pub fn get(&self) -> Option<&T> {
        self.object.then_some(&self.value)
    }
}

/// A result, in any version's shape: its own ids, plus the 1.0 wrappers and
/// a `ListTasks` answer's `tasks`.
#[derive(Default)]
pub struct Node<'a> {
    pub ids: Ids<'a>,
    pub kind: Option<Cow<'a, str>>,
    /// `id` is present, of whatever type (0.1 tasks are told by shape).
    pub has_id: bool,
    pub has_status: bool,
    pub has_artifact: bool,
    pub task: Obj<Ids<'a>>,
    pub message: Obj<Ids<'a>>,
    pub status_update: Obj<Ids<'a>>,
    pub artifact_update: Obj<Ids<'a>>,
    /// `Some` when `tasks` is an array; its elements that are objects.
    pub tasks: Option<Vec<Ids<'a>>>,
}

/// The ids and state of one task, message or event; string members only.
#[derive(Default)]
pub struct Ids<'a> {
    pub id: Option<Cow<'a, str>>,
    pub task_id: Option<Cow<'a, str>>,
    pub context_id: Option<Cow<'a, str>>,
    pub session_id: Option<Cow<'a, str>>,
    /// `status.state`, when `status` is an object with a string `state`.
    pub state: Option<Cow<'a, str>>,
}

/// Reads all of `text` (nothing may follow the value); `None` if it is not
/// JSON.
pub fn read(text: &str) -> Option<Answer<'_>> {
    // Most answers are read by hand; what that reader leaves is read here.
    if let Some(answer) = super::answer_by_hand::read(text) {
        return Some(answer);
    }
    if text.len() >= PLAIN_FROM && crate::sketch::control_free(text.as_bytes()) {
        // `Skip` has limits that serde_json's skipping has not (nesting,
        // a `text` that is neither a string nor an array): beyond them the
        // answer is read again the usual way, which has the last word.
        if let Some(answer) = read_with::<Plain>(text) {
            return Some(answer);
        }
    }
    read_with::<Checked>(text)
}

/// The serde reading alone, for the hand reader's tests.
#[cfg(test)]
pub(super) fn read_by_serde(text: &str) -> Option<Answer<'_>> {
    read_with::<Checked>(text)
}

/// Answers shorter than this are read the checked way. [`Skip`] pays per
/// token what it saves per byte of text: counted with callgrind over
/// `learn::from_response`, a task whose text is 30 bytes took 6,321
/// instructions checked and 6,657 plain; 300 bytes 6,999 and 6,881; 1,000
/// bytes 8,644 and 7,161; 16,000 bytes 44,505 and 13,627.
const PLAIN_FROM: usize = 512;

fn read_with<S: Skipping>(text: &str) -> Option<Answer<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut answer = Obj::<Answer<'_>>::default();
    InPlace(&mut answer, S::default())
        .deserialize(&mut de)
        .ok()?;
    de.end().ok()?;
    // Anything but an object is an answer with neither member.
    Some(answer.value)
}

/// How members that hold parts are skipped. A type rather than a flag, so
/// that each reading is compiled on its own: the checked one is the same
/// code as before there was a choice.
trait Skipping: Copy + Default {
    /// Skips the value of member `name`.
    fn skip<'de, A: MapAccess<'de>>(map: &mut A, name: &str) -> Result<(), A::Error>;
}

/// serde_json's own skipping, which checks every byte of every string.
#[derive(Clone, Copy, Default)]
struct Checked;

impl Skipping for Checked {
    fn skip<'de, A: MapAccess<'de>>(map: &mut A, _: &str) -> Result<(), A::Error> {
        map.next_value::<IgnoredAny>().map(drop)
    }
}

/// [`Skip`] for the members that hold parts: only for a text known to have
/// no control byte.
#[derive(Clone, Copy, Default)]
struct Plain;

impl Skipping for Plain {
    fn skip<'de, A: MapAccess<'de>>(map: &mut A, name: &str) -> Result<(), A::Error> {
        match name {
            "artifacts" | "artifact" | "history" | "message" | "parts" => {
                map.next_value_seed(Skip::ANY)
            }
            _ => map.next_value::<IgnoredAny>().map(drop),
        }
    }
}

/// An object's members, read into `self` one at a time.
trait Members<'de>: Default {
    /// Reads the value of member `name` (every value must be read).
    fn member<A: MapAccess<'de>, S: Skipping>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<(), A::Error>;
}

impl<'de> Members<'de> for Answer<'de> {
    fn member<A: MapAccess<'de>, S: Skipping>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match name {
            "result" => map.next_value_seed(InPlace(&mut self.result, S::default())),
            "error" => {
                self.error = true;
                map.next_value::<IgnoredAny>().map(drop)
            }
            _ => S::skip(map, name),
        }
    }
}

impl<'de> Members<'de> for Node<'de> {
    fn member<A: MapAccess<'de>, S: Skipping>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match name {
            "kind" => self.kind = map.next_value::<Text>()?.0,
            "id" => {
                self.has_id = true;
                self.ids.id = map.next_value::<Text>()?.0;
            }
            "status" => {
                self.has_status = true;
                self.ids.state = map.next_value_seed(StatusOf(S::default()))?;
            }
            "artifact" => {
                self.has_artifact = true;
                S::skip(map, name)?;
            }
            "task" => map.next_value_seed(InPlace(&mut self.task, S::default()))?,
            "message" => map.next_value_seed(InPlace(&mut self.message, S::default()))?,
            "statusUpdate" => {
                map.next_value_seed(InPlace(&mut self.status_update, S::default()))?
            }
            "artifactUpdate" => {
                map.next_value_seed(InPlace(&mut self.artifact_update, S::default()))?
            }
            "tasks" => self.tasks = map.next_value_seed(TasksOf(S::default()))?,
            _ => self.ids.member::<A, S>(name, map)?,
        }
        Ok(())
    }
}

impl<'de> Members<'de> for Ids<'de> {
    fn member<A: MapAccess<'de>, S: Skipping>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let slot = match name {
            "id" => &mut self.id,
            "taskId" => &mut self.task_id,
            "contextId" => &mut self.context_id,
            "sessionId" => &mut self.session_id,
            "status" => {
                self.state = map.next_value_seed(StatusOf(S::default()))?;
                return Ok(());
            }
            _ => return S::skip(map, name),
        };
        *slot = map.next_value::<Text>()?.0;
        Ok(())
    }
}

/// `status.state`: the only member of a status that is read.
#[derive(Default)]
struct State<'a>(Option<Cow<'a, str>>);

impl<'de> Members<'de> for State<'de> {
    fn member<A: MapAccess<'de>, S: Skipping>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match name {
            "state" => self.0 = map.next_value::<Text>()?.0,
            _ => S::skip(map, name)?,
        }
        Ok(())
    }
}

/// Reads a member into `Obj<T>`: any JSON value is accepted, an object's
/// members go to `T`, and a repeated member replaces the earlier reading
/// (the last one wins).
struct InPlace<'x, T, S>(&'x mut Obj<T>, S);

impl<'de, T: Members<'de>, S: Skipping> DeserializeSeed<'de> for InPlace<'_, T, S> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.0 = Obj {
            present: true,
            ..Obj::default()
        };
        d.deserialize_any(self)
    }
}

impl<'de, T: Members<'de>, S: Skipping> Visitor<'de> for InPlace<'_, T, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    scalars_give!(());
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.object = true;
        while let Some(Name(key)) = map.next_key()? {
            self.0.value.member::<A, S>(&key, &mut map)?;
        }
        Ok(())
    }
}

/// A string member's text; `None` for any other type.
struct Text<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Borrowed(v))))
    }

    fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Owned(v))))
    }

    scalars_give!(Text(None));
    // An escaped string arrives here, decoded into serde_json's scratch.
    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
}

/// A `status` member: its `state` when it is an object with a string one.
struct StatusOf<S>(S);

impl<'de, S: Skipping> DeserializeSeed<'de> for StatusOf<S> {
    type Value = Option<Cow<'de, str>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let mut status = Obj::<State<'de>>::default();
        InPlace(&mut status, self.0).deserialize(d)?;
        Ok(status.value.0)
    }
}

/// `tasks`: the elements that are objects, when it is an array.
struct TasksOf<S>(S);

impl<'de, S: Skipping> DeserializeSeed<'de> for TasksOf<S> {
    type Value = Option<Vec<Ids<'de>>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Skipping> Visitor<'de> for TasksOf<S> {
    type Value = Option<Vec<Ids<'de>>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    scalars_give!(None);
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut tasks = Vec::new();
        let mut item = Obj::<Ids<'de>>::default();
        while seq.next_element_seed(InPlace(&mut item, self.0))?.is_some() {
            if item.object {
                tasks.push(std::mem::take(&mut item.value));
            }
        }
        Ok(Some(tasks))
    }
}

/// Skips a value as `IgnoredAny` does, except that a member named `text`
/// (a part's text) is read with serde_json's `deserialize_bytes`: a
/// string's end is found with `memchr`, and its bytes are not checked for
/// control characters. Used only on a text that has none (see [`read`]),
/// and already checked to be UTF-8, so it skips what serde_json's own
/// skipping would, and refuses what it would refuse.
#[derive(Clone, Copy)]
struct Skip {
    /// The value of a `text` member. A2A gives `text` to strings; through
    /// `deserialize_bytes` anything but a string or an array fails the
    /// reading, and the answer is read again the usual way.
    text: bool,
}

impl Skip {
    const ANY: Skip = Skip { text: false };
    const TEXT: Skip = Skip { text: true };
}

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.text {
            d.deserialize_bytes(self)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    scalars_give!(());
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    /// A text without escapes: the bytes are the (checked) text's own.
    fn visit_borrowed_bytes<E>(self, _: &'de [u8]) -> Result<(), E> {
        Ok(())
    }
    /// A text with its escapes decoded. A lone surrogate comes through as
    /// WTF-8, not UTF-8; serde_json's own skipping accepts one too (it
    /// checks an escape's hex digits, not what they encode), and the text
    /// is not kept.
    fn visit_bytes<E>(self, _: &[u8]) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip::ANY)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Name(key)) = map.next_key()? {
            let skip = if key == "text" { Skip::TEXT } else { Skip::ANY };
            map.next_value_seed(skip)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids and state a reading found, as text.
    fn found(answer: Option<Answer<'_>>) -> Option<String> {
        answer.map(|a| {
            let r = a.result.get();
            format!(
                "{:?} {:?} {:?} {}",
                r.and_then(|r| r.ids.id.as_deref()),
                r.and_then(|r| r.ids.context_id.as_deref()),
                r.and_then(|r| r.ids.state.as_deref()),
                a.error
            )
        })
    }

    /// `read` and the checked reading agree; returns what they found.
    fn agreed(text: &str) -> Option<String> {
        let got = found(read(text));
        assert_eq!(got, found(read_with::<Checked>(text)), "{text}");
        got
    }

    /// A task whose artifacts are `artifacts`, long enough to be read plain.
    fn task_with(artifacts: &str) -> String {
        let long = "padding ".repeat(64);
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"kind":"task","id":"t1","contextId":"c1","status":{{"state":"completed","message":{{"parts":[{{"kind":"text","text":"done \u00e9"}}]}}}},"artifacts":{artifacts},"history":[{{"role":"agent","parts":[{{"kind":"text","text":"a\nb \"q\" {long}"}}]}}]}}}}"#
        );
        assert!(text.len() >= PLAIN_FROM);
        text
    }

    const READ: &str = r#"Some("t1") Some("c1") Some("completed") false"#;

    #[test]
    fn a_short_answer_is_read_the_checked_way() {
        let text = r#"{"result":{"kind":"task","id":"t1","contextId":"c1","artifacts":[{"parts":[{"text":7}]}]}}"#;
        assert!(text.len() < PLAIN_FROM);
        // Plain would give up on this `text`; the short answer never tries.
        assert!(read_with::<Plain>(text).is_none());
        assert_eq!(
            found(read(text)).as_deref(),
            Some(r#"Some("t1") Some("c1") None false"#)
        );
    }

    #[test]
    fn parts_skipped_plain_read_as_the_checked_reading_does() {
        let long = "word ".repeat(400);
        let text = task_with(&format!(
            r#"[{{"artifactId":"a","parts":[{{"kind":"text","text":"{long}"}},{{"kind":"data","data":{{"text":["x",{{"text":"y"}}],"n":[1,2.5,null,true]}}}}]}}]"#
        ));
        assert!(crate::sketch::control_free(text.as_bytes()));
        assert!(read_with::<Plain>(&text).is_some(), "taken plain");
        assert_eq!(agreed(&text).as_deref(), Some(READ));
    }

    #[test]
    fn a_text_that_is_not_a_string_is_read_the_checked_way() {
        let text = task_with(r#"[{"parts":[{"text":{"not":"a string"}},{"text":7}]}]"#);
        assert!(read_with::<Plain>(&text).is_none(), "plain gives up");
        assert_eq!(agreed(&text).as_deref(), Some(READ));
    }

    #[test]
    fn nesting_past_the_plain_limit_is_read_the_checked_way() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let text = task_with(&format!(r#"[{{"parts":[{{"data":{deep}}}]}}]"#));
        assert_eq!(agreed(&text), found(read_with::<Checked>(&text)));
    }

    #[test]
    fn a_lone_surrogate_in_a_skipped_text_is_let_through_as_serde_json_does() {
        let text = task_with(r#"[{"parts":[{"text":"\ud800 and \udc00\u0041"}]}]"#);
        assert!(read_with::<Plain>(&text).is_some(), "taken plain");
        assert_eq!(agreed(&text).as_deref(), Some(READ));
    }

    #[test]
    fn what_the_checked_reading_refuses_is_refused() {
        for artifacts in [
            // A raw control byte inside a text.
            "[{\"parts\":[{\"text\":\"a\u{1}b\"}]}]",
            // An unknown escape.
            r#"[{"parts":[{"text":"\q"}]}]"#,
            // Not closed.
            r#"[{"parts":[{"text":"open}]}]"#,
        ] {
            assert_eq!(agreed(&task_with(artifacts)), None, "{artifacts}");
        }
    }
}
