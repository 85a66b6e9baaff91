//! A cursor over a JSON document, for the readers written by hand
//! (`a2a::hand_read` for requests, `routing::answer_by_hand` for answers).
//!
//! serde_json reads through generic visitor calls, a few of them per token;
//! for the small documents of a proxied call that per-token cost, not the
//! bytes, is most of the reading (bench/profile.md). A reader on this cursor
//! walks the bytes once, builds only what it keeps, and gives up (`None`)
//! on whatever it does not read exactly as serde_json does; its caller then
//! reads the document through serde_json, which has the last word. Given up
//! on here, so serde_json decides:
//! - a member name with an escape;
//! - a `\u` escape of a lone UTF-16 surrogate (serde_json refuses one where
//!   it reads a string and lets it through where it skips one); a pair is
//!   read as the one character it stands for;
//! - skipped data nested deeper than [`MAX_SKIP_DEPTH`].
//!
//! Whatever it accepts is JSON, checked as serde_json checks what it skips:
//! strings without control bytes and with valid escapes, numbers as the
//! grammar has them, no trailing commas.

use std::borrow::Cow;

use crate::sketch::control_free;

/// Skipped data nested deeper than this is left to serde_json (which has no
/// limit there); the open containers are a stack of bits in one `u64`.
pub const MAX_SKIP_DEPTH: u32 = 64;

