//! The SSRF guard for push-notification webhooks. (Being written: see the
//! signatures.)

use std::net::IpAddr;

use serde::Deserialize;
use serde_json::Value;

use crate::a2a::Method;

/// `[push_guard]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushGuardSection {
    pub enabled: bool,
    /// Allow plain `http://` webhooks.
    pub allow_http: bool,
    /// Host names allowed whatever they resolve to (exact, case-insensitive).
    pub allow_hosts: Vec<String>,
    /// Address ranges allowed although private/loopback/… (CIDR).
    pub allow_cidrs: Vec<String>,
    /// Bound on resolving a webhook host name.
    pub resolve_timeout: String,
}

impl Default for PushGuardSection {
    fn default() -> Self {
        Self {
            enabled: true,
            allow_http: false,
            allow_hosts: Vec::new(),
            allow_cidrs: Vec::new(),
            resolve_timeout: "2s".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct PushGuard {
    pub enabled: bool,
}

/// Validates a section: `(field, message)` for every problem.
pub fn settings(section: &PushGuardSection) -> Result<PushGuard, Vec<(String, String)>> {
    Ok(PushGuard {
        enabled: section.enabled,
    })
}

impl PushGuard {
    /// Checks every webhook URL in the request; `Err` says which and why.
    pub async fn check_request(
        &self,
        method: &Method,
        params: Option<&Value>,
    ) -> Result<(), String> {
        let _ = (method, params);
        Ok(())
    }
}

/// Every webhook URL in a request's params, for every version's shape, with
/// the JSON path it was found at.
pub fn webhook_urls(method: &Method, params: Option<&Value>) -> Vec<(String, String)> {
    let _ = (method, params);
    Vec::new()
}

/// Why an address must not receive webhooks (`None`: a public address).
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    let _ = ip;
    None
}
