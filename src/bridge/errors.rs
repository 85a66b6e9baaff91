//! Agents' JSON-RPC errors for a client of another version: the code is
//! kept when the client's version has it, else written as its nearest meaning
//! (the table in docs/version-bridge.md). The message and `data` are
//! always kept.

use crate::a2a::Version;

/// What each version lacks, and the code that says it nearest.
const NEAREST: &[(Version, i64, i64)] = &[
    // VersionNotSupported (1.0): the agent cannot serve the call as sent.
    (Version::V0_3, -32009, -32004),
    (Version::V0_1, -32009, -32004),
    // ExtensionSupportRequired (1.0): the request lacked something required.
    (Version::V0_3, -32008, -32600),
    (Version::V0_1, -32008, -32600),
    // AuthenticatedExtendedCardNotConfigured (0.3): not an operation of 0.1.
    (Version::V0_1, -32007, -32004),
    // InvalidAgentResponse (0.3): 0.1 calls that an internal error.
    (Version::V0_1, -32006, -32603),
];

/// The code a client of `client`'s version gets for an agent's `code`.
pub fn code_for(client: Version, code: i64) -> i64 {
    NEAREST
        .iter()
        .find(|(v, from, _)| *v == client && *from == code)
        .map_or(code, |(_, _, to)| *to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_a_version_lacks_are_said_by_their_nearest_meaning() {
        assert_eq!(code_for(Version::V0_3, -32009), -32004);
        assert_eq!(code_for(Version::V0_3, -32008), -32600);
        assert_eq!(code_for(Version::V0_1, -32006), -32603);
        assert_eq!(code_for(Version::V1_0, -32009), -32009);
        assert_eq!(code_for(Version::V0_3, -32001), -32001);
        assert_eq!(
            code_for(Version::V0_3, -32050),
            -32050,
            "the gateway's own are kept"
        );
    }
}
