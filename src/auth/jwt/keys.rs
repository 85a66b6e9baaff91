//! Whether a public key is fit to verify an algorithm, for static keys and
//! JWKS keys alike.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};

/// RSA moduli shorter than this are refused (NIST SP 800-131A).
const MIN_RSA_BITS: usize = 2048;

/// Base64url without padding (RFC 7515 §2).
pub(super) fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

pub(super) fn family_name(alg: Algorithm) -> &'static str {
    match alg.family() {
        AlgorithmFamily::Hmac => "HMAC",
        AlgorithmFamily::Rsa => "RSA",
        AlgorithmFamily::Ec => "EC",
        AlgorithmFamily::Ed => "Ed25519",
    }
}

/// Whether a public key can verify `alg`: it parses, RSA moduli are at least
/// 2048 bits, EC curves match the algorithm. Shared with JWKS keys.
pub(super) fn check_public_key(key: &DecodingKey, alg: Algorithm) -> Result<(), String> {
    let family = family_name(alg);
    if key.family() != alg.family() {
        return Err(format!("is not a {family} key"));
    }
    if alg.family() == AlgorithmFamily::Hmac {
        return Ok(());
    }
    let jwk = Jwk::from_decoding_key(key, Some(alg))
        .map_err(|_| format!("is not a valid {family} public key"))?;
    match &jwk.algorithm {
        AlgorithmParameters::RSA(p) => {
            let bits = b64url_decode(&p.n).map_or(0, |n| modulus_bits(&n));
            if bits < MIN_RSA_BITS {
                return Err(format!(
                    "the RSA key has {bits} bits; at least {MIN_RSA_BITS} are required"
                ));
            }
        }
        AlgorithmParameters::EllipticCurve(p) => {
            let curve_ok = matches!(
                (alg, &p.curve),
                (Algorithm::ES256, EllipticCurve::P256) | (Algorithm::ES384, EllipticCurve::P384)
            );
            if !curve_ok {
                return Err(format!("the EC key's curve does not fit {alg:?}"));
            }
        }
        _ => {}
    }
    // Building a verifier parses EC points and Ed25519 keys; the signature
    // is a dummy, only a key error matters.
    jsonwebtoken::crypto::verify("AAAA", b"probe", key, alg)
        .map(|_| ())
        .map_err(|_| format!("is not a valid {family} public key"))
}

fn modulus_bits(n: &[u8]) -> usize {
    let Some(first) = n.iter().position(|b| *b != 0) else {
        return 0;
    };
    (n.len() - first - 1) * 8 + (8 - n[first].leading_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulus_bits_counts_from_the_top_bit() {
        assert_eq!(modulus_bits(&[0, 0x01, 0xff]), 9);
        assert_eq!(modulus_bits(&[0x80, 0]), 16);
        assert_eq!(modulus_bits(&[0, 0]), 0);
    }
}
