//! The common case in one pass over the body: a well-formed request object
//! whose envelope and params are read together. Reading the envelope first
//! (with params as raw text) and then the params scanned a large message
//! twice; for a 64 KiB `message/send` the two passes were ~29 % of the
//! gateway's CPU.
//!
//! Anything unusual (leading whitespace, a batch, a wrong member, params that
//! are not an object, deep duplicates, bad UTF-8) makes [`read`] give up, and
//! the caller takes the two-pass path, which names the problem exactly as
//! before. So the fast path only changes how a valid request is read, never
//! what any request is answered.

use std::borrow::Cow;
use std::fmt;

use bumpalo::Bump;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::jsonrpc;
use super::params;
use super::Method;
use crate::sketch::{Name, Sketch};

/// The members of a request object, each read at most once.
#[derive(Default)]
pub(super) struct Whole<'a> {
    /// The member's text, as the document has it.
    pub(super) jsonrpc: Option<&'a str>,
    pub(super) id: Option<&'a RawValue>,
    pub(super) method: Option<Cow<'a, str>>,
    pub(super) params: Option<Sketch<'a>>,
}

/// Reads a [`Whole`] from an object (anything else fails the reading).
/// Written out rather than derived, so that the params reading can be given
/// the document it reads from (see `crate::sketch::Plain`).
struct WholeOf<'s> {
    source: &'s str,
    arena: &'s Bump,
}

impl<'de, 's: 'de> DeserializeSeed<'de> for WholeOf<'s> {
    type Value = Whole<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Whole<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 's: 'de> Visitor<'de> for WholeOf<'s> {
    type Value = Whole<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Whole<'de>, A::Error> {
        let mut whole = Whole::default();
        while let Some(Name(key)) = map.next_key::<Name<'de>>()? {
            let repeated = match &*key {
                "jsonrpc" => {
                    let raw: &RawValue = map.next_value()?;
                    whole.jsonrpc.replace(raw.get()).is_some()
                }
                "id" => whole.id.replace(map.next_value()?).is_some(),
                "method" => {
                    let Name(method) = map.next_value()?;
                    whole.method.replace(method).is_some()
                }
                "params" => {
                    let reading = params::member_reading(self.source).within(self.arena);
                    whole
                        .params
                        .replace(map.next_value_seed(reading)?)
                        .is_some()
                }
                _ => map.next_value::<IgnoredAny>().map(|_| false)?,
            };
            if repeated {
                return Err(A::Error::custom(format!("member '{key}' appears twice")));
            }
        }
        Ok(whole)
    }
}

/// A request's envelope, with its params either already read (one pass) or
/// still raw (the two-pass path).
pub struct Request<'a> {
    /// `None` for a notification (no `id` member at all).
    pub id: Option<&'a RawValue>,
    pub method: Cow<'a, str>,
    pub params: Params<'a>,
}

