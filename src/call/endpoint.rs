//! The URLs the gateway publishes for itself.

use http::header;
use http::request::Parts;

use crate::state::{AppState, ConnInfo};

/// The JSON-RPC URL clients should use: the configured public URL, else the
/// address this client reached the gateway at.
pub fn endpoint(state: &AppState, parts: &Parts, conn: &ConnInfo) -> String {
    if let Some(public) = &state.config.server.public_url {
        return public.endpoint();
    }
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| {
            let h = parts.headers.get(header::HOST)?.to_str().ok()?;
            // Only a well-formed authority goes into a URL we publish.
            h.parse::<http::uri::Authority>()
                .ok()
                .map(|a| a.as_str().to_string())
        })
        .unwrap_or_else(|| conn.local.to_string());
    format!("{}://{host}/", conn.proto)
}

/// The URL of one agent behind the gateway: `{endpoint}agents/{name}`.
pub fn agent_endpoint(state: &AppState, parts: &Parts, conn: &ConnInfo, name: &str) -> String {
    let base = endpoint(state, parts, conn);
    format!("{}/agents/{name}", base.trim_end_matches('/'))
}
