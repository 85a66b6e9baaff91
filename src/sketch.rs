//! A borrowed, depth-limited reading of a JSON document: just enough
//! structure for the gateway's own questions (is `params.message.role` a
//! string, which task does an answer name). Strings without escapes are
//! borrowed from the input and members are kept in a `Vec`, so a reading
//! allocates little and never copies a message's text. Anything deeper than
//! the limit is skipped, not built, and so is every member whose name the
//! reader said it will not ask for. Skipped text is still checked to be JSON,
//! with no limit on its nesting: the agent gets the original bytes, and deep
//! data is the agent's business.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Number;

#[derive(Debug, PartialEq)]
pub enum Sketch<'a> {
    Str(Cow<'a, str>),
    Obj(Vec<(Cow<'a, str>, Sketch<'a>)>),
    Arr(Vec<Sketch<'a>>),
    Num(Number),
    Bool(bool),
    Null,
    /// A container below the depth limit (read, not kept).
    Deep,
}

/// How to read a document: how deep, which members, and whether a member
/// name may repeat within an object.
#[derive(Clone, Copy)]
pub struct Reading {
    /// Containers are kept this many levels deep (the root is level 1).
    pub levels: usize,
    /// Object members whose name this refuses are skipped unread.
    pub keep: fn(&str) -> bool,
    /// Refuse an object that names a member twice. JSON leaves duplicates
    /// undefined; without this the last one wins, as in serde_json's `Value`.
    pub unique: bool,
}

/// Objects with more members than this check names for repeats with a set
/// rather than by scanning the members read so far.
const SCAN_LIMIT: usize = 16;

impl Reading {
    /// Every member, `levels` deep, repeats allowed.
    pub fn deep(levels: usize) -> Self {
        Self {
            levels,
            keep: |_| true,
            unique: false,
        }
    }

    /// Reads all of `text` (nothing may follow the value).
    pub fn parse(self, text: &str) -> Result<Sketch<'_>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let sketch = self.deserialize(&mut de)?;
        de.end()?;
        Ok(sketch)
    }

    fn deeper(self) -> Self {
        Self {
            levels: self.levels - 1,
            ..self
        }
    }
}

impl<'a> Sketch<'a> {
    /// Reads `text` keeping containers `levels` deep (the root is level 1).
    pub fn parse(text: &'a str, levels: usize) -> Option<Sketch<'a>> {
        Reading::deep(levels).parse(text).ok()
    }

    /// As [`Sketch::parse`], keeping only the object members whose name
    /// `keep` accepts; the others are skipped unread (still checked to be
    /// JSON).
    pub fn parse_keeping(
        text: &'a str,
        levels: usize,
        keep: fn(&str) -> bool,
    ) -> Option<Sketch<'a>> {
        Reading {
            keep,
            ..Reading::deep(levels)
        }
        .parse(text)
        .ok()
    }

    /// A member; the last one wins when repeats were allowed.
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

