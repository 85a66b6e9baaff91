//! Forgiving readers for agents' answers: a member of an unexpected type
//! is present but holds nothing, instead of failing the whole reading. The
//! gateway reads answers only to learn ids and states; an agent's odd
//! member must not cost the call (the client gets the answer as sent).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A member that should be a string. `null` counts as present: what the
/// agent wrote is told apart from what it left out.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Text<'a> {
    #[default]
    Absent,
    /// Present, but not a string.
    Other,
    Is(Cow<'a, str>),
}

/// A member that should be an object, read as `T`.
#[derive(Debug, Default)]
pub enum Obj<T> {
    #[default]
    Absent,
    /// Present, but not an object.
    Other,
    Is(T),
}

impl<'a> Text<'a> {
    pub fn get(&self) -> Option<&Cow<'a, str>> {
        match self {
            Text::Is(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_deref(&self) -> Option<&str> {
        self.get().map(|s| &**s)
    }

    pub fn present(&self) -> bool {
        !matches!(self, Text::Absent)
    }
}

impl<T> Obj<T> {
    pub fn get(&self) -> Option<&T> {
        match self {
            Obj::Is(t) => Some(t),
            _ => None,
        }
    }

    pub fn present(&self) -> bool {
        !matches!(self, Obj::Absent)
    }
}

/// An array member read as `Vec<T>`; anything else reads as `None`.
#[derive(Debug)]
pub struct List<T>(pub Option<Vec<T>>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

/// The scalar visits that give `$value`, for visitors that want neither.
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
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// Reads past an object or array it does not want.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalars_give!(Text::Other);
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text::Is(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text::Is(Cow::Owned(v.to_owned())))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|_| Text::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|_| Text::Other)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjVisitor(PhantomData))
    }
}

struct ObjVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalars_give!(Obj::Other);
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Obj::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Obj::Is)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq).map(|_| Obj::Other)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListVisitor(PhantomData))
    }
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = List<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalars_give!(List(None));
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(List(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        drain_map(map).map(|_| List(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Vec::<T>::deserialize(SeqAccessDeserializer::new(seq)).map(|v| List(Some(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_members_read_as_nothing() {
        for json in ["1", "true", "null", "{}", "[1,[2]]", r#"{"a":[1]}"#] {
            let t: Text<'_> = serde_json::from_str(json).unwrap();
            assert_eq!(t, Text::Other, "{json}");
            let l: List<Text<'_>> = serde_json::from_str(json).unwrap();
            assert_eq!(l.0.is_some(), json.starts_with('['), "{json}");
        }
        let t: Text<'_> = serde_json::from_str(r#""a\"b""#).unwrap();
        assert_eq!(t.as_deref(), Some("a\"b"));
        let t: Text<'_> = serde_json::from_str(r#""plain""#).unwrap();
        assert!(matches!(t, Text::Is(Cow::Borrowed("plain"))));
        let o: Obj<Text<'_>> = serde_json::from_str("[1]").unwrap();
        assert!(matches!(o, Obj::Other));
    }

    #[test]
    fn broken_json_still_fails() {
        assert!(serde_json::from_str::<Text<'_>>("[1,").is_err());
        assert!(serde_json::from_str::<List<Text<'_>>>(r#"{"a":}"#).is_err());
    }
}
