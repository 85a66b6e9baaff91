//! The JSON-RPC 2.0 envelope: parsing a request without re-serializing it, and
//! writing error responses that mirror the request id byte for byte.

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::a2a::model::borrowed::Borrowed;
use crate::a2a::model::one_pass;

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;
/// A2A codes the gateway itself answers with.
pub const TASK_NOT_FOUND: i32 = -32001;
pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i32 = -32003;
pub const UNSUPPORTED_OPERATION: i32 = -32004;
pub const CONTENT_TYPE_NOT_SUPPORTED: i32 = -32005;
pub const INVALID_AGENT_RESPONSE: i32 = -32006;
pub const EXTENDED_CARD_NOT_CONFIGURED: i32 = -32007;
pub const VERSION_NOT_SUPPORTED: i32 = -32009;

/// A parsed request. Borrowed from the body, so forwarding uses the original
/// bytes and nothing here is ever written back out.
#[derive(Debug)]
pub struct Envelope<'a> {
    /// `None` for a notification (no `id` member at all).
    pub id: Option<&'a RawValue>,
    pub method: Cow<'a, str>,
    pub params: Option<&'a RawValue>,
}

/// Why a body is not a usable JSON-RPC request. `id` is the request's id when
/// it could be read, so even this answer mirrors it.
#[derive(Debug)]
pub struct EnvelopeError<'a> {
    pub id: Option<&'a RawValue>,
    pub code: i32,
    pub message: String,
}

#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// `Option<&RawValue>` would turn an explicit `null` into `None`; a present
/// member must stay present (`"id": null` is not a notification).
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Parses one JSON-RPC request object. Batches are refused here: A2A defines
/// no batch semantics and a batch cannot be routed to one upstream.
pub fn parse(body: &[u8]) -> Result<Envelope<'_>, EnvelopeError<'_>> {
    // JSON is UTF-8 (RFC 8259). serde_json checks the strings it reads but
    // not the bytes of members it skips, so the whole body is checked here:
    // an agent must never be handed a body the gateway would call JSON.
    let Some(text) = crate::a2a::utf8::text(body) else {
        return Err(EnvelopeError {
            id: None,
            code: PARSE_ERROR,
            message: "invalid JSON: the body is not UTF-8".into(),
        });
    };
    let body = text.as_bytes();
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') {
        return Err(match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            Ok(_) => invalid(
                None,
                "batch requests are not supported: send one JSON-RPC request object per HTTP request",
            ),
            Err(e) => parse_error(&e),
        });
    }
    let raw: RawEnvelope<'_> = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(e) => return Err(classify(body, &e)),
    };
    let id = check_id(raw.id)?;
    match raw.jsonrpc.map(RawValue::get) {
        Some("\"2.0\"") => {}
        Some(_) => return Err(invalid(id, "'jsonrpc' must be exactly \"2.0\"")),
        None => return Err(invalid(id, "'jsonrpc' is required and must be \"2.0\"")),
    }
    let method = match raw.method {
        None => return Err(invalid(id, "'method' is required")),
        Some(m) => match serde_json::from_str::<Borrowed<'_>>(m.get()) {
            Ok(name) => name.0,
            Err(_) => return Err(invalid(id, "'method' must be a string")),
        },
    };
    // `"params": null` is read as absent: some clients send it for methods
    // without parameters, and it carries nothing.
    let params = raw.params.filter(|p| p.get() != "null");
    if let Some(p) = params {
        if !matches!(p.get().as_bytes().first(), Some(b'{' | b'[')) {
            return Err(invalid(id, "'params' must be an object or an array"));
        }
    }
    Ok(Envelope { id, method, params })
}

pub(crate) fn check_id(id: Option<&RawValue>) -> Result<Option<&RawValue>, EnvelopeError<'_>> {
    match id {
        Some(raw) if !one_pass::id_ok(raw) => {
            Err(invalid(None, "'id' must be a string, a number or null"))
        }
        _ => Ok(id),
    }
}

fn classify<'a>(body: &[u8], e: &serde_json::Error) -> EnvelopeError<'a> {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => parse_error(e),
        // A shape error can stop the parser before it has seen the whole body,
        // so only call it "invalid request" once the body is known to be JSON.
        Category::Data => match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            Err(e) => parse_error(&e),
            Ok(_) if e.to_string().starts_with("duplicate field") => {
                invalid(None, &format!("request object has a {}", strip_position(e)))
            }
            Ok(_) => invalid(None, "the request must be a JSON object"),
        },
    }
}

fn parse_error<'a>(e: &serde_json::Error) -> EnvelopeError<'a> {
    EnvelopeError {
        id: None,
        code: PARSE_ERROR,
        message: format!("invalid JSON: {e}"),
    }
}

fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn invalid<'a>(id: Option<&'a RawValue>, message: &str) -> EnvelopeError<'a> {
    EnvelopeError {
        id,
        code: INVALID_REQUEST,
        message: message.to_string(),
    }
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

