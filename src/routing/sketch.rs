//! A borrowed, depth-limited reading of a JSON document: just enough
//! structure to find ids and states in an agent's answer. Strings without
//! escapes are borrowed from the input and members are kept in a `Vec`, so
//! reading an answer allocates little; anything deeper than the limit is
//! skipped, not built (an artifact's parts are never needed), and so is
//! every member whose name the reader said it will not ask for.

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

#[derive(Debug, PartialEq)]
pub enum Sketch<'a> {
    Str(Cow<'a, str>),
    Obj(Vec<(Cow<'a, str>, Sketch<'a>)>),
    Arr(Vec<Sketch<'a>>),
    /// A number, boolean or null, or a container below the depth limit.
    Other,
    Null,
}

impl<'a> Sketch<'a> {
    /// Reads `text` keeping containers `levels` deep (the root is level 1).
    pub fn parse(text: &'a str, levels: usize) -> Option<Sketch<'a>> {
        Self::parse_keeping(text, levels, |_| true)
    }

    /// As [`Sketch::parse`], keeping only the object members whose name
    /// `keep` accepts; the others are skipped unread (still checked to be
    /// JSON).
    pub fn parse_keeping(
        text: &'a str,
        levels: usize,
        keep: fn(&str) -> bool,
    ) -> Option<Sketch<'a>> {
        let mut de = serde_json::Deserializer::from_str(text);
        let sketch = Levels { left: levels, keep }.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(sketch)
    }

    /// A member; the last one wins, as in serde_json's own `Value`.
    pub fn get(&self, key: &str) -> Option<&Sketch<'a>> {
        match self {
            Sketch::Obj(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Sketch::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Sketch::Obj(_))
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

#[derive(Clone, Copy)]
struct Levels {
    left: usize,
    keep: fn(&str) -> bool,
}

impl Levels {
    fn deeper(self) -> Self {
        Self {
            left: self.left - 1,
            ..self
        }
    }
}

impl<'de> DeserializeSeed<'de> for Levels {
    type Value = Sketch<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Sketch<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Levels {
    type Value = Sketch<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Other)
    }

    fn visit_unit<E>(self) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Null)
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sketch<'de>, A::Error> {
        if self.left <= 1 {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(Sketch::Other);
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.deeper())? {
            items.push(item);
        }
        Ok(Sketch::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sketch<'de>, A::Error> {
        if self.left <= 1 {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Sketch::Other);
        }
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if !(self.keep)(&key) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(self.deeper())?;
            members.push((key, value));
        }
        Ok(Sketch::Obj(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_borrowed_strings_and_stops_at_the_limit() {
        let s = Sketch::parse(r#"{"a":{"b":"x","c":[1,{"d":2}]},"e":null}"#, 3).unwrap();
        let a = s.get("a").unwrap();
        assert!(matches!(a.get("b"), Some(Sketch::Str(Cow::Borrowed("x")))));
        assert_eq!(
            a.get("c"),
            Some(&Sketch::Other),
            "level 3 container skipped"
        );
        assert_eq!(s.get("e"), Some(&Sketch::Null));
        assert!(s.has("e") && !s.has("f"));
    }

    #[test]
    fn escaped_strings_are_decoded_and_the_last_duplicate_wins() {
        let s = Sketch::parse(r#"{"k":"a\"b","k":"c\u00e9"}"#, 2).unwrap();
        assert_eq!(s.get("k").and_then(Sketch::as_str), Some("cé"));
    }

    #[test]
    fn members_not_kept_are_skipped_at_every_level_but_still_checked() {
        let keep = |k: &str| k != "parts";
        let text = r#"{"parts":[1,2],"a":{"parts":{"x":1},"b":"y"}}"#;
        let s = Sketch::parse_keeping(text, 4, keep).unwrap();
        assert!(!s.has("parts"));
        let a = s.get("a").unwrap();
        assert!(!a.has("parts"));
        assert_eq!(a.get("b").and_then(Sketch::as_str), Some("y"));
        let broken = r#"{"parts":[1,,2],"a":1}"#;
        assert_eq!(Sketch::parse_keeping(broken, 4, keep), None);
    }

    #[test]
    fn invalid_or_trailing_text_is_nothing() {
        assert_eq!(Sketch::parse("{\"a\":", 3), None);
        assert_eq!(Sketch::parse("{} x", 3), None);
    }
}
