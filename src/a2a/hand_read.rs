//! The one-pass reading of a request object, written by hand on
//! [`Cursor`].
//!
//! serde_json read a 1 KiB `message/send` in ~6,400 instructions, most of
//! them its cost per token, not per byte (bench/profile.md). This reader
//! builds the same [`Whole`] the serde reading builds, with the same params
//! [`Sketch`], in one walk over the bytes. What it does not read exactly as
//! the serde reading does makes it give up with `None`, and the serde
//! reading decides as before: what the cursor gives up on (see
//! `crate::json_cursor`), and an object of more than 16 members at the
//! checked levels (the serde reading checks repeats with a set there). So
//! it never decides how a request is answered, only how fast a request the
//! serde reading accepts is read; the tests hold it to that.

use bumpalo::Bump;
use serde_json::value::RawValue;
use serde_json::Number;

use super::one_pass::Whole;
use super::params;
use crate::json_cursor::Cursor;
use crate::sketch::{items, kept, members, Sketch};

/// Objects at the checked levels with more members than this are left to
/// the serde reading: checking each name against every earlier one would
/// be quadratic in a hostile request.
const MAX_SCANNED_MEMBERS: usize = 16;

/// Reads a request object, or `None` to leave it to the serde reading;
/// the params' containers are kept in `arena`.
pub(super) fn whole<'a>(text: &'a str, arena: &'a Bump) -> Option<Whole<'a>> {
    let mut c = Cursor::new(text);
    let mut whole = Whole::default();
    c.object(|c, name| {
        let repeated = match name {
            "jsonrpc" => whole.jsonrpc.replace(c.raw()?).is_some(),
            "id" => {
                let id = serde_json::from_str::<&RawValue>(c.raw()?).ok()?;
                whole.id.replace(id).is_some()
            }
            "method" => whole.method.replace(c.string()?).is_some(),
            "params" => {
                let read = value(c, params::INSPECTED.levels, arena)?;
                whole.params.replace(read).is_some()
            }
            _ => c.skip().map(|()| false)?,
        };
        (!repeated).then_some(())
    })?;
    c.end()?;
    Some(whole)
}

/// A value read as the params reading reads it (`crate::sketch`):
/// containers `levels` deep, deeper ones skipped and marked.
fn value<'a>(c: &mut Cursor<'a>, levels: usize, arena: &'a Bump) -> Option<Sketch<'a>> {
    match c.peek()? {
        b'"' => c.string().map(|s| Sketch::Str(kept(arena, s))),
        b'{' | b'[' if levels <= 1 => c.skip().map(|()| Sketch::Deep),
        b'{' => object(c, levels, arena),
        b'[' => {
            let mut items = items(arena);
            c.array(|c| {
                items.push(value(c, levels - 1, arena)?);
                Some(())
            })?;
            Some(Sketch::array(items))
        }
        b't' => c.word(b"true").map(|()| Sketch::Bool(true)),
        b'f' => c.word(b"false").map(|()| Sketch::Bool(false)),
        b'n' => c.word(b"null").map(|()| Sketch::Null),
        b'-' | b'0'..=b'9' => number(c.number()?).map(Sketch::Num),
        _ => None,
    }
}

fn object<'a>(c: &mut Cursor<'a>, levels: usize, arena: &'a Bump) -> Option<Sketch<'a>> {
    let plain = c.plain();
    let mut members = members(arena);
    c.object(|c, name| {
        // A repeated name is refused by the serde reading.
        if members.len() >= MAX_SCANNED_MEMBERS || members.iter().any(|(k, _)| *k == name) {
            return None;
        }
        // Where the serde reading reads long texts plain, it accepts only
        // a string or an array under their names.
        if plain && params::long_text(name) && !matches!(c.peek()?, b'"' | b'[') {
            return None;
        }
        members.push((name, value(c, levels - 1, arena)?));
        Some(())
    })?;
    Some(Sketch::object(members))
}

