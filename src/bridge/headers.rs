//! The A2A headers of a translated call: the agent is told its own
//! version, and extensions travel under the header name each side knows
//! (`A2A-Extensions` in 1.0, `X-A2A-Extensions` in 0.3).

use http::header::{HeaderMap, HeaderName};

use crate::a2a::Version;

pub const VERSION: HeaderName = HeaderName::from_static("a2a-version");
pub const EXTENSIONS: HeaderName = HeaderName::from_static("a2a-extensions");
pub const X_EXTENSIONS: HeaderName = HeaderName::from_static("x-a2a-extensions");

/// The extensions header name of a version.
fn extensions(version: Version) -> (HeaderName, HeaderName) {
    match version {
        Version::V1_0 => (EXTENSIONS, X_EXTENSIONS),
        _ => (X_EXTENSIONS, EXTENSIONS),
    }
}

/// Moves every value of `from` to `to`.
fn move_values(headers: &mut HeaderMap, from: &HeaderName, to: &HeaderName) {
    let values: Vec<_> = headers.get_all(from).iter().cloned().collect();
    if values.is_empty() {
        return;
    }
    headers.remove(from);
    for value in values {
        headers.append(to.clone(), value);
    }
}

/// The client's headers as an agent of `agent`'s version reads them. A 0.x
/// agent gets no `A2A-Version`: absent means 0.3.
pub fn for_agent(headers: &mut HeaderMap, agent: Version) {
    match agent {
        Version::V1_0 => {
            headers.insert(VERSION, http::HeaderValue::from_static("1.0"));
        }
        _ => {
            headers.remove(VERSION);
        }
    }
    let (theirs, other) = extensions(agent);
    move_values(headers, &other, &theirs);
}

/// The agent's answer headers as a client of `client`'s version reads them.
pub fn for_client(headers: &mut HeaderMap, client: Version) {
    let (theirs, other) = extensions(client);
    move_values(headers, &other, &theirs);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_follow_the_version() {
        let mut h = HeaderMap::new();
        h.append(X_EXTENSIONS, "urn:a".parse().unwrap());
        h.append(X_EXTENSIONS, "urn:b".parse().unwrap());
        h.insert(VERSION, "0.3".parse().unwrap());
        for_agent(&mut h, Version::V1_0);
        assert_eq!(h.get(VERSION).unwrap(), "1.0");
        let got: Vec<_> = h.get_all(EXTENSIONS).iter().collect();
        assert_eq!(got, ["urn:a", "urn:b"]);
        assert!(h.get(X_EXTENSIONS).is_none());
        for_agent(&mut h, Version::V0_3);
        assert!(h.get(VERSION).is_none());
        assert_eq!(h.get_all(X_EXTENSIONS).iter().count(), 2);
    }
}
