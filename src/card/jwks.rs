//! The gateway's JWKS: the public keys its card signatures verify with
//! (`[card.signing]`, the active key and the retired ones), served at
//! [`JWKS_PATH`] on the public listener. Public keys only: a JWK made from
//! a private key keeps only its public parameters.

use serde_json::json;

use super::published::{self, Rendered};
use crate::config::signing::Signing;

/// Where the JWKS is served, and what a signature's `jku` names.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// The JWKS document, ready to serve with the cards' cache headers.
pub fn render(signing: &Signing) -> Rendered {
    let keys: Vec<&jsonwebtoken::jwk::Jwk> = signing.keys.iter().map(|k| &k.jwk).collect();
    published::render(&json!({ "keys": keys }))
}