pub struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    /// The document has no control byte, so none of its strings can: a
    /// string's end is found without looking at its bytes for one.
    plain: bool,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            at: 0,
            plain: control_free(text.as_bytes()),
        }
    }

    /// Whether the document has no control byte (see `crate::sketch::Plain`).
    pub fn plain(&self) -> bool {
        self.plain
    }

    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace, as serde_json skips it.
    pub fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Only whitespace is left: the document is one value.
    pub fn end(mut self) -> Option<()> {
        self.ws();
        (self.at == self.bytes.len()).then_some(())
    }

    /// Reads an object's members, the cursor at its `{`: `member` is given
    /// each name and must read (or skip) its value.
    pub fn object<F>(&mut self, mut member: F) -> Option<()>
    where
        F: FnMut(&mut Self, &'a str) -> Option<()>,
    {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.ws();
            self.eat(b'"')?;
            let name = self.name()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, name)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Reads an array's items, the cursor at its `[`: `item` must read (or
    /// skip) each one.
    pub fn array<F>(&mut self, mut item: F) -> Option<()>
    where
        F: FnMut(&mut Self) -> Option<()>,
    {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// `true`, `false` or `null`, the cursor at its first letter.
    pub fn word(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A number's text, checked against JSON's grammar: `-`, then `0` or a
    /// digit that is not zero and more digits, a fraction, an exponent.
    pub fn number(&mut self) -> Option<&'a str> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digit()?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.digit()?;
            self.digits();
        }
        self.text.get(start..self.at)
    }

    fn digit(&mut self) -> Option<()> {
        self.next()?.is_ascii_digit().then_some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// Where the next `"` or `\` is, from `from`; `None` when there is none
    /// or a control byte comes first (not JSON inside a string).
    fn special(&self, from: usize) -> Option<usize> {
        let rest = self.bytes.get(from..)?;
        let n = quote_or_backslash(rest)?;
        if !self.plain && !control_free(&rest[..n]) {
            return None;
        }
        Some(from + n)
    }

    /// A member name without escapes, the cursor just past its opening
    /// quote.
    fn name(&mut self) -> Option<&'a str> {
        let start = self.at;
        let end = self.special(start)?;
        if self.bytes[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        self.text.get(start..end)
    }

    /// A string's text with its escapes decoded, the cursor at its opening
    /// quote: borrowed from the document when it has no escape.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let mut end = self.special(start)?;
        if self.bytes[end] == b'"' {
            self.at = end + 1;
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        let mut owned = String::with_capacity(end - start + 8);
        let mut from = start;
        loop {
            owned.push_str(self.text.get(from..end)?);
            self.at = end + 1;
            if self.bytes[end] == b'"' {
                return Some(Cow::Owned(owned));
            }
            owned.push(self.escape()?);
            from = self.at;
            end = self.special(from)?;
        }
    }

    /// Past a string, the cursor just past its opening quote.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            let end = self.special(self.at)?;
            self.at = end + 1;
            if self.bytes[end] == b'"' {
                return Some(());
            }
            self.escape()?;
        }
    }

    /// The character an escape stands for, the cursor just past its `\`.
    /// A UTF-16 surrogate pair (`\ud83d\ude00`, as `json.dumps` writes
    /// what is beyond the BMP) is one character; a lone surrogate is given
    /// up on (serde_json refuses it where it reads a string and lets it
    /// through where it skips one).
    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                if !(0xD800..0xDC00).contains(&unit) {
                    // A trailing surrogate alone is no `char`: refused here.
                    return char::from_u32(unit);
                }
                if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                    return None;
                }
                self.at += 2;
                let low = self.hex4()?;
                if !(0xDC00..0xE000).contains(&low) {
                    return None;
                }
                char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
            }
            _ => return None,
        })
    }

    /// Four hex digits, as a UTF-16 code unit.
    fn hex4(&mut self) -> Option<u32> {
        let hex = self.text.get(self.at..self.at + 4)?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        self.at += 4;
        u32::from_str_radix(hex, 16).ok()
    }

    /// A value's own text (no whitespace around it), checked to be JSON.
    pub fn raw(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.skip()?;
        self.text.get(start..self.at)
    }

    /// Past one value, checked to be JSON, without building anything. The
    /// open containers are a stack of bits (1: an object), so skipping
    /// allocates nothing and does not recurse.
    pub fn skip(&mut self) -> Option<()> {
        let mut open: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            // At a value.
            self.ws();
            match self.next()? {
                b'"' => self.skip_string()?,
                c @ (b'{' | b'[') => {
                    if depth == MAX_SKIP_DEPTH {
                        return None;
                    }
                    let object = c == b'{';
                    self.ws();
                    if self.peek()? == if object { b'}' } else { b']' } {
                        self.at += 1;
                    } else {
                        open = open << 1 | u64::from(object);
                        depth += 1;
                        if object {
                            self.skip_name()?;
                        }
                        continue;
                    }
                }
                b't' => self.word(b"rue")?,
                b'f' => self.word(b"alse")?,
                b'n' => self.word(b"ull")?,
                b'-' | b'0'..=b'9' => {
                    self.at -= 1;
                    self.number()?;
                }
                _ => return None,
            }
            // After a value: close what it ends, or go on to the next one.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.ws();
                let in_object = open & 1 == 1;
                match self.next()? {
                    b',' => {
                        if in_object {
                            self.ws();
                            self.skip_name()?;
                        }
                        break;
                    }
                    b'}' if in_object => {}
                    b']' if !in_object => {}
                    _ => return None,
                }
                open >>= 1;
                depth -= 1;
            }
        }
    }

    /// Past a member name and its `:`, the cursor at the name's quote.
    fn skip_name(&mut self) -> Option<()> {
        self.eat(b'"')?;
        self.skip_string()?;
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }
}

/// The first `"` or `\` in `bytes`. Most strings in a call are short
/// (names, ids, roles, kinds), and memchr's setup cost more than finding
/// their end (~40 instructions a string, against ~10 for one 16-byte
/// compare, counted with callgrind), so the first 64 bytes are compared
/// here 16 at a time with SSE2, which every x86-64 CPU has; a longer text is
/// left to memchr.
#[cfg(target_arch = "x86_64")]
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    const LANES: usize = 16;
    const FIRST: usize = 64;
    let mut at = 0;
    while at + LANES <= bytes.len().min(FIRST) {
        // SAFETY: SSE2 is part of x86-64; the 16 bytes loaded are inside
        // `bytes` (checked just above), and the load needs no alignment.
        let hits = unsafe {
            let chunk = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
            let quote = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(chunk, _mm_set1_epi8(b'\\' as i8));
            _mm_movemask_epi8(_mm_or_si128(quote, backslash))
        };
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize);
        }
        at += LANES;
    }
    let rest = bytes.get(at..)?;
    let n = if at < FIRST {
        rest.iter().position(|&b| b == b'"' || b == b'\\')
    } else {
        memchr::memchr2(b'"', b'\\', rest)
    };
    n.map(|n| at + n)
}

