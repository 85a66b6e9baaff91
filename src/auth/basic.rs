//! HTTP Basic against argon2 or bcrypt password hashes. Hashing is slow on
//! purpose, so it runs off the async threads and a success is remembered
//! briefly (by a digest of the credentials, never the password itself).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use moka::sync::Cache;
use sha2::{Digest, Sha256};

/// Successful logins are remembered this long.
const REMEMBER: Duration = Duration::from_secs(300);

/// Checks that `hash` is a hash we can verify against.
pub fn parse_hash(hash: &str) -> Result<(), String> {
    if hash.starts_with("$argon2") {
        let parsed = argon2::PasswordHash::new(hash).map_err(|e| e.to_string())?;
        // A PHC string without a salt and hash cannot verify anything.
        match (parsed.salt, parsed.hash) {
            (Some(_), Some(_)) => Ok(()),
            _ => Err("argon2 hash without salt or hash".into()),
        }
    } else if hash.starts_with("$2") && hash.len() == 60 {
        Ok(())
    } else {
        Err("not an argon2 or bcrypt hash".into())
    }
}

/// What a request's credentials came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Missing,
    Invalid,
    Valid(String),
}

pub struct BasicVerifier {
    users: Arc<Vec<(String, String)>>,
    remembered: Cache<[u8; 32], String>,
}

impl BasicVerifier {
    pub fn new(users: &[(String, String)]) -> Self {
        Self {
            users: Arc::new(users.to_vec()),
            remembered: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(REMEMBER)
                .build(),
        }
    }

    /// Verifies an `Authorization` header value.
    pub async fn verify(&self, authorization: Option<&str>) -> Outcome {
        let Some(encoded) = authorization.and_then(|v| strip_scheme(v, "basic")) else {
            return Outcome::Missing;
        };
        let Some((user, password)) = decode(encoded) else {
            return Outcome::Invalid;
        };
        let fingerprint: [u8; 32] =
            Sha256::digest(format!("{user}\u{0}{password}").as_bytes()).into();
        if let Some(user) = self.remembered.get(&fingerprint) {
            return Outcome::Valid(user);
        }
        let users = self.users.clone();
        let checked = tokio::task::spawn_blocking(move || check(&users, &user, &password)).await;
        match checked {
            Ok(Some(user)) => {
                self.remembered.insert(fingerprint, user.clone());
                Outcome::Valid(user)
            }
            _ => Outcome::Invalid,
        }
    }
}

/// The credentials after `scheme ` (case-insensitive), if that is the scheme.
pub fn strip_scheme<'a>(value: &'a str, scheme: &str) -> Option<&'a str> {
    let (given, rest) = value.trim().split_once(' ')?;
    given.eq_ignore_ascii_case(scheme).then(|| rest.trim())
}

fn decode(encoded: &str) -> Option<(String, String)> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Verifies against every user with that name (normally one). An unknown
/// user still costs a hash check, so timing does not reveal who exists.
fn check(users: &[(String, String)], user: &str, password: &str) -> Option<String> {
    let hash = users
        .iter()
        .find(|(name, _)| name == user)
        .map(|(_, h)| h.as_str());
    let ok = verify_hash(hash.unwrap_or_else(|| dummy_hash()), password);
    (ok && hash.is_some()).then(|| user.to_string())
}

/// A bcrypt hash of nothing anyone knows, made once, checked for unknown
/// users so they cost as much as known ones.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| bcrypt::hash(uuid::Uuid::new_v4().to_string(), 10).unwrap_or_default())
}

fn verify_hash(hash: &str, password: &str) -> bool {
    use argon2::PasswordVerifier;
    if hash.starts_with("$argon2") {
        match argon2::PasswordHash::new(hash) {
            Ok(parsed) => argon2::Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok(),
            Err(_) => false,
        }
    } else {
        bcrypt::verify(password, hash).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, SaltString};

    fn argon(password: &str) -> String {
        let salt = SaltString::encode_b64(b"fixed-test-salt!").unwrap();
        argon2::Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .unwrap()
            .to_string()
    }

    fn header(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    #[tokio::test]
    async fn argon2_and_bcrypt_users() {
        let users = vec![
            ("alice".to_string(), argon("wonderland")),
            ("bob".to_string(), bcrypt::hash("builder", 4).unwrap()),
        ];
        let v = BasicVerifier::new(&users);
        assert_eq!(
            v.verify(Some(&header("alice", "wonderland"))).await,
            Outcome::Valid("alice".into())
        );
        assert_eq!(
            v.verify(Some(&header("alice", "wonderland"))).await,
            Outcome::Valid("alice".into())
        );
        assert_eq!(
            v.verify(Some(&header("bob", "builder"))).await,
            Outcome::Valid("bob".into())
        );
        assert_eq!(
            v.verify(Some(&header("alice", "nope"))).await,
            Outcome::Invalid
        );
        assert_eq!(
            v.verify(Some(&header("mallory", "builder"))).await,
            Outcome::Invalid
        );
        assert_eq!(v.verify(Some("Basic !!!")).await, Outcome::Invalid);
        assert_eq!(v.verify(Some("Bearer abc")).await, Outcome::Missing);
        assert_eq!(v.verify(None).await, Outcome::Missing);
    }

    #[test]
    fn hashes_are_recognised() {
        assert!(parse_hash(&argon("x")).is_ok());
        assert!(parse_hash(dummy_hash()).is_ok());
        assert!(parse_hash("plaintext").is_err());
        assert!(parse_hash("$argon2id$garbage").is_err());
        assert!(parse_hash("$argon2id$v=19$m=19456,t=2,p=1").is_err());
    }
}
