//! A borrowed, depth-limited reading of a JSON document: just enough
//! structure for the gateway's own questions (is `params.message.role` a
//! string, which task does an answer name). Strings without escapes are
//! borrowed from the input; containers, and the rare string with escapes,
//! are kept in an arena the caller owns ([`Bump`]), so a reading is usually
//! one allocation, has nothing to free piece by piece, and never copies a
//! message's text. Anything deeper than the limit is skipped, not built, and
//! so is every member whose name the reader said it will not ask for.
//! Skipped text is still checked to be JSON, with no limit on its nesting:
//! the agent gets the original bytes, and deep data is the agent's business.

use std::borrow::Cow;
use std::collections::HashSet;

use bumpalo::Bump;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Number;

/// A value as read. Nothing in it owns memory (its slices are in the
/// document or in the reading's arena), so dropping one costs nothing: a
/// tree of `Vec`s cost ~1,200 instructions a call to free (bench/profile.md).
#[derive(Debug, PartialEq)]
pub enum Sketch<'a> {
    Str(&'a str),
    Obj(&'a [(&'a str, Sketch<'a>)]),
    Arr(&'a [Sketch<'a>]),
    Num(Number),
    Bool(bool),
    Null,
    /// A container below the depth limit (read, not kept).
    Deep,
}

// Nothing to drop: a variant that owned memory would bring back the cost of
// freeing the tree.
const _: () = assert!(!std::mem::needs_drop::<Sketch<'static>>());

/// How to read a document: how deep, which members, whether a member name
/// may repeat within an object, and which strings are read plain.
#[derive(Clone, Copy)]
pub struct Reading<'s> {
    /// Containers are kept this many levels deep (the root is level 1).
    pub levels: usize,
    /// Object members whose name this refuses are skipped unread.
    pub keep: fn(&str) -> bool,
    /// Refuse an object that names a member twice. JSON leaves duplicates
    /// undefined; without this the last one wins, as in serde_json's `Value`.
    pub unique: bool,
    /// Long strings read without serde_json's check of every byte.
    pub plain: Option<Plain<'s>>,
}

/// Strings read plain: the members whose name `names` accepts, in a document
/// known to be UTF-8 with no control byte anywhere, so that none of its
/// strings can hold one. serde_json then finds a string's end with `memchr`
/// instead of testing every 8 bytes for a control character; for a 64 KiB
/// `message/send` that test was 61 % of the gateway's instructions
/// (bench/profile.md). The reading is the same: the same text, the same
/// escapes decoded, the same documents refused.
#[derive(Clone, Copy)]
pub struct Plain<'s> {
    /// The whole document: a string without escapes is borrowed from it.
    source: &'s str,
    names: fn(&str) -> bool,
}

impl<'s> Plain<'s> {
    /// `None` when `source` has a control byte (a pretty-printed document,
    /// or a string holding one that the strict reading must refuse).
    pub fn of(source: &'s str, names: fn(&str) -> bool) -> Option<Self> {
        control_free(source.as_bytes()).then_some(Self { source, names })
    }
}

/// No byte below 0x20. The smallest byte, with no early exit: the compiler
/// then compares 16 bytes per instruction (0.22 instructions a byte against
/// 0.67 for an `any` over chunks, counted with callgrind), or 32 with AVX2.
pub(crate) fn control_free(bytes: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { least_avx2(bytes) } >= 0x20;
    }
    least(bytes) >= 0x20
}

#[inline(always)]
fn least(bytes: &[u8]) -> u8 {
    bytes.iter().fold(u8::MAX, |least, &b| least.min(b))
}

/// [`least`] compiled for AVX2; the build's baseline is SSE2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn least_avx2(bytes: &[u8]) -> u8 {
    least(bytes)
}

/// Objects with more members than this check names for repeats with a set
/// rather than by scanning the members read so far.
const SCAN_LIMIT: usize = 16;