/// A JSON-RPC request envelope. `id` absent: a notification.
#[derive(Serialize)]
struct RequestEnvelope<'a, I, P> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<I>,
    method: &'a str,
    params: &'a P,
}

/// Writes a JSON-RPC request into `writer`: the one writer of request
/// envelopes, for every call the gateway makes or translates.
pub fn write_request<W: std::io::Write, I: Serialize, P: Serialize>(
    writer: W,
    id: Option<I>,
    method: &str,
    params: &P,
) -> serde_json::Result<()> {
    let envelope = RequestEnvelope {
        jsonrpc: "2.0",
        id,
        method,
        params,
    };
    serde_json::to_writer(writer, &envelope)
}

/// The id of a JSON-RPC request the gateway writes for a call that came
/// in another binding, which has no id of its own.
pub fn gateway_id() -> Option<&'static RawValue> {
    static ID: std::sync::LazyLock<Option<Box<RawValue>>> =
        std::sync::LazyLock::new(|| RawValue::from_string("1".into()).ok());
    ID.as_deref()
}

/// A JSON-RPC request as bytes (`write_request`).
pub fn request_body<I: Serialize, P: Serialize>(
    id: Option<I>,
    method: &str,
    params: &P,
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(128);
    write_request(&mut out, id, method, params)?;
    Ok(out)
}

/// A success response whose `result` is JSON text already (an agent's
/// result, kept as it wrote it); `id` is JSON text too.
pub fn result_raw(id: &str, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + id.len() + 36);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

/// A complete JSON-RPC success response carrying `result`.
pub fn result_body(id: Option<&RawValue>, result: &Value) -> Bytes {
    #[derive(Serialize)]
    struct Success<'a> {
        jsonrpc: &'static str,
        id: &'a RawValue,
        result: &'a Value,
    }
    let response = Success {
        jsonrpc: "2.0",
        id: id.unwrap_or(RawValue::NULL),
        result,
    };
    serde_json::to_vec(&response)
        .map(Bytes::from)
        .unwrap_or_default()
}