/// A number's value as serde_json reads it: plain non-negative integers
/// here (the grammar has been checked, so a `u64` parse succeeds on digits
/// alone, as serde_json's `visit_u64` has them), anything else (signs,
/// fractions, exponents, past `u64`) by serde_json itself.
fn number(text: &str) -> Option<Number> {
    match text.parse::<u64>() {
        Ok(n) => Some(n.into()),
        Err(_) => serde_json::from_str(text).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::one_pass::serde_whole;
    use crate::json_cursor::arbitrary::{cut, doc, rendered, space, Doc};
    use proptest::prelude::*;

    const NAMES: &[&str] = &[
        "jsonrpc",
        "id",
        "method",
        "params",
        "message",
        "parts",
        "text",
        "kind",
        "role",
        "messageId",
        "raw",
        "bytes",
        "metadata",
        "file",
        "a",
        "b",
        "x\\u0041",
    ];

    /// The serde reading's outcome when the hand reader reads `text`: the
    /// two must agree on everything they build.
    fn agrees(text: &str) -> Result<bool, String> {
        let arena = Bump::new();
        let Some(hand) = whole(text, &arena) else {
            return Ok(false);
        };
        let serde = serde_whole(text, &arena)
            .ok_or_else(|| format!("the hand reader read what serde refuses: {text:?}"))?;
        let seen = |w: &Whole<'_>| {
            (
                w.jsonrpc.map(str::to_owned),
                w.id.map(|id| id.get().to_owned()),
                w.method.as_deref().map(str::to_owned),
                format!("{:?}", w.params),
            )
        };
        if seen(&hand) != seen(&serde) {
            return Err(format!(
                "{text:?}: hand {:?} serde {:?}",
                seen(&hand),
                seen(&serde)
            ));
        }
        if hand.params != serde.params {
            return Err(format!("{text:?}: params differ"));
        }
        Ok(true)
    }

    fn read_by_hand(text: &str) {
        assert_eq!(agrees(text), Ok(true), "{text}");
    }

    #[test]
    fn requests_as_clients_send_them_are_read_by_hand() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi \"there\" \u00e9 \/ \\ \b\f\n\r\t"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"},"extra":{"x":[true,false,null,-0.5E-3,{}],"y":[]}}"#,
            r#"{"jsonrpc":"2.0","id":-42,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","name":"a.txt","mimeType":"text/plain"}},{"kind":"data","data":{"n":18446744073709551616,"f":0.1,"neg":-7,"deep":{"k":[1]}}}],"metadata":{"skillId":"s"}},"configuration":{"blocking":true,"acceptedOutputModes":["text/plain"]}}}"#,
            "{\"jsonrpc\": \"2.0\",\n \"id\": 3,\n \"method\": \"message/send\",\n \"params\": {\"message\": {\"messageId\": \"m\", \"role\": \"user\", \"parts\": [{\"text\": \"t\"}]}}\n}\r\n",
            "{ }",
            // As Python's json.dumps writes it: ", " and ": ", and every
            // character past ASCII escaped (an emoji as a surrogate pair).
            r#"{"jsonrpc": "2.0", "id": "r-1", "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "caf\u00e9 \ud83d\ude00 \u4e2d"}]}}}"#,
        ] {
            read_by_hand(text);
        }
        // The one-pass reading's own cases: all are read by hand, and none
        // is read differently.
        for text in crate::a2a::one_pass::tests::ONE_PASS {
            assert_eq!(agrees(text), Ok(true), "{text}");
        }
        for text in crate::a2a::one_pass::tests::TWO_PASS {
            let by_hand = agrees(text);
            assert!(by_hand.is_ok(), "{by_hand:?}");
        }
    }

    #[test]
    fn the_rarer_shapes_are_left_to_serde() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{{"id":"t"}},"x":{}1{}}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        let wide = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{{"id":"t",{}}}}}"#,
            (0..16)
                .map(|i| format!(r#""k{i}":{i}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        for text in [
            deep.as_str(),
            wide.as_str(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","p\u0061rams":{"id":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"},"x":"\ud800"}"#,
        ] {
            assert_eq!(whole(text, &Bump::new()).map(|_| ()), None, "{text}");
            assert!(
                serde_whole(text, &Bump::new()).is_some(),
                "serde reads it: {text}"
            );
        }
        // Not JSON, or not what the serde reading accepts: refused by both.
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"},}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"tasks/get"}"#,
            r#"{"jsonrpc":"2.0","id":1.,"method":"tasks/get"}"#,
            r#"{"jsonrpc":"2.0","id":-,"method":"tasks/get"}"#,
            r#"{"jsonrpc":"2.0","id":1e,"method":"tasks/get"}"#,
            r#"{"jsonrpc":"2.0","id":1e400,"method":"tasks/get","params":{"n":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","id":"u"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","x":[1,2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","x":{"a" 1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","x":tru}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","x":"\x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","x":"\u12"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","parts":[{"text":"\ud83d"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get"} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"text":5}]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"metadata":{"raw":{"k":1}}}}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"params\":{\"id\":\"a\tb\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tasks/get\",\"x\":\"a\nb\"}",
        ] {
            assert_eq!(whole(text, &Bump::new()).map(|_| ()), None, "{text}");
            assert!(
                serde_whole(text, &Bump::new()).is_none(),
                "serde refuses it too: {text}"
            );
        }
    }

    /// A request object around `params` and `extra`, rendered with the
    /// given whitespace, then one byte cut or put in at `cut` (if any).
    fn request(
        params: &Doc,
        extra: &[(&'static str, Doc)],
        space: &[&'static str],
        cut: Option<(usize, u8)>,
    ) -> String {
        let mut members = vec![
            ("jsonrpc", Doc::Atom("\"2.0\"")),
            ("id", Doc::Atom("7")),
            ("method", Doc::Str(vec!["message/send"])),
            ("params", params.clone()),
        ];
        members.extend(extra.iter().cloned());
        rendered(&Doc::Obj(members), space, cut)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn whatever_the_hand_reader_reads_serde_reads_the_same(
            params in doc(NAMES),
            extra in prop::collection::vec((prop::sample::select(NAMES), doc(NAMES)), 0..3),
            space in space(),
            cut in cut(),
        ) {
            let text = request(&params, &extra, &space, cut);
            if let Err(e) = agrees(&text) {
                prop_assert!(false, "{}", e);
            }
        }
    }
}