    pub fn as_array(&self) -> Option<&[Sketch<'a>]> {
        match self {
            Sketch::Arr(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Sketch::Num(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Sketch::Obj(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Sketch::Null)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl<'de> DeserializeSeed<'de> for Reading {
    type Value = Sketch<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Sketch<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reading {
    type Value = Sketch<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Num(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Num(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Sketch<'de>, E> {
        // JSON has no NaN or infinity, so this always holds a number.
        Ok(Number::from_f64(v).map_or(Sketch::Null, Sketch::Num))
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
        if self.levels <= 1 {
            // Skipped as raw text: serde_json reads that without recursing.
            while seq.next_element::<&RawValue>()?.is_some() {}
            return Ok(Sketch::Deep);
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.deeper())? {
            items.push(item);
        }
        Ok(Sketch::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sketch<'de>, A::Error> {
        if self.levels <= 1 {
            while map.next_entry::<IgnoredAny, &RawValue>()?.is_some() {}
            return Ok(Sketch::Deep);
        }
        let mut members: Vec<(Cow<'de, str>, Sketch<'de>)> = Vec::new();
        let mut names: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(Name(key)) = map.next_key::<Name<'de>>()? {
            if self.unique && repeats(&members, &mut names, &key) {
                return Err(serde::de::Error::custom(format!(
                    "member '{key}' appears twice"
                )));
            }
            if !(self.keep)(&key) {
                map.next_value::<&RawValue>()?;
                continue;
            }
            let value = map.next_value_seed(self.deeper())?;
            members.push((key, value));
        }
        Ok(Sketch::Obj(members))
    }
}

/// A member name, borrowed from the input unless it has escapes. (serde's
/// own `Cow<str>` always copies: one allocation per member read.)
pub(crate) struct Name<'de>(pub(crate) Cow<'de, str>);

/// A string member, borrowed as [`Name`] is (`serde(deserialize_with)`;
/// `serde(borrow)` does not reach a `Cow` inside an `Option`).
pub(crate) fn borrowed_str<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'de, str>>, D::Error> {
    Name::deserialize(d).map(|name| Some(name.0))
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl<'de> Visitor<'de> for NameVisitor {
    type Value = Name<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Name<'de>, E> {
        Ok(Name(Cow::Owned(v.to_owned())))
    }
}

/// Whether `key` was already read in this object (and notes it). Small
/// objects are scanned; a large one gets a set, so that a client cannot make
/// the check quadratic. Members that were skipped unread are not in
/// `members`, so readings that skip some must not be `unique`.
#[allow(clippy::ptr_arg)] // the `Cow` itself goes into the set: a borrowed name stays borrowed
fn repeats<'de>(
    members: &[(Cow<'de, str>, Sketch<'de>)],
    names: &mut Option<HashSet<Cow<'de, str>>>,
    key: &Cow<'de, str>,
) -> bool {
    if names.is_none() && members.len() < SCAN_LIMIT {
        return members.iter().any(|(k, _)| k == key);
    }
    let set = names.get_or_insert_with(|| members.iter().map(|(k, _)| k.clone()).collect());
    !set.insert(key.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_borrowed_strings_and_stops_at_the_limit() {
        let s = Sketch::parse(r#"{"a":{"b":"x","c":[1,{"d":2}]},"e":null}"#, 3).unwrap();
        let a = s.get("a").unwrap();
        assert!(matches!(a.get("b"), Some(Sketch::Str(Cow::Borrowed("x")))));
        assert_eq!(a.get("c"), Some(&Sketch::Deep), "level 3 container skipped");
        assert_eq!(s.get("e"), Some(&Sketch::Null));
        assert!(s.has("e") && !s.has("f"));
    }

    #[test]
    fn scalars_are_kept() {
        let s = Sketch::parse(r#"{"n":3,"m":-1,"f":1.5,"t":true}"#, 2).unwrap();
        assert_eq!(s.get("n").and_then(Sketch::as_u64), Some(3));
        assert_eq!(s.get("m").and_then(Sketch::as_u64), None);
        assert_eq!(
            s.get("f"),
            Some(&Sketch::Num(Number::from_f64(1.5).unwrap()))
        );
        assert_eq!(s.get("t"), Some(&Sketch::Bool(true)));
    }

    #[test]
    fn escaped_strings_are_decoded_and_the_last_duplicate_wins() {
        let s = Sketch::parse(r#"{"k":"a\"b","k":"c\u00e9"}"#, 2).unwrap();
        assert_eq!(s.get("k").and_then(Sketch::as_str), Some("cé"));
    }

    #[test]
    fn names_are_borrowed_unless_escaped() {
        let s = Sketch::parse(r#"{"plain":1,"e\u0073c":2}"#, 2).unwrap();
        let Sketch::Obj(members) = &s else {
            panic!("an object: {s:?}")
        };
        assert!(matches!(members[0].0, Cow::Borrowed("plain")));
        assert!(matches!(&members[1].0, Cow::Owned(name) if name == "esc"));
    }

    #[test]
    fn a_unique_reading_refuses_repeats_at_the_levels_it_keeps() {
        let unique = Reading {
            unique: true,
            ..Reading::deep(3)
        };
        let err = unique.parse(r#"{"a":{"k":1,"k":2}}"#).unwrap_err();
        assert!(
            err.to_string().contains("member 'k' appears twice"),
            "{err}"
        );
        let escaped = unique.parse(r#"{"k":1,"\u006b":2}"#).unwrap_err();
        assert!(escaped.to_string().contains("appears twice"), "{escaped}");
        // Below the limit, repeats are the agent's business.
        assert!(unique.parse(r#"{"a":{"b":{"k":1,"k":2}}}"#).is_ok());
    }

    #[test]
    fn repeats_are_found_in_large_objects_too() {
        let unique = Reading {
            unique: true,
            ..Reading::deep(2)
        };
        let members: Vec<String> = (0..200).map(|i| format!("\"m{i}\":{i}")).collect();
        let distinct = format!("{{{}}}", members.join(","));
        assert_eq!(
            unique
                .parse(&distinct)
                .unwrap()
                .get("m199")
                .and_then(Sketch::as_u64),
            Some(199)
        );
        for late in [3, 100, 199] {
            let repeated = format!("{{{},\"m{late}\":0}}", members.join(","));
            assert!(unique.parse(&repeated).is_err(), "m{late} repeated");
        }
    }

    #[test]
    fn deep_data_below_the_limit_is_read_without_a_nesting_limit() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(1000), "]".repeat(1000));
        assert_eq!(
            Sketch::parse(&deep, 2).unwrap().get("a"),
            Some(&Sketch::Deep)
        );
        let broken = format!("{{\"a\":{}1{}}}", "[".repeat(10), "]".repeat(9));
        assert_eq!(Sketch::parse(&broken, 2), None);
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