/// A complete JSON-RPC error response. A missing id (notification, or an id
/// that could not be read) is written as `null`, as JSON-RPC 2.0 says.
pub fn error_body(id: Option<&RawValue>, code: i32, message: &str, data: Option<&Value>) -> Bytes {
    let response = ErrorResponse {
        jsonrpc: "2.0",
        id: id.unwrap_or(RawValue::NULL),
        error: ErrorObject {
            code,
            message,
            data,
        },
    };
    // Serializing borrowed strings, integers and already-valid JSON cannot
    // fail; the fallback keeps this total anyway.
    serde_json::to_vec(&response)
        .map(Bytes::from)
        .unwrap_or_else(|_| {
            Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#,
        )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_writers_write_one_shape() {
        let params = serde_json::json!({"id": "t"});
        let call = request_body(Some("p"), "GetTask", &params).unwrap();
        assert_eq!(
            call,
            br#"{"jsonrpc":"2.0","id":"p","method":"GetTask","params":{"id":"t"}}"#
        );
        let notification = request_body(None::<&RawValue>, "tasks/get", &params).unwrap();
        assert_eq!(
            notification,
            br#"{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"t"}}"#
        );
        assert_eq!(
            result_raw("7", br#"{"task":{}}"#),
            br#"{"jsonrpc":"2.0","id":7,"result":{"task":{}}}"#
        );
    }

    fn err(body: &str) -> (Option<String>, i32, String) {
        let e = parse(body.as_bytes()).unwrap_err();
        (e.id.map(|v| v.get().to_string()), e.code, e.message)
    }

    #[test]
    fn accepts_a_plain_request_and_borrows_fields() {
        let env =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"a":1}}"#).unwrap();
        assert_eq!(env.id.unwrap().get(), "7");
        assert_eq!(env.method, "message/send");
        assert_eq!(env.params.unwrap().get(), r#"{"a":1}"#);
    }

    #[test]
    fn keeps_id_text_exactly() {
        for id in [
            "1.0",
            "12345678901234567890123",
            "\"a\\u0041\"",
            "null",
            "-0",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            assert_eq!(parse(body.as_bytes()).unwrap().id.unwrap().get(), id);
        }
    }

    #[test]
    fn notification_has_no_id() {
        let env = parse(br#"{"jsonrpc":"2.0","method":"tasks/get","params":{}}"#).unwrap();
        assert!(env.id.is_none());
    }

    #[test]
    fn invalid_json_is_parse_error_with_null_id() {
        for body in [
            "{",
            "",
            "nonsense",
            r#"{"jsonrpc":"2.0","id":1,"method":"x"} trailing"#,
            r#""str" garbage"#,
            "[1,",
        ] {
            let (id, code, _) = err(body);
            assert_eq!((id, code), (None, PARSE_ERROR), "body {body:?}");
        }
    }

    #[test]
    fn envelope_problems_are_invalid_request_and_mirror_the_id() {
        let cases = [
            (r#"{"jsonrpc":"1.0","id":"a","method":"m"}"#, Some("\"a\"")),
            (r#"{"id":3,"method":"m"}"#, Some("3")),
            (r#"{"jsonrpc":"2.0","id":4}"#, Some("4")),
            (r#"{"jsonrpc":"2.0","id":5,"method":12}"#, Some("5")),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"m","params":"x"}"#,
                Some("6"),
            ),
            (r#"{"jsonrpc":"2.0","id":{"bad":1},"method":"m"}"#, None),
            (r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#, None),
            (r#""just a string""#, None),
            ("42", None),
            (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#, None),
        ];
        for (body, want_id) in cases {
            let (id, code, msg) = err(body);
            assert_eq!(code, INVALID_REQUEST, "body {body}: {msg}");
            assert_eq!(id.as_deref(), want_id, "body {body}");
        }
    }

    #[test]
    fn a_body_that_is_not_utf8_is_a_parse_error_wherever_the_byte_is() {
        for body in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"x\":\"\xff\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xfe\"}}",
        ] {
            let e = parse(body).unwrap_err();
            assert_eq!((e.id.is_none(), e.code), (true, PARSE_ERROR));
            assert!(e.message.contains("not UTF-8"), "{}", e.message);
        }
    }

    #[test]
    fn batches_are_refused_clearly() {
        let (id, code, msg) = err(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#);
        assert_eq!((id, code), (None, INVALID_REQUEST));
        assert!(msg.contains("batch"));
        assert_eq!(err("[").1, PARSE_ERROR);
    }

    #[test]
    fn error_body_mirrors_raw_id() {
        let id = RawValue::from_string("1.50".into()).unwrap();
        let body = error_body(Some(&id), -32601, "nope", None);
        assert_eq!(
            &body[..],
            br#"{"jsonrpc":"2.0","id":1.50,"error":{"code":-32601,"message":"nope"}}"#
        );
        let body = error_body(None, -32700, "bad", Some(&serde_json::json!({"k":1})));
        assert_eq!(
            &body[..],
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":{"k":1}}}"#
        );
    }
}

/// The one-pass read (`crate::a2a::model::one_pass`) against this module's
/// two-pass read.
#[cfg(test)]
mod one_pass_tests {
    use serde_json::value::RawValue;

    use crate::a2a::jsonrpc;
    use crate::a2a::methods;
    use crate::a2a::model::{one_pass, read};

    /// What the two-pass read makes of `text`, as `read` would give it.
    fn two_pass(text: &str) -> Option<String> {
        let envelope = jsonrpc::parse(text.as_bytes()).ok()?;
        let method = methods::lookup(&envelope.method)?;
        let params = read::params(method, envelope.params).ok()?;
        Some(format!(
            "{:?} {} {params:?}",
            envelope.id.map(RawValue::get),
            method.name
        ))
    }

    fn one_pass(text: &str) -> Option<String> {
        let r = one_pass::read(text)?;
        Some(format!(
            "{:?} {} {:?}",
            r.id.map(RawValue::get),
            r.method.name,
            r.params
        ))
    }

    #[test]
    fn reads_what_the_two_pass_read_reads() {
        let send =
            r#"{"message":{"role":"user","messageId":"m","parts":[{"kind":"text","text":"hi"}]}}"#;
        let cases = [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"message/send","params":{send}}}"#),
            format!(
                r#"{{"id":"a","method":"SendMessage","jsonrpc":"2.0","params":{send},"x":[1]}}"#
            ),
            r#"{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":"t"}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"t"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":2,"method":"agent/getAuthenticatedExtendedCard"}"#.into(),
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":null}"#.into(),
            r#" {"jsonrpc":"2.0","id":3,"m\u0065thod":"tasks/cancel","params":{"id":"t\n"}} "#
                .into(),
        ];
        for case in &cases {
            assert!(one_pass(case).is_some(), "{case}");
            assert_eq!(one_pass(case), two_pass(case), "{case}");
        }
    }

    #[test]
    fn leaves_the_rest_to_the_two_pass_read() {
        let cases = [
            // params before method: read in two passes, still accepted.
            r#"{"jsonrpc":"2.0","id":1,"params":{"id":"t"},"method":"tasks/get"}"#,
            // each refused by the two-pass read, with its own message.
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":[1]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tasks/get","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tasks/get","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"tasks/get","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"params":{}}"#,
            r#"{"id":1,"method":"tasks/get","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}} x"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}"#,
        ];
        for case in cases {
            assert!(one_pass(case).is_none(), "{case}");
        }
        assert!(two_pass(cases[0]).is_some());
    }
}
