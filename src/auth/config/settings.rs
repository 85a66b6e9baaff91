//! `[auth]` and `[authz]` checked: what the gateway enforces and publishes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::auth::jwt::JwtSettings;

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
