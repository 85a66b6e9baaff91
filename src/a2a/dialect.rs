//! What a client or an agent speaks: a binding (JSON-RPC, HTTP+JSON, gRPC)
//! and a protocol version. The bridge translates between dialects; calls
//! between the same dialect pass through untouched.

use std::fmt;

use super::Version;

/// How A2A calls are carried (the card's `protocolBinding` / `transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
}

impl Binding {
    /// The card's spelling: `JSONRPC`, `HTTP+JSON` (0.3 cards also wrote
    /// `REST`), `GRPC`; case does not matter.
    pub fn from_card(name: &str) -> Option<Self> {
        match name.to_ascii_uppercase().as_str() {
            "JSONRPC" | "JSON-RPC" => Some(Binding::JsonRpc),
            "HTTP+JSON" | "REST" | "HTTP_JSON" => Some(Binding::HttpJson),
            "GRPC" => Some(Binding::Grpc),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A card's or a config's protocol version: `1.0`, `1.0.1` → 1.0; `0.3.0`,
/// `0.2.5` → 0.3 (0.2 and 0.3 share their methods and shapes); `0.1` →
/// 0.1. Anything else is not a version the gateway speaks.
pub fn version_from(text: &str) -> Option<Version> {
    let mut parts = text.trim().trim_start_matches(['v', 'V']).split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    match (major, minor) {
        (1, _) => Some(Version::V1_0),
        (0, 2 | 3) => Some(Version::V0_3),
        (0, 1) => Some(Version::V0_1),
        _ => None,
    }
}

/// The versions a client may name in `A2A-Version` (0.2 is read as 0.3).
pub const SPOKEN_VERSIONS: [&str; 4] = ["1.0", "0.3", "0.2", "0.1"];

/// What a client's `A2A-Version` (header or query parameter) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// Empty: 0.3, as the spec says.
    Empty,
    Spoken(Version),
    /// A version the gateway does not speak (`99.0`, `1.1`, `one`).
    NotSpoken,
}

/// Reads `A2A-Version`: `Major.Minor`, with a patch number tolerated
/// (`1.0.1`), since the spec says patches do not count.
pub fn requested_version(text: &str) -> Requested {
    let text = text.trim();
    if text.is_empty() {
        return Requested::Empty;
    }
    let number = |part: &str| match !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
        true => part.parse::<u32>().ok(),
        false => None,
    };
    let mut parts = text.split('.').map(number);
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else {
        return Requested::NotSpoken;
    };
    // At most a patch number after them.
    match (parts.next(), parts.next()) {
        (None, _) | (Some(Some(_)), None) => {}
        _ => return Requested::NotSpoken,
    }
    match (major, minor) {
        (1, 0) => Requested::Spoken(Version::V1_0),
        (0, 2 | 3) => Requested::Spoken(Version::V0_3),
        (0, 1) => Requested::Spoken(Version::V0_1),
        _ => Requested::NotSpoken,
    }
}

/// A set of protocol versions (what an agent speaks over one binding):
/// copied and tested on every call, so a bit set rather than a list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Versions(u8);

impl Versions {
    pub fn with(self, version: Version) -> Self {
        Self(self.0 | 1 << version.index())
    }

    pub fn contains(self, version: Version) -> bool {
        self.0 & 1 << version.index() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl FromIterator<Version> for Versions {
    fn from_iter<I: IntoIterator<Item = Version>>(versions: I) -> Self {
        versions.into_iter().fold(Self::default(), Self::with)
    }
}

/// One way an agent can be reached: a binding, a version, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub binding: Binding,
    pub version: Version,
    pub url: String,
    /// 1.0: the tenant clients echo for this interface.
    pub tenant: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_cards_and_configs_write_them() {
        for (text, want) in [
            ("1.0", Some(Version::V1_0)),
            ("1.0.1", Some(Version::V1_0)),
            ("1", Some(Version::V1_0)),
            ("v1.0", Some(Version::V1_0)),
            ("0.3.0", Some(Version::V0_3)),
            ("0.3", Some(Version::V0_3)),
            ("0.2.5", Some(Version::V0_3)),
            ("0.1", Some(Version::V0_1)),
            ("0.4", None),
            ("2.0", None),
            ("", None),
            ("one", None),
        ] {
            assert_eq!(version_from(text), want, "{text:?}");
        }
    }

    #[test]
    fn requested_versions_are_major_minor_of_a_spoken_version() {
        use Requested::*;
        for (text, want) in [
            ("1.0", Spoken(Version::V1_0)),
            ("1.0.1", Spoken(Version::V1_0)),
            (" 0.3 ", Spoken(Version::V0_3)),
            ("0.2", Spoken(Version::V0_3)),
            ("0.1", Spoken(Version::V0_1)),
            ("", Empty),
            ("99.0", NotSpoken),
            ("1.1", NotSpoken),
            ("1", NotSpoken),
            ("v1.0", NotSpoken),
            ("1.0.", NotSpoken),
            ("1.0.1.2", NotSpoken),
            ("1.0.x", NotSpoken),
            ("+1.0", NotSpoken),
            ("one", NotSpoken),
        ] {
            assert_eq!(requested_version(text), want, "{text:?}");
        }
    }

    #[test]
    fn bindings_in_every_spelling() {
        assert_eq!(Binding::from_card("JSONRPC"), Some(Binding::JsonRpc));
        assert_eq!(Binding::from_card("jsonrpc"), Some(Binding::JsonRpc));
        assert_eq!(Binding::from_card("HTTP+JSON"), Some(Binding::HttpJson));
        assert_eq!(Binding::from_card("REST"), Some(Binding::HttpJson));
        assert_eq!(Binding::from_card("GRPC"), Some(Binding::Grpc));
        assert_eq!(Binding::from_card("carrier pigeon"), None);
    }
}