impl<'s> Reading<'s> {
    /// Every member, `levels` deep, repeats allowed.
    pub fn deep(levels: usize) -> Self {
        Self {
            levels,
            keep: |_| true,
            unique: false,
            plain: None,
        }
    }

    /// Reads all of `text` (nothing may follow the value), keeping its
    /// containers in `arena`.
    pub fn parse(self, text: &'s str, arena: &'s Bump) -> Result<Sketch<'s>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let sketch = self.within(arena).deserialize(&mut de)?;
        de.end()?;
        Ok(sketch)
    }

    /// This reading, keeping what it builds in `arena`.
    pub fn within(self, arena: &'s Bump) -> Reader<'s> {
        Reader { how: self, arena }
    }

    fn deeper(self) -> Self {
        Self {
            levels: self.levels - 1,
            ..self
        }
    }
}

/// A string kept for as long as the reading: borrowed stays borrowed, and
/// text with its escapes decoded is copied into the arena.
pub fn kept<'a>(arena: &'a Bump, text: Cow<'a, str>) -> &'a str {
    match text {
        Cow::Borrowed(text) => text,
        Cow::Owned(text) => arena.alloc_str(&text),
    }
}

/// Members of an object being read, built where they will stay: in the
/// arena, with room for a few (more moves them within it).
pub type Members<'a> = bumpalo::collections::Vec<'a, (&'a str, Sketch<'a>)>;

/// Items of an array being read (see [`Members`]).
pub type Items<'a> = bumpalo::collections::Vec<'a, Sketch<'a>>;

/// Room for this many members or items at first: most objects in A2A
/// params have a handful.
const FIRST_ROOM: usize = 4;

/// An empty object's members, in `arena`.
pub fn members(arena: &Bump) -> Members<'_> {
    Members::with_capacity_in(FIRST_ROOM, arena)
}

/// An empty array's items, in `arena`.
pub fn items(arena: &Bump) -> Items<'_> {
    Items::with_capacity_in(FIRST_ROOM, arena)
}

/// An arena with room for what a usual request's params reading builds
/// (~700 bytes for a `message/send`): one allocation, which glibc serves
/// from its per-thread cache (chunks up to 1 KiB).
pub fn arena() -> Bump {
    Bump::with_capacity(960)
}

impl<'a> Sketch<'a> {
    pub fn object(members: Members<'a>) -> Self {
        Sketch::Obj(members.into_bump_slice())
    }

    pub fn array(items: Items<'a>) -> Self {
        Sketch::Arr(items.into_bump_slice())
    }

    /// A member; the last one wins when repeats were allowed.
    pub fn get(&self, key: &str) -> Option<&Sketch<'a>> {
        match self {
            Sketch::Obj(members) => members
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v),
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

/// A [`Reading`] and the arena it keeps what it builds in.
#[derive(Clone, Copy)]
pub struct Reader<'s> {
    how: Reading<'s>,
    arena: &'s Bump,
}

impl<'s> Reader<'s> {
    fn deeper(self) -> Self {
        Self {
            how: self.how.deeper(),
            ..self
        }
    }
}