#[cfg(not(target_arch = "x86_64"))]
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    memchr::memchr2(b'"', b'\\', bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_quote_or_backslash_at_every_offset_and_length() {
        for len in 0..200 {
            for at in 0..len {
                for special in [b'"', b'\\'] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    if at + 1 < len {
                        bytes[len - 1] = b'"';
                    }
                    assert_eq!(quote_or_backslash(&bytes), Some(at), "{len} {at}");
                }
            }
            assert_eq!(quote_or_backslash(&vec![b'a'; len]), None, "{len}");
        }
    }

    #[test]
    fn strings_are_read_with_their_escapes_decoded() {
        let text = r#""plain" "a\"b\\c\/d\b\f\n\r\t\u00e9\u0041\ud83d\ude00" "é😀""#;
        let mut c = Cursor::new(text);
        assert_eq!(c.string(), Some(Cow::Borrowed("plain")));
        c.ws();
        assert_eq!(c.string().as_deref(), Some("a\"b\\c/d\u{8}\u{c}\n\r\téA😀"));
        c.ws();
        assert!(matches!(c.string(), Some(Cow::Borrowed("é😀"))));
        assert_eq!(c.end(), Some(()));
    }

    #[test]
    fn what_is_skipped_is_checked_to_be_json() {
        let skips = |text: &str| {
            let mut c = Cursor::new(text);
            c.skip().and_then(|()| c.end()).is_some()
        };
        for good in [
            "0",
            "-0.5e+7",
            r#""s\n""#,
            "[]",
            "{}",
            r#"{"a":[1,{"b":null,"c":[true,false]}],"d":"e"}"#,
            " [ 1 , 2 ] ",
        ] {
            assert!(skips(good), "{good}");
        }
        for bad in [
            "",
            "01",
            "1.",
            "-",
            "1e",
            "+1",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "[1 2]",
            "{1:2}",
            "tru",
            "nulll",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\u{1}b\"",
            "[}",
            "{]",
            "[[]",
        ] {
            assert!(!skips(bad), "{bad:?}");
        }
        // JSON, but left to serde_json: lone surrogates.
        for lone in [
            r#""\ud800""#,
            r#""\ude00""#,
            r#""\ud83dx""#,
            r#""\ud83d\u0041""#,
        ] {
            assert!(!skips(lone), "{lone}");
        }
        assert!(skips(r#""\ud83d\ude00\uD83D\uDE00""#));
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(skips(&deep(MAX_SKIP_DEPTH as usize)));
        assert!(!skips(&deep(MAX_SKIP_DEPTH as usize + 1)));
    }
}

/// Generated JSON-like documents for the property tests of the readers
/// written on [`Cursor`]: their pieces are chosen to reach every branch of
/// those readers and of serde_json's, including text that is not JSON.
#[cfg(test)]
pub(crate) mod arbitrary {
    use proptest::prelude::*;

    /// A JSON-like document: its pieces are chosen to reach every branch of
    /// both readers, including text that is not JSON.
    #[derive(Debug, Clone)]
    pub enum Doc {
        Atom(&'static str),
        Str(Vec<&'static str>),
        Arr(Vec<Doc>),
        Obj(Vec<(&'static str, Doc)>),
    }

    const ATOMS: &[&str] = &[
        "0",
        "-0",
        "7",
        "42",
        "-3",
        "1.5",
        "1e3",
        "1E+2",
        "0.0e-1",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775809",
        "true",
        "false",
        "null",
        "\"2.0\"",
    ];
    /// Not JSON.
    const BAD_ATOMS: &[&str] = &["01", "1.", "-", "1e", "1e400", "nul", "+1"];
    const PIECES: &[&str] = &[
        "a",
        "text",
        "é",
        "😀",
        " ",
        "\\n",
        "\\\"",
        "\\\\",
        "\\/",
        "\\u00e9",
        "\\u0041",
        "\\ud83d\\ude00",
    ];
    /// Not JSON, or left to serde by the hand reader, or making the
    /// document one that is not plain.
    const ODD_PIECES: &[&str] = &[
        "\\ud800",
        "\\ude00",
        "\\ud83d\\u0041",
        "\\x",
        "\\u12",
        "\t",
        "\n",
        "\u{1}",
    ];
    const SPACE: &[&str] = &["", "", "", " ", "\n", "\t", "\r\n"];

    /// Documents whose member names come from `names`.
    pub fn doc(names: &'static [&'static str]) -> impl Strategy<Value = Doc> {
        let piece = prop_oneof![
            12 => prop::sample::select(PIECES),
            1 => prop::sample::select(ODD_PIECES),
        ];
        let leaf = prop_oneof![
            12 => prop::sample::select(ATOMS).prop_map(Doc::Atom),
            1 => prop::sample::select(BAD_ATOMS).prop_map(Doc::Atom),
            12 => prop::collection::vec(piece, 0..4).prop_map(Doc::Str),
        ];
        leaf.prop_recursive(9, 64, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Doc::Arr),
                prop::collection::vec((prop::sample::select(names), inner), 0..6)
                    .prop_map(Doc::Obj),
            ]
        })
    }

    fn gap(space: &mut impl Iterator<Item = &'static str>, out: &mut String) {
        out.push_str(space.next().unwrap_or(""));
    }

    pub fn render(doc: &Doc, space: &mut impl Iterator<Item = &'static str>, out: &mut String) {
        match doc {
            Doc::Atom(a) => out.push_str(a),
            Doc::Str(pieces) => {
                out.push('"');
                pieces.iter().for_each(|p| out.push_str(p));
                out.push('"');
            }
            Doc::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    gap(space, out);
                    if i > 0 {
                        out.push(',');
                        gap(space, out);
                    }
                    render(item, space, out);
                }
                gap(space, out);
                out.push(']');
            }
            Doc::Obj(members) => {
                out.push('{');
                for (i, (name, value)) in members.iter().enumerate() {
                    gap(space, out);
                    if i > 0 {
                        out.push(',');
                        gap(space, out);
                    }
                    out.push('"');
                    out.push_str(name);
                    out.push_str("\":");
                    gap(space, out);
                    render(value, space, out);
                }
                gap(space, out);
                out.push('}');
            }
        }
    }

    /// Whitespace to put between tokens, taken in turn.
    pub fn space() -> impl Strategy<Value = Vec<&'static str>> {
        prop::collection::vec(prop::sample::select(SPACE), 1..8)
    }

    /// Sometimes one byte to cut (`0`) or put in, at a position taken
    /// modulo the text's length.
    pub fn cut() -> impl Strategy<Value = Option<(usize, u8)>> {
        prop::option::weighted(
            0.2,
            (
                any::<usize>(),
                prop::sample::select(b"\0\"\\{}[],: 0-e".to_vec()),
            ),
        )
    }

    /// `doc` as text, with `space` between tokens and `cut` done.
    pub fn rendered(doc: &Doc, space: &[&'static str], cut: Option<(usize, u8)>) -> String {
        let mut text = String::new();
        render(doc, &mut space.iter().copied().cycle(), &mut text);
        let mut bytes = text.into_bytes();
        if let Some((at, b)) = cut {
            let at = at % (bytes.len() + 1);
            if b == 0 {
                bytes.remove(at.min(bytes.len() - 1));
            } else {
                bytes.insert(at, b);
            }
        }
        String::from_utf8(bytes).unwrap_or_default()
    }
}
