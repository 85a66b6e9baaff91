//! `[auth]` and `[authz]` as written in the config file.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::auth::jwt::JwtSection;

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
