//! `[auth]` and `[authz]`: the security schemes the gateway enforces *and*
//! publishes (one source of truth), which alternatives a caller may satisfy,
//! and who may use which skill and method.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::jwt::{JwtSection, JwtSettings};

mod schemes;

use schemes::scheme;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// Scheme name → scheme; the names appear in the published card.
    pub schemes: BTreeMap<String, SchemeSection>,
    /// Alternatives (OpenAPI/A2A semantics): a caller must satisfy every
    /// scheme of at least one table, holding the listed scopes.
    /// Default: each scheme alone, no scopes.
    #[serde(default)]
    pub security: Option<Vec<BTreeMap<String, Vec<String>>>>,
    /// Serve the public card without authentication.
    #[serde(default = "yes")]
    pub public_card: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum SchemeSection {
    #[serde(rename = "apiKey")]
    ApiKey {
        #[serde(rename = "in")]
        location: String,
        name: String,
        #[serde(default)]
        description: Option<String>,
        keys: Vec<ApiKeyEntry>,
    },
    #[serde(rename = "http")]
    Http {
        scheme: String,
        #[serde(default)]
        bearer_format: Option<String>,
        #[serde(default)]
        description: Option<String>,
        /// Basic: the accepted users.
        #[serde(default)]
        users: Vec<BasicUserEntry>,
        /// Bearer: how tokens are validated.
        #[serde(default)]
        jwt: Option<JwtSection>,
    },
    #[serde(rename = "oauth2")]
    OAuth2 {
        /// Published as written (authorizationCode, clientCredentials, …).
        flows: toml::Table,
        #[serde(default)]
        description: Option<String>,
        jwt: JwtSection,
    },
    #[serde(rename = "openIdConnect")]
    OpenIdConnect {
        open_id_connect_url: String,
        #[serde(default)]
        description: Option<String>,
        jwt: JwtSection,
    },
    #[serde(rename = "mutualTLS")]
    MutualTls {
        #[serde(default)]
        description: Option<String>,
    },
}

/// An API key: its id (the caller's identity) and where its value is. The
/// value itself never sits in the TOML: a SHA-256 digest, or an env var or
/// file holding the key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyEntry {
    pub id: String,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicUserEntry {
    pub name: String,
    /// An argon2 PHC string (`$argon2id$…`) or a bcrypt hash (`$2b$…`).
    pub password_hash: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthzSection {
    #[serde(default)]
    pub rules: Vec<RuleSection>,
}

/// Allows the callers it names (any of subjects/scopes, all of claims) the
/// targets it names (skills or upstreams) for the methods it names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSection {
    #[serde(default)]
    pub subjects: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub claims: BTreeMap<String, String>,
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub upstreams: Vec<String>,
    /// Method families ("send", "stream", "get_task", "list_tasks",
    /// "cancel_task", "resubscribe", "push_config_set|get|list|delete",
    /// "extended_card") or "*".
    pub methods: Vec<String>,
}

// ---- runtime ----

#[derive(Debug, Clone)]
pub struct Auth {
    pub schemes: Vec<Scheme>,
    /// Each alternative: (scheme index, required scopes).
    pub alternatives: Vec<Vec<(usize, Vec<String>)>>,
    pub public_card: bool,
}

