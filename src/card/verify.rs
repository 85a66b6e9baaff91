//! Verifying an agent's own card against the keys its upstream trusts
//! (`card_trust`): any one signature that verifies is enough, as with the
//! official verifiers.
//!
//! A signature's payload is detached; what it covers depends on who made
//! it. The gateway tries, in order: the card as served in RFC 8785 form
//! (the spec's definition, and what covers every member), then the two
//! readings the official Python SDKs sign (`super::project`'s 1.0 and
//! `super::project03`'s 0.3 projection). When a projection verifies, the
//! card the gateway uses is that projection: members it leaves out were
//! not signed, so they cannot be trusted.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

use super::{canonical, project, project03};
use crate::config::card_trust::{CardSignature, RemoteJwks};

/// Signatures looked at on one card; more is not a card, it is a chore.
const MAX_SIGNATURES: usize = 16;

/// A card whose signature verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub kid: String,
    /// What the signature covers: "jcs" (the card as served), "a2a-1.0"
    /// or "a2a-0.3" (a projection).
    pub covers: &'static str,
    /// The card as far as the signature covers it.
    pub card: Value,
}

/// Why a card is not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No `signatures` at all.
    Unsigned,
    /// Signatures, none valid: why, for each.
    Invalid(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Unsigned => f.write_str("the card has no signatures"),
            Refusal::Invalid(why) => f.write_str(why),
        }
    }
}

/// One way of reading the card, and the bytes a signature over it covers.
struct Payload {
    covers: &'static str,
    bytes: Vec<u8>,
}

/// Verifies `card` against `trust`.
pub async fn verify(card: &Value, trust: &CardSignature) -> Result<Verified, Refusal> {
    if canonical::depth(card) > canonical::MAX_DEPTH {
        return Err(Refusal::Invalid(format!(
            "the card nests deeper than {} levels: it cannot be canonicalised",
            canonical::MAX_DEPTH
        )));
    }
    let signatures = match card.get("signatures") {
        None | Some(Value::Null) => return Err(Refusal::Unsigned),
        Some(Value::Array(list)) if list.is_empty() => return Err(Refusal::Unsigned),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(Refusal::Invalid("signatures is not a list".into())),
    };
    let payloads = payloads(card);
    let mut reasons = Vec::new();
    for (i, signature) in signatures.iter().take(MAX_SIGNATURES).enumerate() {
        match check(signature, &payloads, trust).await {
            Ok((kid, covers)) => {
                return Ok(Verified {
                    kid,
                    covers,
                    card: used(card, covers),
                })
            }
            Err(why) => reasons.push(format!("signatures[{i}]: {why}")),
        }
    }
    Err(Refusal::Invalid(reasons.join("; ")))
}

/// The readings a signature may cover, each written as its signer writes it.
fn payloads(card: &Value) -> Vec<Payload> {
    let mut unsigned = card.clone();
    if let Some(object) = unsigned.as_object_mut() {
        object.remove("signatures");
    }
    let readings: [(&'static str, Option<Vec<u8>>); 3] = [
        ("jcs", canonical::jcs(&unsigned).ok()),
        ("a2a-1.0", canonical::jcs(&project::v10(card)).ok()),
        (
            "a2a-0.3",
            Some(project03::python_json(&project03::v03(card)).into_bytes()),
        ),
    ];
    readings
        .into_iter()
        .filter_map(|(covers, bytes)| {
            Some(Payload {
                covers,
                bytes: bytes?,
            })
        })
        .collect()
}

/// The card as far as a signature over `covers` vouches for it.
fn used(card: &Value, covers: &str) -> Value {
    match covers {
        "a2a-1.0" => project::v10(card),
        "a2a-0.3" => project03::v03(card),
        _ => card.clone(),
    }
}

/// The protected header of one signature, read.
struct Header {
    alg: Algorithm,
    kid: Option<String>,
    jku: Option<String>,
}

/// One signature: `(kid, covers)` when it verifies, else why not.
async fn check(
    signature: &Value,
    payloads: &[Payload],
    trust: &CardSignature,
) -> Result<(String, &'static str), String> {
    let text = |name: &str| signature.get(name).and_then(Value::as_str);
    let (Some(protected), Some(signed)) = (text("protected"), text("signature")) else {
        return Err("malformed: protected and signature must be strings".into());
    };
    let header = header(protected, trust)?;
    let keys = keys(&header, trust).await?;
    let kid = header.kid.clone().unwrap_or_default();
    for key in &keys {
        for payload in payloads {
            let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(&payload.bytes));
            if jsonwebtoken::crypto::verify(signed, input.as_bytes(), key, header.alg)
                .unwrap_or(false)
            {
                return Ok((kid, payload.covers));
            }
        }
    }
    Err(format!(
        "the signature by kid \"{kid}\" does not verify with the trusted key: the card was changed after it was signed, or another key signed it"
    ))
}

/// The protected header: well formed, an allowed `alg`, nothing critical
/// the gateway does not understand.
fn header(protected: &str, trust: &CardSignature) -> Result<Header, String> {
    let decoded = URL_SAFE_NO_PAD
        .decode(protected.trim_end_matches('='))
        .map_err(|_| "malformed: the protected header is not base64url".to_string())?;
    let fields: Map<String, Value> = serde_json::from_slice(&decoded)
        .map_err(|_| "malformed: the protected header is not a JSON object".to_string())?;
    let text = |name: &str| fields.get(name).and_then(Value::as_str).map(str::to_string);
    let Some(alg_name) = text("alg") else {
        return Err("malformed: the protected header has no alg".into());
    };
    if fields.contains_key("crit") {
        return Err(
            "the protected header names crit extensions the gateway does not understand".into(),
        );
    }
    let alg = match alg_name.parse::<Algorithm>() {
        _ if alg_name.eq_ignore_ascii_case("none") => {
            return Err("alg \"none\" is never accepted: an unsigned card is not signed".into())
        }
        Ok(alg) if trust.algorithms.contains(&alg) => alg,
        Ok(Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) => {
            return Err(format!(
                "alg \"{alg_name}\" is never accepted: a shared secret cannot vouch for a card"
            ))
        }
        _ => {
            return Err(format!(
                "alg \"{alg_name}\" is not on this agent's allow-list"
            ))
        }
    };
    Ok(Header {
        alg,
        kid: text("kid"),
        jku: text("jku"),
    })
}