impl<'de, 's: 'de> DeserializeSeed<'de> for Reader<'s> {
    type Value = Sketch<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Sketch<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 's: 'de> Visitor<'de> for Reader<'s> {
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
        Ok(Sketch::Str(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Sketch<'de>, E> {
        Ok(Sketch::Str(self.arena.alloc_str(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sketch<'de>, A::Error> {
        if self.how.levels <= 1 {
            // Skipped as raw text: serde_json reads that without recursing.
            while seq.next_element::<&RawValue>()?.is_some() {}
            return Ok(Sketch::Deep);
        }
        let mut items = items(self.arena);
        while let Some(item) = seq.next_element_seed(self.deeper())? {
            items.push(item);
        }
        Ok(Sketch::array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sketch<'de>, A::Error> {
        let how = self.how;
        if how.levels <= 1 {
            while map.next_entry::<IgnoredAny, &RawValue>()?.is_some() {}
            return Ok(Sketch::Deep);
        }
        let mut members = members(self.arena);
        let mut names: Option<HashSet<&'de str>> = None;
        while let Some(Name(key)) = map.next_key::<Name<'de>>()? {
            let key = kept(self.arena, key);
            if how.unique && repeats(&members, &mut names, key) {
                return Err(serde::de::Error::custom(format!(
                    "member '{key}' appears twice"
                )));
            }
            if !(how.keep)(key) {
                map.next_value::<&RawValue>()?;
                continue;
            }
            let value = match how.plain {
                Some(plain) if (plain.names)(key) => map.next_value_seed(PlainText {
                    source: plain.source,
                    reader: self.deeper(),
                })?,
                _ => map.next_value_seed(self.deeper())?,
            };
            members.push((key, value));
        }
        Ok(Sketch::object(members))
    }
}

/// A member read plain (see [`Plain`]): serde_json's `deserialize_bytes`
/// gives a string's content with its escapes decoded and nothing checked,
/// and an array to `visit_seq`. Any other value fails the whole reading, so
/// only names that A2A gives to strings are read this way.
struct PlainText<'s> {
    source: &'s str,
    /// How an array under this name is read.
    reader: Reader<'s>,
}

impl<'de, 's: 'de> DeserializeSeed<'de> for PlainText<'s> {
    type Value = Sketch<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Sketch<'de>, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de, 's: 'de> Visitor<'de> for PlainText<'s> {
    type Value = Sketch<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string or an array")
    }

    /// No escapes: the bytes are the document's own, between two quotes, so
    /// the same span of `source` is UTF-8 and found without a new check.
    fn visit_borrowed_bytes<E: serde::de::Error>(self, v: &'de [u8]) -> Result<Sketch<'de>, E> {
        let source: &'de str = self.source;
        let start = (v.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        start
            .checked_add(v.len())
            .and_then(|end| source.get(start..end))
            .map(Sketch::Str)
            .ok_or_else(|| E::custom("a string outside the document"))
    }

    /// Escapes decoded. Unchecked decoding lets a lone surrogate through as
    /// WTF-8, which is not UTF-8: refused here as the strict reading does.
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Sketch<'de>, E> {
        std::str::from_utf8(v)
            .map(|text| Sketch::Str(self.reader.arena.alloc_str(text)))
            .map_err(|_| E::custom("a string with a lone surrogate"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Sketch<'de>, A::Error> {
        self.reader.visit_seq(seq)
    }
}

/// A member name, borrowed from the input unless it has escapes. (serde's
/// own `Cow<str>` always copies: one allocation per member read.)
pub(crate) struct Name<'de>(pub(crate) Cow<'de, str>);

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
fn repeats<'de>(
    members: &[(&'de str, Sketch<'de>)],
    names: &mut Option<HashSet<&'de str>>,
    key: &'de str,
) -> bool {
    if names.is_none() && members.len() < SCAN_LIMIT {
        return members.iter().any(|(k, _)| *k == key);
    }
    let set = names.get_or_insert_with(|| members.iter().map(|(k, _)| *k).collect());
    !set.insert(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arena for a test's readings, leaked so that they may outlive it.
    fn arena() -> &'static Bump {
        Box::leak(Box::default())
    }

    /// Reads `text` keeping containers `levels` deep (the root is level 1).
    fn parse(text: &str, levels: usize) -> Option<Sketch<'_>> {
        Reading::deep(levels).parse(text, arena()).ok()
    }

    /// As [`parse`], keeping only the object members whose name `keep`
    /// accepts; the others are skipped unread (still checked to be JSON).
    fn parse_keeping(text: &str, levels: usize, keep: fn(&str) -> bool) -> Option<Sketch<'_>> {
        Reading {
            keep,
            ..Reading::deep(levels)
        }
        .parse(text, arena())
        .ok()
    }

    /// Whether `part` lies inside `whole` (was borrowed from it).
    fn borrowed(whole: &str, part: &str) -> bool {
        whole.as_bytes().as_ptr_range().contains(&part.as_ptr())
    }

    #[test]
    fn reads_borrowed_strings_and_stops_at_the_limit() {
        let text = r#"{"a":{"b":"x","c":[1,{"d":2}]},"e":null}"#;
        let s = parse(text, 3).unwrap();
        let a = s.get("a").unwrap();
        assert!(matches!(a.get("b"), Some(Sketch::Str(x)) if *x == "x" && borrowed(text, x)));
        assert_eq!(a.get("c"), Some(&Sketch::Deep), "level 3 container skipped");
        assert_eq!(s.get("e"), Some(&Sketch::Null));
        assert!(s.has("e") && !s.has("f"));
    }

    #[test]
    fn scalars_are_kept() {
        let s = parse(r#"{"n":3,"m":-1,"f":1.5,"t":true}"#, 2).unwrap();
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
        let s = parse(r#"{"k":"a\"b","k":"c\u00e9"}"#, 2).unwrap();
        assert_eq!(s.get("k").and_then(Sketch::as_str), Some("cé"));
    }

    #[test]
    fn names_are_borrowed_unless_escaped() {
        let text = r#"{"plain":1,"e\u0073c":2}"#;
        let s = parse(text, 2).unwrap();
        let Sketch::Obj(members) = &s else {
            panic!("an object: {s:?}")
        };
        assert!(members[0].0 == "plain" && borrowed(text, members[0].0));
        assert!(members[1].0 == "esc" && !borrowed(text, members[1].0));
    }

    #[test]
    fn a_unique_reading_refuses_repeats_at_the_levels_it_keeps() {
        let unique = Reading {
            unique: true,
            ..Reading::deep(3)
        };
        let err = unique.parse(r#"{"a":{"k":1,"k":2}}"#, arena()).unwrap_err();
        assert!(
            err.to_string().contains("member 'k' appears twice"),
            "{err}"
        );
        let escaped = unique.parse(r#"{"k":1,"\u006b":2}"#, arena()).unwrap_err();
        assert!(escaped.to_string().contains("appears twice"), "{escaped}");
        // Below the limit, repeats are the agent's business.
        assert!(unique
            .parse(r#"{"a":{"b":{"k":1,"k":2}}}"#, arena())
            .is_ok());
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
                .parse(&distinct, arena())
                .unwrap()
                .get("m199")
                .and_then(Sketch::as_u64),
            Some(199)
        );
        for late in [3, 100, 199] {
            let repeated = format!("{{{},\"m{late}\":0}}", members.join(","));
            assert!(
                unique.parse(&repeated, arena()).is_err(),
                "m{late} repeated"
            );
        }
    }

    #[test]
    fn deep_data_below_the_limit_is_read_without_a_nesting_limit() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(1000), "]".repeat(1000));
        assert_eq!(parse(&deep, 2).unwrap().get("a"), Some(&Sketch::Deep));
        let broken = format!("{{\"a\":{}1{}}}", "[".repeat(10), "]".repeat(9));
        assert_eq!(parse(&broken, 2), None);
    }

    #[test]
    fn members_not_kept_are_skipped_at_every_level_but_still_checked() {
        let keep = |k: &str| k != "parts";
        let text = r#"{"parts":[1,2],"a":{"parts":{"x":1},"b":"y"}}"#;
        let s = parse_keeping(text, 4, keep).unwrap();
        assert!(!s.has("parts"));
        let a = s.get("a").unwrap();
        assert!(!a.has("parts"));
        assert_eq!(a.get("b").and_then(Sketch::as_str), Some("y"));
        let broken = r#"{"parts":[1,,2],"a":1}"#;
        assert_eq!(parse_keeping(broken, 4, keep), None);
    }

    fn texts(name: &str) -> bool {
        name == "text"
    }

    /// `text` read plain, when the document allows it.
    fn plain(source: &str) -> Option<Result<Sketch<'_>, serde_json::Error>> {
        let plain = Plain::of(source, texts)?;
        Some(
            Reading {
                plain: Some(plain),
                ..Reading::deep(6)
            }
            .parse(source, arena()),
        )
    }

    #[test]
    fn strings_read_plain_are_read_as_the_strict_reading_reads_them() {
        let documents = [
            r#"{"text":"hello"}"#,
            r#"{"text":""}"#,
            r#"{"parts":[{"kind":"text","text":"a \"quoted\" line\nand a tab\t"},{"text":"caf\u00e9 \ud83d\ude00 \/"}]}"#,
            r#"{"text":"é ü 😀 straight UTF-8"}"#,
            r#"{"text":["one",{"text":"two"},3]}"#,
            r#"{"other":"x","message":{"text":"y","n":1.5}}"#,
            r#"{"text":[[[[[[[["below the limit"]]]]]]]]}"#,
        ];
        for doc in documents {
            let read = plain(doc)
                .unwrap_or_else(|| panic!("no control bytes: {doc}"))
                .unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert_eq!(Some(read), parse(doc, 6), "{doc}");
        }
    }

    #[test]
    fn a_string_without_escapes_read_plain_is_borrowed() {
        let doc = r#"{"a":{"text":"long text"},"text":"x\ny"}"#;
        let s = plain(doc).unwrap().unwrap();
        assert!(matches!(
            s.get("a").and_then(|a| a.get("text")),
            Some(Sketch::Str(t)) if *t == "long text" && borrowed(doc, t)
        ));
        assert!(matches!(s.get("text"), Some(Sketch::Str(t)) if *t == "x\ny" && !borrowed(doc, t)));
    }

    #[test]
    fn a_document_with_a_control_byte_is_not_read_plain() {
        // Pretty-printed: whitespace outside strings is fine for the strict
        // reading, which then reads it.
        let pretty = "{\n  \"text\": \"x\"\n}";
        assert!(plain(pretty).is_none());
        assert!(parse(pretty, 3).is_some());
        // A raw tab inside a string: refused by the strict reading.
        let raw_tab = "{\"text\":\"a\tb\"}";
        assert!(plain(raw_tab).is_none());
        assert_eq!(parse(raw_tab, 3), None);
        assert!(control_free(&[0x20; 200]) && !control_free(&[[0x20; 130], [0x1f; 130]].concat()));
    }

    #[test]
    fn one_control_byte_anywhere_is_found_on_every_path() {
        assert!(control_free(b""));
        for len in [1, 15, 16, 31, 32, 33, 127, 128, 129, 1000] {
            assert!(control_free(&vec![b' '; len]), "{len}");
            for at in [0, len / 2, len - 1] {
                let mut bytes = vec![0xff; len];
                bytes[at] = 0x1f;
                assert!(!control_free(&bytes), "{len} {at}");
                assert_eq!(least(&bytes), 0x1f);
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: checked just above.
                    assert_eq!(unsafe { least_avx2(&bytes) }, 0x1f, "{len} {at}");
                }
            }
        }
    }

    #[test]
    fn what_the_strict_reading_refuses_the_plain_reading_refuses() {
        for doc in [
            r#"{"text":"\ud800"}"#,
            r#"{"text":"\udc00 trailing"}"#,
            r#"{"text":"\q"}"#,
            r#"{"text":"unterminated}"#,
            r#"{"text":"x"} trailing"#,
        ] {
            assert!(matches!(plain(doc), Some(Err(_))), "{doc}");
            assert_eq!(parse(doc, 6), None, "{doc}");
        }
    }

    #[test]
    fn a_plain_name_holding_an_object_or_a_scalar_fails_the_plain_reading() {
        // The strict reading keeps these; a caller falls back to it.
        for doc in [r#"{"text":{"a":1}}"#, r#"{"text":5}"#, r#"{"text":null}"#] {
            assert!(matches!(plain(doc), Some(Err(_))), "{doc}");
            assert!(parse(doc, 6).is_some(), "{doc}");
        }
    }

    #[test]
    fn invalid_or_trailing_text_is_nothing() {
        assert_eq!(parse("{\"a\":", 3), None);
        assert_eq!(parse("{} x", 3), None);
    }
}
