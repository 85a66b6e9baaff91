//! Bearer tokens whose signature has been verified, so a client that sends
//! the same token on every call pays for one signature check instead of
//! one per call. An ES256 or RS256 check costs hundreds of microseconds
//! here, which is more than the rest of a proxied call
//! (bench/RESULTS.md, "over TLS").
//!
//! What a hit skips is the signature and the claims that cannot change for
//! the same bytes (issuer, audience, subject). It still needs:
//! - the same keys: an entry remembers the JWKS snapshot it was verified
//!   against, and a refreshed snapshot (a key rotated out) misses, so the
//!   token is verified again against the keys now published. Static keys
//!   only change on reload, which builds a new validator and a new cache;
//! - the time: `exp` and `nbf` are checked on every hit, with the leeway.
//!
//! Entries are keyed by the token's SHA-256, never the token itself, and the
//! cache is bounded in bytes; a failed check is never remembered.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::jwks::Snapshot;
use super::token::{JwtError, ValidToken};

/// Bytes of verified tokens (claims included) kept at most.
const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// An entry is checked again at least this often, whatever its `exp`.
const MAX_AGE: Duration = Duration::from_secs(600);

pub type Digest32 = [u8; 32];

pub struct Verified {
    pub token: Arc<ValidToken>,
    exp: u64,
    nbf: Option<u64>,
    /// The JWKS snapshot the signature was checked against (`None`: static
    /// keys).
    keys: Option<Arc<Snapshot>>,
}

impl Verified {
    /// `Err` once the token has expired, or while it is not valid yet: the
    /// same rules (and leeway) as the first check.
    pub fn check_time(&self, now: u64, leeway: u64) -> Result<(), JwtError> {
        if self.exp.saturating_add(leeway) < now {
            return Err(JwtError::Expired);
        }
        match self.nbf {
            Some(nbf) if nbf > now.saturating_add(leeway) => Err(JwtError::NotYetValid),
            _ => Ok(()),
        }
    }
}

pub struct VerifiedTokens {
    /// Keyed by a digest, which is already uniform: foldhash spreads it as
    /// well as SipHash does, for a tenth of the instructions.
    cache: moka::sync::Cache<Digest32, Arc<Verified>, foldhash::fast::RandomState>,
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self {
            cache: moka::sync::Cache::builder()
                .max_capacity(MAX_BYTES)
                .weigher(|_, v: &Arc<Verified>| weight(&v.token))
                .time_to_live(MAX_AGE)
                .build_with_hasher(foldhash::fast::RandomState::default()),
        }
    }
}

impl VerifiedTokens {
    pub fn digest(token: &str) -> Digest32 {
        Sha256::digest(token.as_bytes()).into()
    }

    /// The entry for `digest`, if it was verified against these keys.
    pub fn get(&self, digest: &Digest32, keys: Option<&Arc<Snapshot>>) -> Option<Arc<Verified>> {
        let hit = self.cache.get(digest)?;
        let same_keys = match (&hit.keys, keys) {
            (None, None) => true,
            (Some(then), Some(now)) => Arc::ptr_eq(then, now),
            _ => false,
        };
        same_keys.then_some(hit)
    }

    /// Remembers a token that passed every check. One without a whole-second
    /// `exp` is not remembered (it is checked in full each time).
    pub fn insert(&self, digest: Digest32, token: &Arc<ValidToken>, keys: Option<Arc<Snapshot>>) {
        let Some(exp) = token.claims.get("exp").and_then(Value::as_u64) else {
            return;
        };
        let nbf = match token.claims.get("nbf") {
            None => None,
            Some(v) => match v.as_u64() {
                Some(n) => Some(n),
                None => return,
            },
        };
        let entry = Verified {
            token: Arc::clone(token),
            exp,
            nbf,
            keys,
        };
        self.cache.insert(digest, Arc::new(entry));
    }
}

/// Seconds since the Unix epoch, as the token's claims count them.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Roughly what an entry holds, for the byte bound.
fn weight(token: &ValidToken) -> u32 {
    let claims: usize = token
        .claims
        .iter()
        .map(|(k, v)| k.len() + v.to_string().len() + 32)
        .sum();
    let scopes: usize = token.scopes.iter().map(|s| s.len() + 24).sum();
    u32::try_from(claims + scopes + token.subject.len() + 256).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token(claims: Value) -> Arc<ValidToken> {
        let Value::Object(claims) = claims else {
            panic!("claims must be an object")
        };
        Arc::new(ValidToken {
            subject: "alice".into(),
            scopes: vec![],
            claims: Arc::new(claims),
        })
    }

    #[test]
    fn time_is_checked_on_every_hit_with_the_leeway() {
        let cache = VerifiedTokens::default();
        let d = VerifiedTokens::digest("t");
        cache.insert(d, &token(json!({"exp": 1_000, "nbf": 500})), None);
        let hit = cache.get(&d, None).expect("remembered");
        assert_eq!(hit.check_time(900, 0), Ok(()));
        assert_eq!(hit.check_time(1_000, 0), Ok(()));
        assert_eq!(hit.check_time(1_001, 0), Err(JwtError::Expired));
        assert_eq!(hit.check_time(1_030, 30), Ok(()));
        assert_eq!(hit.check_time(1_031, 30), Err(JwtError::Expired));
        assert_eq!(hit.check_time(499, 0), Err(JwtError::NotYetValid));
        assert_eq!(hit.check_time(470, 30), Ok(()));
    }

    #[test]
    fn only_tokens_with_whole_second_times_are_remembered() {
        let cache = VerifiedTokens::default();
        for (i, claims) in [
            json!({}),
            json!({"exp": 1.5}),
            json!({"exp": "soon"}),
            json!({"exp": 10, "nbf": -1}),
        ]
        .into_iter()
        .enumerate()
        {
            let d = VerifiedTokens::digest(&i.to_string());
            cache.insert(d, &token(claims), None);
            assert!(cache.get(&d, None).is_none(), "case {i}");
        }
    }

    #[test]
    fn an_entry_needs_the_keys_it_was_verified_with() {
        let cache = VerifiedTokens::default();
        let (then, now) = (Arc::new(Snapshot::empty()), Arc::new(Snapshot::empty()));
        let d = VerifiedTokens::digest("jwks");
        cache.insert(d, &token(json!({"exp": 10})), Some(then.clone()));
        assert!(cache.get(&d, Some(&then)).is_some());
        assert!(
            cache.get(&d, Some(&now)).is_none(),
            "a refreshed JWKS misses"
        );
        assert!(cache.get(&d, None).is_none());
        let s = VerifiedTokens::digest("static");
        cache.insert(s, &token(json!({"exp": 10})), None);
        assert!(cache.get(&s, Some(&then)).is_none());
    }
}