#[derive(Debug, Clone)]
pub struct Scheme {
    pub name: String,
    pub description: Option<String>,
    pub kind: SchemeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLocation {
    Header,
    Query,
    Cookie,
}

impl KeyLocation {
    pub fn label(self) -> &'static str {
        match self {
            KeyLocation::Header => "header",
            KeyLocation::Query => "query",
            KeyLocation::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone)]
pub enum SchemeKind {
    ApiKey {
        location: KeyLocation,
        param: String,
        /// (key id, SHA-256 of the key)
        keys: Vec<(String, [u8; 32])>,
    },
    Basic {
        /// (user, password hash)
        users: Vec<(String, String)>,
    },
    Bearer {
        bearer_format: Option<String>,
        jwt: JwtSettings,
    },
    OAuth2 {
        flows: Value,
        jwt: JwtSettings,
    },
    OpenIdConnect {
        url: String,
        jwt: JwtSettings,
    },
    MutualTls,
}

#[derive(Debug, Clone, Default)]
pub struct Authz {
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub subjects: Vec<String>,
    pub scopes: Vec<String>,
    pub claims: BTreeMap<String, String>,
    pub skills: Vec<String>,
    pub upstreams: Vec<String>,
    pub methods: Vec<String>,
}

type Problems = Vec<(String, String)>;

/// Validates `[auth]`; problems are `(path under auth, message)`.
pub fn auth(section: &AuthSection) -> Result<Auth, Problems> {
    let mut problems = Vec::new();
    if section.schemes.is_empty() {
        problems.push(("schemes".into(), "at least one scheme is required".into()));
    }
    let schemes: Vec<Scheme> = section
        .schemes
        .iter()
        .filter_map(|(name, s)| scheme(name, s, &mut problems))
        .collect();
    let alternatives = alternatives(section, &schemes, &mut problems);
    match problems.is_empty() {
        true => Ok(Auth {
            schemes,
            alternatives,
            public_card: section.public_card,
        }),
        false => Err(problems),
    }
}

fn alternatives(
    section: &AuthSection,
    schemes: &[Scheme],
    problems: &mut Problems,
) -> Vec<Vec<(usize, Vec<String>)>> {
    let Some(listed) = &section.security else {
        return (0..schemes.len()).map(|i| vec![(i, Vec::new())]).collect();
    };
    if listed.is_empty() {
        problems.push((
            "security".into(),
            "an empty list would let nobody in; remove it to accept each scheme alone".into(),
        ));
    }
    let mut out = Vec::new();
    for (i, alt) in listed.iter().enumerate() {
        if alt.is_empty() {
            problems.push((
                format!("security[{i}]"),
                "an empty alternative would let everybody in".into(),
            ));
            continue;
        }
        let mut resolved = Vec::new();
        for (name, scopes) in alt {
            match schemes.iter().position(|s| &s.name == name) {
                Some(idx) => resolved.push((idx, scopes.clone())),
                None => problems.push((
                    format!("security[{i}].{name}"),
                    "names no scheme in auth.schemes".into(),
                )),
            }
        }
        out.push(resolved);
    }
    out
}

pub const METHOD_LABELS: [&str; 11] = [
    "send",
    "stream",
    "get_task",
    "list_tasks",
    "cancel_task",
    "resubscribe",
    "push_config_set",
    "push_config_get",
    "push_config_list",
    "push_config_delete",
    "extended_card",
];

/// Validates `[authz]`: a rule that names no caller or no target would
/// silently allow nothing (or, worse, be read as "everyone"), so it is refused.
pub fn authz(section: &AuthzSection, upstreams: &[String]) -> Result<Authz, Problems> {
    let mut problems = Vec::new();
    for (i, r) in section.rules.iter().enumerate() {
        check_rule(r, i, upstreams, &mut problems);
    }
    let rules = section
        .rules
        .iter()
        .map(|r| Rule {
            subjects: r.subjects.clone(),
            scopes: r.scopes.clone(),
            claims: r.claims.clone(),
            skills: r.skills.clone(),
            upstreams: r.upstreams.clone(),
            methods: r.methods.clone(),
        })
        .collect();
    match problems.is_empty() {
        true => Ok(Authz { rules }),
        false => Err(problems),
    }
}

/// What is wrong with the `i`th rule `r`, pushed onto `problems`.
fn check_rule(r: &RuleSection, i: usize, upstreams: &[String], problems: &mut Problems) {
    let at = |f: &str| format!("rules[{i}].{f}");
    if r.subjects.is_empty() && r.scopes.is_empty() && r.claims.is_empty() {
        problems.push((at("subjects"), "a rule must name its callers: subjects, scopes or claims (\"*\" in subjects for every authenticated caller)".into()));
    }
    if r.skills.is_empty() && r.upstreams.is_empty() {
        problems.push((
            at("skills"),
            "a rule must name what it allows: skills or upstreams (\"*\" for all)".into(),
        ));
    }
    if r.methods.is_empty() {
        problems.push((
            at("methods"),
            "a rule must name its methods (\"*\" for all)".into(),
        ));
    }
    for m in r
        .methods
        .iter()
        .filter(|m| *m != "*" && !METHOD_LABELS.contains(&m.as_str()))
    {
        problems.push((
            at("methods"),
            format!(
                "unknown method family '{m}'; use {} or \"*\"",
                METHOD_LABELS.join(", ")
            ),
        ));
    }
    for u in r
        .upstreams
        .iter()
        .filter(|u| *u != "*" && !upstreams.contains(u))
    {
        problems.push((
            at("upstreams"),
            format!("names no configured upstream: '{u}'"),
        ));
    }
}