/// The trusted keys for this header's `kid` and `alg`: the static ones,
/// the JWKS URL's, and the `jku`'s when it is on the allow-list.
async fn keys(header: &Header, trust: &CardSignature) -> Result<Vec<DecodingKey>, String> {
    let kid = header.kid.as_deref();
    // A signature without a kid is tried with every key of its alg; it
    // must still verify.
    let fits = |k: &crate::auth::jwt::jwks::RemoteKey| {
        k.algorithms.contains(&header.alg)
            && (kid.is_none() || k.kid.is_none() || k.kid.as_deref() == kid)
    };
    let mut found: Vec<DecodingKey> = Vec::new();
    if let Some(keys) = &trust.keys {
        found.extend(keys.keys.iter().filter(|k| fits(k)).map(|k| k.key.clone()));
    }
    let mut unreachable = Vec::new();
    let jku = header.jku.as_deref();
    let allowed_jku = jku.and_then(|u| trust.jku_allow.iter().find(|r| r.url == u));
    for remote in trust.jwks_url.iter().chain(allowed_jku) {
        match fetched(remote, kid).await {
            Ok(snapshot) => found.extend(
                snapshot
                    .keys
                    .iter()
                    .filter(|k| fits(k))
                    .map(|k| k.key.clone()),
            ),
            Err(why) => unreachable.push(why),
        }
    }
    if !found.is_empty() {
        return Ok(found);
    }
    let named = kid.map_or("no kid".to_string(), |k| format!("kid \"{k}\""));
    let mut why = format!("{named} is not a trusted key for alg {:?}", header.alg);
    if let (Some(jku), None) = (jku, allowed_jku) {
        why.push_str(&format!(
            "; its jku {jku} is not on this agent's jku_allow, so it was not followed"
        ));
    }
    for failure in unreachable {
        why.push_str(&format!("; {failure}"));
    }
    Err(why)
}

async fn fetched(
    remote: &RemoteJwks,
    kid: Option<&str>,
) -> Result<std::sync::Arc<crate::auth::jwt::jwks::Snapshot>, String> {
    (remote.source.snapshot(kid).await)
        .map_err(|e| format!("the keys at {} cannot be fetched: {e}", remote.url))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::card_trust::SignatureMode;

    fn trust() -> CardSignature {
        CardSignature {
            mode: SignatureMode::Required,
            algorithms: vec![Algorithm::ES256],
            ..Default::default()
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Deeper than the canonicaliser goes: refused before any key is
    /// looked at. (serde_json reads at most 128 levels, so a fetched card
    /// this deep is refused as not JSON before it gets here; this is the
    /// bound for a card made some other way.)
    #[test]
    fn a_card_too_deep_to_canonicalise_is_refused() {
        let mut deep = Value::Null;
        for _ in 0..1_000 {
            deep = Value::Array(vec![deep]);
        }
        let card = serde_json::json!({"name": "x", "capabilities": {"extensions": [{"params": deep}]},
            "signatures": [{"protected": "e30", "signature": "x"}]});
        let refused = block_on(verify(&card, &trust())).unwrap_err();
        assert!(
            refused.to_string().contains("nests deeper than 128"),
            "{refused}"
        );
    }

    #[test]
    fn no_signatures_is_unsigned_and_a_non_list_is_invalid() {
        let unsigned = serde_json::json!({"name": "x"});
        assert_eq!(
            block_on(verify(&unsigned, &trust())),
            Err(Refusal::Unsigned)
        );
        let empty = serde_json::json!({"name": "x", "signatures": []});
        assert_eq!(block_on(verify(&empty, &trust())), Err(Refusal::Unsigned));
        let odd = serde_json::json!({"name": "x", "signatures": "yes"});
        let refused = block_on(verify(&odd, &trust())).unwrap_err();
        assert_eq!(refused, Refusal::Invalid("signatures is not a list".into()));
    }

    #[test]
    fn headers_are_read_strictly() {
        let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
        for (protected, says) in [
            (b64("[1]"), "not a JSON object"),
            (b64(r#"{"kid":"k"}"#), "has no alg"),
            (b64(r#"{"alg":"NONE"}"#), "\"none\" is never accepted"),
            (b64(r#"{"alg":"HS512"}"#), "shared secret"),
            (b64(r#"{"alg":"RS256"}"#), "not on this agent's allow-list"),
            (b64(r#"{"alg":"ES256","crit":["exp"]}"#), "crit"),
        ] {
            let why = header(&protected, &trust()).err().unwrap_or_default();
            assert!(why.contains(says), "{protected}: {why}");
        }
    }

    /// Only the first signatures are looked at, so a card cannot make the
    /// gateway try keys without end.
    #[test]
    fn signatures_past_the_bound_are_not_tried() {
        let one = serde_json::json!({"protected": "!", "signature": "x"});
        let card = serde_json::json!({"signatures": vec![one; 100]});
        let Err(Refusal::Invalid(why)) = block_on(verify(&card, &trust())) else {
            panic!("refused")
        };
        assert_eq!(why.matches("malformed").count(), MAX_SIGNATURES);
    }
}
