//! A card as the official 0.3 SDK reads it before it checks a signature:
//! the projection a 0.3 signature covers (docs/signed-cards.md).
//!
//! a2a-python 0.3.x parses the card into its pydantic `AgentCard` (members
//! the model lacks are dropped), dumps it by alias without `None`s and
//! without values equal to their defaults (`preferredTransport: "JSONRPC"`,
//! `protocolVersion: "0.3.0"`, every security scheme's `type`), removes
//! empty strings, lists and objects, and writes it with Python's
//! `json.dumps(sort_keys=True, separators=(",", ":"))`. That is not RFC
//! 8785: [`python_json`] writes it as Python does. The model's members are
//! written down here from a2a-sdk 0.3.26's types; the interop step checks
//! the result with that SDK's own verifier.

use serde_json::{Map, Value};

use super::project::clean_empty;

/// How a member of a 0.3 model is read.
#[derive(Clone, Copy)]
enum Kind {
    /// Kept as it is (strings, booleans, lists of strings, free-form maps).
    Plain,
    /// One model.
    Model(&'static [Member]),
    /// A list of one model.
    List(&'static [Member]),
    /// A map from names to security schemes, each the model its `type`
    /// names.
    Schemes,
}

/// A member: its JSON name, how it is read, and the default the dump
/// leaves out.
type Member = (&'static str, Kind, Option<&'static str>);

use Kind::{List, Model, Plain, Schemes};

const INTERFACE: &[Member] = &[("transport", Plain, None), ("url", Plain, None)];
const EXTENSION: &[Member] = &[
    ("description", Plain, None),
    ("params", Plain, None),
    ("required", Plain, None),
    ("uri", Plain, None),
];
const CAPABILITIES: &[Member] = &[
    ("extensions", List(EXTENSION), None),
    ("pushNotifications", Plain, None),
    ("stateTransitionHistory", Plain, None),
    ("streaming", Plain, None),
];
const PROVIDER: &[Member] = &[("organization", Plain, None), ("url", Plain, None)];
const SIGNATURE: &[Member] = &[
    ("header", Plain, None),
    ("protected", Plain, None),
    ("signature", Plain, None),
];
const SKILL: &[Member] = &[
    ("description", Plain, None),
    ("examples", Plain, None),
    ("id", Plain, None),
    ("inputModes", Plain, None),
    ("name", Plain, None),
    ("outputModes", Plain, None),
    ("security", Plain, None),
    ("tags", Plain, None),
];
const CARD: &[Member] = &[
    ("additionalInterfaces", List(INTERFACE), None),
    ("capabilities", Model(CAPABILITIES), None),
    ("defaultInputModes", Plain, None),
    ("defaultOutputModes", Plain, None),
    ("description", Plain, None),
    ("documentationUrl", Plain, None),
    ("iconUrl", Plain, None),
    ("name", Plain, None),
    ("preferredTransport", Plain, Some("JSONRPC")),
    ("protocolVersion", Plain, Some("0.3.0")),
    ("provider", Model(PROVIDER), None),
    ("security", Plain, None),
    ("securitySchemes", Schemes, None),
    ("signatures", List(SIGNATURE), None),
    ("skills", List(SKILL), None),
    ("supportsAuthenticatedExtendedCard", Plain, None),
    ("url", Plain, None),
    ("version", Plain, None),
];

const FLOW: &[Member] = &[
    ("authorizationUrl", Plain, None),
    ("refreshUrl", Plain, None),
    ("scopes", Plain, None),
    ("tokenUrl", Plain, None),
];
const FLOWS: &[Member] = &[
    ("authorizationCode", Model(FLOW), None),
    ("clientCredentials", Model(FLOW), None),
    ("implicit", Model(FLOW), None),
    ("password", Model(FLOW), None),
];

/// Each scheme type's members (`type` itself is its default: left out).
fn scheme_members(kind: &str) -> Option<&'static [Member]> {
    const API_KEY: &[Member] = &[
        ("description", Plain, None),
        ("in", Plain, None),
        ("name", Plain, None),
    ];
    const HTTP: &[Member] = &[
        ("bearerFormat", Plain, None),
        ("description", Plain, None),
        ("scheme", Plain, None),
    ];
    const OAUTH2: &[Member] = &[
        ("description", Plain, None),
        ("flows", Model(FLOWS), None),
        ("oauth2MetadataUrl", Plain, None),
    ];
    const OIDC: &[Member] = &[
        ("description", Plain, None),
        ("openIdConnectUrl", Plain, None),
    ];
    const MTLS: &[Member] = &[("description", Plain, None)];
    match kind {
        "apiKey" => Some(API_KEY),
        "http" => Some(HTTP),
        "oauth2" => Some(OAUTH2),
        "openIdConnect" => Some(OIDC),
        "mutualTLS" => Some(MTLS),
        _ => None,
    }
}

/// The 0.3 projection of `card`, without `signatures`.
pub fn v03(card: &Value) -> Value {
    let mut projected = model(card, CARD).unwrap_or_default();
    projected.remove("signatures");
    clean_empty(Value::Object(projected)).unwrap_or_else(|| Value::Object(Map::new()))
}

/// `value` read as the model `members`, dumped without nulls and defaults.
fn model(value: &Value, members: &[Member]) -> Option<Map<String, Value>> {
    let object = value.as_object()?;
    let mut out = Map::new();
    for (name, kind, default) in members {
        let Some(v) = object.get(*name).filter(|v| !v.is_null()) else {
            continue;
        };
        if default.is_some_and(|d| v.as_str() == Some(d)) {
            continue;
        }
        if let Some(read) = member(v, *kind) {
            out.insert((*name).to_string(), read);
        }
    }
    Some(out)
}

fn member(v: &Value, kind: Kind) -> Option<Value> {
    match kind {
        Plain => Some(v.clone()),
        Model(members) => model(v, members).map(Value::Object),
        List(members) => Some(Value::Array(
            (v.as_array()?.iter())
                .filter_map(|item| model(item, members).map(Value::Object))
                .collect(),
        )),
        Schemes => Some(Value::Object(
            (v.as_object()?.iter())
                .filter_map(|(k, item)| {
                    let members = scheme_members(item.get("type")?.as_str()?)?;
                    Some((k.clone(), Value::Object(model(item, members)?)))
                })
                .collect(),
        )),
    }
}

/// `value` as Python's `json.dumps(value, sort_keys=True,
/// separators=(",", ":"))` writes it: keys by code point, every non-ASCII
/// character escaped (`\uXXXX`, astral ones as surrogate pairs), floats as
/// Python's `repr`.
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float(f)),
            _ => out.push_str("null"),
        },
        Value::String(s) => quote(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            // UTF-8 byte order is code-point order, as Python sorts str.
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                quote(k, out);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='\u{7f}' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// A float as Python's `repr`: the shortest digits that read back, fixed
/// between 1e-4 and 1e16, else `d.ddde±XX`.
fn python_float(f: f64) -> String {
    let sci = format!("{f:e}"); // shortest digits: "-1.25e-7"
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the point
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let e_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{first}{fraction}e{e_sign}{:02}", exponent.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (123.25, "123.25"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (1.5e300, "1.5e+300"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (f, python) in cases {
            assert_eq!(python_float(f), python, "{f}");
        }
    }

    #[test]
    fn strings_and_keys_as_python_writes_them() {
        let v = json!({"é": "€ \u{1F600} \"q\" \\ \n\t\u{1} \u{7f} /", "a": [1, 2.0, true, null]});
        assert_eq!(
            python_json(&v),
            r#"{"a":[1,2.0,true,null],"\u00e9":"\u20ac \ud83d\ude00 \"q\" \\ \n\t\u0001 \u007f /"}"#
                .replace("\\u007f", "\u{7f}")
        );
    }

    /// A dual card with members the 0.3 model lacks, defaults, empties
    /// and non-ASCII text: the bytes a2a-sdk 0.3.26 writes for it
    /// (`canonicalize_agent_card` of the card it parsed).
    #[test]
    fn a_dual_card_projects_as_the_0_3_sdk_reads_and_writes_it() {
        let card = json!({
            "name": "Fleet \u{e9}\u{20ac}",
            "description": "",
            "version": "1.0.0",
            "url": "https://gw.example.com/",
            "preferredTransport": "JSONRPC",
            "protocolVersion": "0.3.0",
            "additionalInterfaces": [{"url": "https://gw.example.com/", "transport": "HTTP+JSON", "extra": 1}],
            "supportsAuthenticatedExtendedCard": true,
            "supportedInterfaces": [{"url": "https://gw.example.com/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": true, "extendedAgentCard": true,
                             "extensions": [{"uri": "urn:x", "required": false, "params": {"n": 1, "f": 2.5, "big": 1e20, "deep": {"e": []}}}]},
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"},
                                "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://id/.well-known/openid-configuration"}},
            "security": [{"key": []}],
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": [],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"], "security": [{"key": ["r"]}],
                        "unknownMember": 5}],
            "signatures": [{"protected": "x", "signature": "y"}],
            "notInTheModel": {"a": 1}
        });
        let expected = concat!(
            r#"{"additionalInterfaces":[{"transport":"HTTP+JSON","url":"https://gw.example.com/"}],"capab"#,
            r#"ilities":{"extensions":[{"params":{"big":1e+20,"f":2.5,"n":1},"required":false,"uri":"urn:"#,
            r#"x"}],"pushNotifications":false,"stateTransitionHistory":true,"streaming":true},"defaultInp"#,
            r#"utModes":["text/plain"],"name":"Fleet \u00e9\u20ac","securitySchemes":{"key":{"in":"header"#,
            r#"","name":"X-Key"},"oidc":{"openIdConnectUrl":"https://id/.well-known/openid-configuration""#,
            r#"}},"skills":[{"description":"d","id":"s","name":"S","security":[{"key":["r"]}],"tags":["t""#,
            r#"]}],"supportsAuthenticatedExtendedCard":true,"url":"https://gw.example.com/","version":"1."#,
            r#"0.0"}"#,
        );
        assert_eq!(python_json(&v03(&card)), expected);
    }
}