pub enum Params<'a> {
    Read(Option<Sketch<'a>>),
    Raw(Option<&'a RawValue>),
}

impl<'a> Params<'a> {
    /// The method's params checks (see [`params::validate`]); raw params
    /// are read into `arena`.
    pub fn validate(self, method: &Method, arena: &'a Bump) -> Result<Option<Sketch<'a>>, String> {
        match self {
            Params::Read(read) => params::check_read(method, read),
            Params::Raw(raw) => params::validate(method, raw, arena),
        }
    }
}

/// Reads a request object: in one pass when it is well formed, else through
/// [`jsonrpc::parse`], whose error is returned unchanged. What the params
/// reading builds is kept in `arena`.
pub fn parse<'a>(
    body: &'a [u8],
    arena: &'a Bump,
) -> Result<Request<'a>, jsonrpc::EnvelopeError<'a>> {
    if let Some(request) = read(body, arena) {
        return Ok(request);
    }
    let envelope = jsonrpc::parse(body)?;
    Ok(Request {
        id: envelope.id,
        method: envelope.method,
        params: Params::Raw(envelope.params),
    })
}

/// The one-pass read, or `None` to take the two-pass path.
fn read<'a>(body: &'a [u8], arena: &'a Bump) -> Option<Request<'a>> {
    if body.first() != Some(&b'{') {
        return None;
    }
    // One check of the whole body is cheaper than serde_json's check of
    // each string it reads from bytes (bad UTF-8 takes the two-pass path).
    let text = crate::utf8::text(body)?;
    let whole = super::hand_read::whole(text, arena).or_else(|| serde_whole(text, arena))?;
    if whole.jsonrpc? != "\"2.0\"" {
        return None;
    }
    let id = jsonrpc::check_id(whole.id).ok()?;
    let params = match whole.params {
        // `"params": null` is read as absent, as on the two-pass path.
        None | Some(Sketch::Null) => None,
        Some(p @ Sketch::Obj(_)) => Some(p),
        Some(_) => return None,
    };
    Some(Request {
        id,
        method: whole.method?,
        params: Params::Read(params),
    })
}

/// The reading through serde_json, for what the hand reader leaves to it
/// (see `super::hand_read`).
pub(super) fn serde_whole<'a>(text: &'a str, arena: &'a Bump) -> Option<Whole<'a>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let whole = WholeOf {
        source: text,
        arena,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(whole)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::a2a::methods::lookup;

    /// What a reading decides: the id's text, the method and the params
    /// checks' outcome, or the envelope error's code and message.
    type Reading = Result<
        (
            Option<String>,
            String,
            Result<Option<Sketch<'static>>, String>,
        ),
        String,
    >;

    /// An arena for a reading that the test keeps (leaked).
    fn arena() -> &'static Bump {
        Box::leak(Box::default())
    }

    /// The two-pass path, as the proxy took it before the one-pass read.
    fn two_pass(body: &'static str) -> Reading {
        let env =
            jsonrpc::parse(body.as_bytes()).map_err(|e| format!("{} {}", e.code, e.message))?;
        let checked = match lookup(&env.method) {
            Some(m) => params::validate(m, env.params, arena()),
            None => Err("unknown method".into()),
        };
        Ok((
            env.id.map(|i| i.get().to_string()),
            env.method.into_owned(),
            checked,
        ))
    }

    fn combined(body: &'static str) -> Reading {
        let r = parse(body.as_bytes(), arena()).map_err(|e| format!("{} {}", e.code, e.message))?;
        let checked = match lookup(&r.method) {
            Some(m) => r.params.validate(m, arena()),
            None => Err("unknown method".into()),
        };
        Ok((
            r.id.map(|i| i.get().to_string()),
            r.method.into_owned(),
            checked,
        ))
    }

    /// Read in one pass (some are then refused by the method's checks).
    pub(in crate::a2a) const ONE_PASS: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi \"there\" \u00e9"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":"a\"b","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":1.5e3,"method":"tasks/send","params":{"id":"t1","message":{"role":"user","parts":[{"type":"text","text":"x"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"t1","historyLength":2}}"#,
        r#"{"jsonrpc":"2.0","method":"tasks/cancel","params":{"id":"t1"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ListTasks","params":null}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ListTasks"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":""}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"no/such","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/\u0067et","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"}} "#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t","deep":[[[[[[[[1,{"a":1,"a":2}]]]]]]]]}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"},"extra":true}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"m","role":"robot","parts":[{}]}}}"#,
        // Long strings read plain (no control byte in the body).
        r#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"two\nlines \u00e9 \ud83d\ude00"},{"kind":"file","file":{"bytes":"aGk=","name":"a.txt"}}]}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"aGk=","mediaType":"text/plain"},{"text":"é"}]}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":["not","a","string"]}]}}}"#,
        // Pretty-printed: read strictly, still in one pass.
        "{\"jsonrpc\": \"2.0\",\n \"id\": 3,\n \"method\": \"message/send\",\n \"params\": {\"message\": {\"messageId\": \"m\", \"role\": \"user\", \"parts\": [{\"text\": \"t\"}]}}\n}",
    ];

    /// Left to the two-pass path, which names what is wrong.
    pub(in crate::a2a) const TWO_PASS: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":[1,2]}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"a","id":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"no/such","params":{"a":1,"a":2}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":5,"params":{"id":"t"}}"#,
        r#"{"jsonrpc":"1.0","id":7,"method":"tasks/get","params":{"id":"t"}}"#,
        r#"{"id":7,"method":"tasks/get","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"tasks/get","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tasks/get","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"},"params":{"id":"u"}}"#,
        r#" {"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"}}x"#,
        r#"[{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t"}}]"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"t""#,
        r#"{}"#,
        // A raw control byte in a string: not JSON.
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"message/send\",\"params\":{\"message\":{\"messageId\":\"m\",\"role\":\"user\",\"parts\":[{\"text\":\"a\tb\"}]}}}",
        // A lone surrogate: refused whether read plain or strictly.
        r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"text":"\ud800"}]}}}"#,
        // A name read plain that holds neither a string nor an array.
        r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"text":5}]}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"text":"x"}],"metadata":{"raw":{"k":1}}}}}"#,
    ];

    #[test]
    fn every_body_is_answered_as_the_two_pass_path_answers_it() {
        for body in ONE_PASS.iter().chain(TWO_PASS) {
            assert_eq!(combined(body), two_pass(body), "{body}");
        }
    }

    #[test]
    fn well_formed_objects_take_the_one_pass_path() {
        for body in ONE_PASS {
            let arena = Bump::new();
            let r = read(body.as_bytes(), &arena)
                .unwrap_or_else(|| panic!("not read in one pass: {body}"));
            assert!(matches!(r.params, Params::Read(_)), "{body}");
        }
    }

    #[test]
    fn anything_unusual_takes_the_two_pass_path() {
        for body in TWO_PASS {
            assert!(
                read(body.as_bytes(), &Bump::new()).is_none(),
                "read in one pass: {body}"
            );
        }
    }
}
