//! The client's push config, sealed into the callback id the agent is given.
//!
//! Why sealed and not stored: replicas share no store, and a relay must let
//! any replica deliver a notification and survive a restart between the
//! config being set and the agent posting. So the id *is* the client's
//! config (its URL, token, `authentication`, its version and binding, the
//! task), encrypted and authenticated with AES-256-GCM under a key every
//! replica holds. Nothing to look up, nothing to lose, nothing for a
//! client or agent to read or forge: an id that does not open under a
//! known key is refused before anything else is done with it.
//!
//! The id: `{kid}.{base64url(nonce ‖ ciphertext ‖ tag)}`. The kid says
//! which key sealed it, so keys rotate: seal with the active one, open with
//! any configured one. A 96-bit random nonce per seal (a key seals far
//! fewer than 2^32 configs between rotations, inside GCM's random-nonce
//! bound). The kid and a context label are the associated data, so an id
//! cannot be moved to another key's name.
//!
//! The agent is given a fresh random token per config to send back
//! (`X-A2A-Notification-Token`); it is sealed too, and the callback compares
//! them in constant time.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bound on an id read from a callback path: a sealed config with a long
/// URL and credentials fits many times over.
pub const MAX_ID_LEN: usize = 8 * 1024;

/// Bound on what is sealed, so an id stays a reasonable URL path.
const MAX_SEALED: usize = 4 * 1024;

const CONTEXT: &[u8] = b"a2a-gateway push relay v1";

/// What the client set, as the relay needs it to deliver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientConfig {
    /// The client's webhook URL.
    #[serde(rename = "u")]
    pub url: String,
    /// The client's own token, sent back to it.
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The client's `authentication` member, as it sent it.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Value>,
    /// The client's A2A version ("0.1", "0.3", "1.0") and binding
    /// ("JSONRPC", "HTTP+JSON", "GRPC"): the shape it is sent.
    #[serde(rename = "v")]
    pub version: String,
    #[serde(rename = "b")]
    pub binding: String,
    /// The version of the agent the config went to: what its posts are
    /// read as.
    #[serde(rename = "p")]
    pub agent_version: String,
    /// The task, and the config's id when the client named one.
    #[serde(rename = "k")]
    pub task_id: String,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub config_id: Option<String>,
    /// The token the agent is given and must send back.
    #[serde(rename = "g")]
    pub agent_token: String,
    /// When it was sealed, in milliseconds since the epoch: a config
    /// deleted through this replica later is not delivered (`deleted`).
    #[serde(rename = "s", default)]
    pub sealed_at: u64,
    /// The W3C `traceparent` of the call that set it: each delivery's
    /// span links to that trace.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// One sealing key.
pub struct SealKey {
    pub kid: String,
    key: LessSafeKey,
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealKey").field("kid", &self.kid).finish()
    }
}

impl SealKey {
    /// A key from its 32 bytes.
    pub fn new(kid: &str, bytes: &[u8]) -> Result<SealKey, String> {
        if kid.is_empty()
            || !kid
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("a kid is letters, digits, '-' and '_' (it is part of a URL)".into());
        }
        let unbound = UnboundKey::new(&AES_256_GCM, bytes)
            .map_err(|_| format!("a sealing key is 32 bytes, not {}", bytes.len()))?;
        Ok(SealKey {
            kid: kid.to_string(),
            key: LessSafeKey::new(unbound),
        })
    }
}

/// Why an id does not open: each is a 404 at the callback (the id names
/// no config this gateway made).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the callback id is not one this gateway makes")]
    Malformed,
    #[error("the callback id is sealed with key \"{0}\", which this gateway does not hold")]
    UnknownKey(String),
    #[error("the callback id does not open: it was changed, or sealed by another gateway")]
    Tampered,
}

/// The keys: the active one seals, any opens.
#[derive(Debug)]
pub struct Sealer {
    /// The active key first.
    keys: Vec<SealKey>,
    random: SystemRandom,
}

impl Sealer {
    /// `keys` with the active one first.
    pub fn new(keys: Vec<SealKey>) -> Sealer {
        Sealer {
            keys,
            random: SystemRandom::new(),
        }
    }

    /// The kid of the key that seals.
    pub fn active_kid(&self) -> &str {
        self.keys.first().map_or("", |k| k.kid.as_str())
    }

    /// A fresh token for the agent: 128 random bits, base64url.
    pub fn agent_token(&self) -> Result<String, String> {
        let mut bytes = [0u8; 16];
        (self.random.fill(&mut bytes)).map_err(|_| "no randomness".to_string())?;
        Ok(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The id for `config`, sealed by the active key.
    pub fn seal(&self, config: &ClientConfig) -> Result<String, String> {
        let key = self.keys.first().ok_or("no sealing key")?;
        let mut data = serde_json::to_vec(config).map_err(|e| e.to_string())?;
        if data.len() > MAX_SEALED {
            return Err(format!(
                "the push config is {} bytes; the relay carries at most {MAX_SEALED}",
                data.len()
            ));
        }
        let mut nonce = [0u8; NONCE_LEN];
        (self.random.fill(&mut nonce)).map_err(|_| "no randomness".to_string())?;
        let aad = aad(&key.kid);
        let sealed = key.key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad.as_slice()),
            &mut data,
        );
        sealed.map_err(|_| "sealing failed".to_string())?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{}.{}", key.kid, URL_SAFE_NO_PAD.encode(out)))
    }

