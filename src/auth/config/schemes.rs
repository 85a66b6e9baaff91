//! One `[auth.schemes.NAME]` table checked: its kind's own fields, the keys,
//! users or token validation it needs, every problem with its path.

use serde_json::Value;

use super::sections::{ApiKeyEntry, BasicUserEntry, SchemeSection};
use super::settings::{KeyLocation, Scheme, SchemeKind};
use crate::auth::jwt::{self, JwtSection, JwtSettings};
use crate::cidr::{problem, Problems};

/// The scheme named `name`, or `None` (with its problems pushed).
pub(super) fn scheme(
    name: &str,
    section: &SchemeSection,
    problems: &mut Problems,
) -> Option<Scheme> {
    let at = |field: &str| format!("schemes.{name}.{field}");
    let before = problems.len();
    let (description, kind) = match section {
        SchemeSection::ApiKey {
            location,
            name: param,
            description,
            keys,
        } => (
            description,
            api_key_scheme(location, param, keys, &at, problems),
        ),
        SchemeSection::Http {
            scheme,
            bearer_format,
            description,
            users,
            jwt,
        } => {
            let kind = http_scheme(scheme, bearer_format, users, jwt.as_ref(), &at, problems)?;
            (description, kind)
        }
        SchemeSection::OAuth2 {
            flows,
            description,
            jwt,
        } => {
            let flows = serde_json::to_value(flows).unwrap_or(Value::Null);
            (
                description,
                SchemeKind::OAuth2 {
                    flows,
                    jwt: jwt_settings(jwt, &at("jwt"), problems)?,
                },
            )
        }
        SchemeSection::OpenIdConnect {
            open_id_connect_url,
            description,
            jwt,
        } => (
            description,
            open_id_scheme(open_id_connect_url, jwt, &at, problems)?,
        ),
        SchemeSection::MutualTls { description } => (description, SchemeKind::MutualTls),
    };
    (problems.len() == before).then(|| Scheme {
        name: name.to_string(),
        description: description.clone(),
        kind,
    })
}

/// `type = "openIdConnect"`: the discovery URL, and how tokens are checked.
fn open_id_scheme(
    url: &str,
    jwt: &JwtSection,
    at: &dyn Fn(&str) -> String,
    problems: &mut Problems,
) -> Option<SchemeKind> {
    if !url.starts_with("https://") && !url.starts_with("http://") {
        problems.push((at("open_id_connect_url"), "must be an absolute URL".into()));
    }
    let jwt = jwt_settings(jwt, &at("jwt"), problems)?;
    Some(SchemeKind::OpenIdConnect {
        url: url.to_string(),
        jwt,
    })
}

/// `type = "apiKey"`: where the key is sent, and the accepted keys.
fn api_key_scheme(
    location: &str,
    param: &str,
    keys: &[ApiKeyEntry],
    at: &dyn Fn(&str) -> String,
    problems: &mut Problems,
) -> SchemeKind {
    let location = match location {
        "header" => KeyLocation::Header,
        "query" => KeyLocation::Query,
        "cookie" => KeyLocation::Cookie,
        _ => {
            problems.push(problem(
                at("in"),
                "must be \"header\", \"query\" or \"cookie\"",
            ));
            KeyLocation::Header
        }
    };
    if location == KeyLocation::Header && http::HeaderName::from_bytes(param.as_bytes()).is_err() {
        problems.push(problem(at("name"), "not a valid header name"));
    }
    if keys.is_empty() {
        problems.push(problem(at("keys"), "at least one key is required"));
    }
    let keys = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| api_key(k, &at(&format!("keys[{i}]")), problems))
        .collect();
    SchemeKind::ApiKey {
        location,
        param: param.to_string(),
        keys,
    }
}

/// `type = "http"`: Basic with its users, or Bearer with its token checks.
fn http_scheme(
    scheme: &str,
    bearer_format: &Option<String>,
    users: &[BasicUserEntry],
    jwt: Option<&JwtSection>,
    at: &dyn Fn(&str) -> String,
    problems: &mut Problems,
) -> Option<SchemeKind> {
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(SchemeKind::Basic {
            users: basic_users(users, &at("users"), problems),
        }),
        "bearer" => {
            let Some(jwt) = jwt else {
                problems.push(problem(
                    at("jwt"),
                    "a bearer scheme needs jwt = { … } to validate tokens",
                ));
                return None;
            };
            Some(SchemeKind::Bearer {
                bearer_format: bearer_format.clone(),
                jwt: jwt_settings(jwt, &at("jwt"), problems)?,
            })
        }
        _ => {
            problems.push(problem(at("scheme"), "must be \"basic\" or \"bearer\""));
            None
        }
    }
}

fn jwt_settings(section: &JwtSection, at: &str, problems: &mut Problems) -> Option<JwtSettings> {
    match jwt::settings(section) {
        Ok(s) => Some(s),
        Err(found) => {
            for (field, message) in found {
                let path = if field.is_empty() {
                    at.to_string()
                } else {
                    format!("{at}.{field}")
                };
                problems.push((path, message));
            }
            None
        }
    }
}

fn api_key(entry: &ApiKeyEntry, at: &str, problems: &mut Problems) -> Option<(String, [u8; 32])> {
    use sha2::{Digest, Sha256};
    if entry.id.is_empty() {
        problems.push(problem(format!("{at}.id"), "must not be empty"));
    }
    let digest = match (&entry.sha256, &entry.env, &entry.file) {
        (Some(hex_digest), None, None) => match hex::decode(hex_digest.trim()) {
            Ok(bytes) if bytes.len() == 32 => bytes.try_into().ok(),
            _ => {
                problems.push(problem(
                    format!("{at}.sha256"),
                    "must be 64 hex digits (a SHA-256 digest)",
                ));
                None
            }
        },
        (None, Some(var), None) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Some(Sha256::digest(v.as_bytes()).into()),
            _ => {
                problems.push((
                    format!("{at}.env"),
                    format!("environment variable {var} is not set"),
                ));
                None
            }
        },
        (None, None, Some(path)) => match std::fs::read_to_string(path) {
            Ok(v) if !v.trim_end_matches(['\r', '\n']).is_empty() => {
                Some(Sha256::digest(v.trim_end_matches(['\r', '\n']).as_bytes()).into())
            }
            _ => {
                problems.push((
                    format!("{at}.file"),
                    format!("cannot read a key from {path}"),
                ));
                None
            }
        },
        _ => {
            problems.push(problem(at, "give exactly one of sha256, env or file"));
            None
        }
    };
    digest.map(|d| (entry.id.clone(), d))
}

fn basic_users(
    users: &[BasicUserEntry],
    at: &str,
    problems: &mut Problems,
) -> Vec<(String, String)> {
    if users.is_empty() {
        problems.push(problem(at, "a basic scheme needs at least one user"));
    }
    users
        .iter()
        .enumerate()
        .filter_map(|(i, u)| {
            let known = u.password_hash.starts_with("$argon2") || u.password_hash.starts_with("$2");
            if !known || crate::auth::basic::parse_hash(&u.password_hash).is_err() {
                problems.push(problem(
                    format!("{at}[{i}].password_hash"),
                    "must be an argon2 ($argon2id$…) or bcrypt ($2b$…) hash",
                ));
                return None;
            }
            Some((u.name.clone(), u.password_hash.clone()))
        })
        .collect()
}
