//! The members of an answer (a JSON-RPC response: a unary body or one SSE
//! event's data) that [`super::learn`] asks about, read by serde straight
//! into fixed fields. No tree is built and nothing is allocated unless an id
//! has escapes; every other member is skipped unread (still checked to be
//! JSON, at any depth). This replaced a generic borrowed tree that cost
//! ~6,000 instructions per 300-byte answer (bench/profile.md).
//!
//! The reading is forgiving, as the tree was: a member of an unexpected type
//! is present but holds nothing, and when a name repeats the last one wins.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::sketch::Name;

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
    value: T,
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
    let mut de = serde_json::Deserializer::from_str(text);
    let mut answer = Obj::<Answer<'_>>::default();
    InPlace(&mut answer).deserialize(&mut de).ok()?;
    de.end().ok()?;
    // Anything but an object is an answer with neither member.
    Some(answer.value)
}

/// An object's members, read into `self` one at a time.
trait Members<'de>: Default {
    /// Reads the value of member `name` (every value must be read).
    fn member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error>;
}

impl<'de> Members<'de> for Answer<'de> {
    fn member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "result" => map.next_value_seed(InPlace(&mut self.result)),
            "error" => {
                self.error = true;
                map.next_value::<IgnoredAny>().map(drop)
            }
            _ => map.next_value::<IgnoredAny>().map(drop),
        }
    }
}

impl<'de> Members<'de> for Node<'de> {
    fn member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "kind" => self.kind = map.next_value::<Text>()?.0,
            "id" => {
                self.has_id = true;
                self.ids.id = map.next_value::<Text>()?.0;
            }
            "status" => {
                self.has_status = true;
                self.ids.state = map.next_value::<Status>()?.0;
            }
            "artifact" => {
                self.has_artifact = true;
                map.next_value::<IgnoredAny>()?;
            }
            "task" => map.next_value_seed(InPlace(&mut self.task))?,
            "message" => map.next_value_seed(InPlace(&mut self.message))?,
            "statusUpdate" => map.next_value_seed(InPlace(&mut self.status_update))?,
            "artifactUpdate" => map.next_value_seed(InPlace(&mut self.artifact_update))?,
            "tasks" => self.tasks = map.next_value::<Tasks>()?.0,
            _ => self.ids.member(name, map)?,
        }
        Ok(())
    }
}

impl<'de> Members<'de> for Ids<'de> {
    fn member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match name {
            "id" => &mut self.id,
            "taskId" => &mut self.task_id,
            "contextId" => &mut self.context_id,
            "sessionId" => &mut self.session_id,
            "status" => {
                self.state = map.next_value::<Status>()?.0;
                return Ok(());
            }
            _ => return map.next_value::<IgnoredAny>().map(drop),
        };
        *slot = map.next_value::<Text>()?.0;
        Ok(())
    }
}

/// `status.state`: the only member of a status that is read.
#[derive(Default)]
struct State<'a>(Option<Cow<'a, str>>);

impl<'de> Members<'de> for State<'de> {
    fn member<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "state" => self.0 = map.next_value::<Text>()?.0,
            _ => drop(map.next_value::<IgnoredAny>()?),
        }
        Ok(())
    }
}

/// Reads a member into `Obj<T>`: any JSON value is accepted, an object's
/// members go to `T`, and a repeated member replaces the earlier reading
/// (the last one wins).
struct InPlace<'x, T>(&'x mut Obj<T>);

impl<'de, T: Members<'de>> DeserializeSeed<'de> for InPlace<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        *self.0 = Obj {
            present: true,
            ..Obj::default()
        };
        d.deserialize_any(self)
    }
}

impl<'de, T: Members<'de>> Visitor<'de> for InPlace<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
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
            self.0.value.member(&key, &mut map)?;
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

    fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
        Ok(Text(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
        Ok(Text(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
        Ok(Text(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
        Ok(Text(None))
    }
    fn visit_unit<E>(self) -> Result<Text<'de>, E> {
        Ok(Text(None))
    }
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
struct Status<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Status<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut status = Obj::<State<'de>>::default();
        InPlace(&mut status).deserialize(d)?;
        Ok(Status(status.value.0))
    }
}

/// `tasks`: the elements that are objects, when it is an array.
struct Tasks<'a>(Option<Vec<Ids<'a>>>);

impl<'de> Deserialize<'de> for Tasks<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TasksVisitor)
    }
}

struct TasksVisitor;

impl<'de> Visitor<'de> for TasksVisitor {
    type Value = Tasks<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_unit<E>(self) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Tasks<'de>, E> {
        Ok(Tasks(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tasks<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Tasks(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tasks<'de>, A::Error> {
        let mut tasks = Vec::new();
        let mut item = Obj::<Ids<'de>>::default();
        while seq.next_element_seed(InPlace(&mut item))?.is_some() {
            if item.object {
                tasks.push(std::mem::take(&mut item.value));
            }
        }
        Ok(Tasks(Some(tasks)))
    }
}
