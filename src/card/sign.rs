//! Signing a card the gateway publishes: one JWS with a detached payload
//! per projection a client verifies (`super::project`), by the active key
//! of `[card.signing]`, its protected header carrying `alg`, `kid`,
//! `typ: "JOSE"` and `jku`. A verifier accepts the card when any one
//! signature verifies.
//!
//! Signatures are kept by the card's unsigned content, so a card served
//! again (an agent's card, the extended card, which are built per
//! request) is signed once, when it changes.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::{canonical, project, project03};
use crate::config::signing::Signing;

/// `card` with its `signatures` set (any it had are replaced: they were
/// the agent's, over a card the gateway has since rewritten).
pub fn sign(card: &mut Value, signing: &Signing, jku: &str) {
    let Some(object) = card.as_object_mut() else {
        return;
    };
    object.remove("signatures");
    let signatures = kept(card, signing, jku);
    if let (Some(object), Some(signatures)) = (card.as_object_mut(), signatures) {
        object.insert("signatures".into(), (*signatures).clone());
    }
}

/// The signatures of this content, made once.
fn kept(card: &Value, signing: &Signing, jku: &str) -> Option<Arc<Value>> {
    static SIGNED: OnceLock<moka::sync::Cache<u64, Arc<Value>>> = OnceLock::new();
    let cache = SIGNED.get_or_init(|| moka::sync::Cache::new(4096));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(card).ok()?.hash(&mut hasher);
    signing.active().kid.hash(&mut hasher);
    jku.hash(&mut hasher);
    let key = hasher.finish();
    if let Some(signatures) = cache.get(&key) {
        return Some(signatures);
    }
    match signatures(card, signing, jku) {
        Ok(signatures) => {
            let signatures = Arc::new(signatures);
            cache.insert(key, signatures.clone());
            Some(signatures)
        }
        Err(why) => {
            tracing::warn!("the card is published unsigned: {why}");
            None
        }
    }
}

/// The projections signed, by the label each signature's unprotected
/// header names: the bytes each kind of client verifies.
const PROJECTIONS: [(&str, Projection); 2] = [("a2a-1.0", v10_bytes), ("a2a-0.3", v03_bytes)];

/// A card as one kind of client reads it, written as that client writes
/// it for its verifier.
type Projection = fn(&Value) -> Result<Vec<u8>, String>;

fn v10_bytes(card: &Value) -> Result<Vec<u8>, String> {
    canonical::jcs(&project::v10(card)).map_err(|e| e.to_string())
}

fn v03_bytes(card: &Value) -> Result<Vec<u8>, String> {
    let projected = project03::v03(card);
    if canonical::depth(&projected) > canonical::MAX_DEPTH {
        return Err(canonical::CanonicalError::TooDeep.to_string());
    }
    Ok(project03::python_json(&projected).into_bytes())
}

/// One signature per projection.
fn signatures(card: &Value, signing: &Signing, jku: &str) -> Result<Value, String> {
    let key = signing.active();
    let private = key
        .private
        .as_ref()
        .ok_or("the active key has no private key")?;
    let alg = serde_json::to_value(key.alg).map_err(|e| e.to_string())?;
    let header = json!({"alg": alg, "kid": key.kid, "jku": jku, "typ": "JOSE"});
    let protected = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).map_err(|e| e.to_string())?);
    let mut out = Vec::new();
    for (covers, projection) in PROJECTIONS {
        let payload = projection(card).map_err(|e| format!("{covers}: {e}"))?;
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), private, key.alg)
            .map_err(|e| format!("{covers}: {e}"))?;
        out.push(
            json!({"protected": protected, "signature": signature, "header": {"covers": covers}}),
        );
    }
    Ok(Value::Array(out))
}

/// Where a client fetches the keys: `[card.signing] jku`, else the JWKS
/// beside the card at `endpoint` (the gateway's root endpoint).
pub fn jku(signing: &Signing, endpoint: &str) -> String {
    match &signing.jku {
        Some(jku) => jku.clone(),
        None => format!(
            "{}{}",
            endpoint.trim_end_matches('/'),
            super::jwks::JWKS_PATH
        ),
    }
}