    /// The config sealed in `id`.
    pub fn open(&self, id: &str) -> Result<ClientConfig, OpenError> {
        if id.len() > MAX_ID_LEN {
            return Err(OpenError::Malformed);
        }
        let (kid, body) = id.split_once('.').ok_or(OpenError::Malformed)?;
        let key = (self.keys.iter().find(|k| k.kid == kid))
            .ok_or_else(|| OpenError::UnknownKey(kid.chars().take(64).collect()))?;
        let mut bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| OpenError::Malformed)?;
        if bytes.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(OpenError::Malformed);
        }
        let mut ciphertext = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).map_err(|_| OpenError::Malformed)?;
        let aad = aad(&key.kid);
        let plain = (key.key)
            .open_in_place(nonce, Aad::from(aad.as_slice()), &mut ciphertext)
            .map_err(|_| OpenError::Tampered)?;
        serde_json::from_slice(plain).map_err(|_| OpenError::Tampered)
    }
}

fn aad(kid: &str) -> Vec<u8> {
    let mut aad = CONTEXT.to_vec();
    aad.push(0);
    aad.extend_from_slice(kid.as_bytes());
    aad
}

/// Whether the token an agent sent is the one sealed for it, in time that
/// does not depend on where they differ.
pub fn token_matches(sent: &[u8], sealed: &str) -> bool {
    use subtle::ConstantTimeEq;
    sent.len() == sealed.len() && bool::from(sent.ct_eq(sealed.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClientConfig {
        ClientConfig {
            url: "https://client.example/hook?x=1".into(),
            token: Some("client-token".into()),
            authentication: Some(serde_json::json!({"schemes": ["Bearer"], "credentials": "c"})),
            version: "0.3".into(),
            binding: "JSONRPC".into(),
            agent_version: "1.0".into(),
            task_id: "task-1".into(),
            config_id: Some("cfg-1".into()),
            agent_token: "agent".into(),
            sealed_at: 1,
            traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
        }
    }

    fn sealer(kids: &[(&str, u8)]) -> Sealer {
        Sealer::new(
            kids.iter()
                .map(|(kid, b)| SealKey::new(kid, &[*b; 32]).unwrap())
                .collect(),
        )
    }

    #[test]
    fn a_sealed_config_opens_to_itself_and_is_url_safe() {
        let s = sealer(&[("k1", 1)]);
        let id = s.seal(&config()).unwrap();
        assert!(id.starts_with("k1."), "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
            "{id}"
        );
        assert_eq!(s.open(&id).unwrap(), config());
        // A fresh nonce each time: the same config never seals the same.
        assert_ne!(s.seal(&config()).unwrap(), id);
    }

    #[test]
    fn rotated_keys_still_open_what_they_sealed() {
        let old = sealer(&[("k1", 1)]);
        let id = old.seal(&config()).unwrap();
        let rotated = sealer(&[("k2", 2), ("k1", 1)]);
        assert_eq!(rotated.open(&id).unwrap(), config());
        assert!(rotated.seal(&config()).unwrap().starts_with("k2."));
        let dropped = sealer(&[("k2", 2)]);
        assert_eq!(dropped.open(&id), Err(OpenError::UnknownKey("k1".into())));
    }

    #[test]
    fn a_changed_forged_or_moved_id_does_not_open() {
        let s = sealer(&[("k1", 1), ("k2", 1)]);
        let id = s.seal(&config()).unwrap();
        let (kid, body) = id.split_once('.').unwrap();
        let mut bytes = URL_SAFE_NO_PAD.decode(body).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let flipped = format!("{kid}.{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(s.open(&flipped), Err(OpenError::Tampered));
        // The same bytes under another kid (same key bytes even): the kid
        // is bound in, so it does not open.
        assert_eq!(s.open(&format!("k2.{body}")), Err(OpenError::Tampered));
        let other = sealer(&[("k1", 9)]);
        assert_eq!(other.open(&id), Err(OpenError::Tampered));
        for bad in ["", "k1", "k1.", "k1.!!", "k1.AAAA", &"k1.A".repeat(5000)] {
            assert_eq!(s.open(bad), Err(OpenError::Malformed), "{bad:.20}");
        }
    }

    #[test]
    fn keys_and_sizes_are_checked() {
        assert!(SealKey::new("k", &[0; 16])
            .unwrap_err()
            .contains("32 bytes"));
        assert!(SealKey::new("k/1", &[0; 32]).is_err());
        let mut big = config();
        big.url = format!("https://client.example/{}", "a".repeat(5000));
        assert!(sealer(&[("k1", 1)])
            .seal(&big)
            .unwrap_err()
            .contains("at most"));
    }

    #[test]
    fn tokens_are_fresh_and_compared_whole() {
        let s = sealer(&[("k1", 1)]);
        let (a, b) = (s.agent_token().unwrap(), s.agent_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 22);
        assert!(token_matches(a.as_bytes(), &a));
        assert!(!token_matches(b.as_bytes(), &a));
        assert!(!token_matches(&a.as_bytes()[..21], &a));
    }
}
