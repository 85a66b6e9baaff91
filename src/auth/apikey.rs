//! API keys in a header, query parameter or cookie, compared as SHA-256
//! digests in constant time: the gateway never holds a key in the clear
//! longer than it takes to hash it.

use http::request::Parts;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::basic::Outcome;
use super::config::KeyLocation;

/// Finds the presented key and returns the id of the key it matches.
pub fn verify(
    parts: &Parts,
    location: KeyLocation,
    param: &str,
    keys: &[(String, [u8; 32])],
) -> Outcome {
    let Some(presented) = presented(parts, location, param) else {
        return Outcome::Missing;
    };
    let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    // Every configured key is compared, so the time taken does not say which
    // (or whether any) matched.
    let mut found: Option<&str> = None;
    for (id, expected) in keys {
        if bool::from(digest.ct_eq(expected)) {
            found = Some(id);
        }
    }
    match found {
        Some(id) => Outcome::Valid(id.to_string()),
        None => Outcome::Invalid,
    }
}

fn presented(parts: &Parts, location: KeyLocation, param: &str) -> Option<String> {
    let value = match location {
        KeyLocation::Header => parts.headers.get(param)?.to_str().ok()?.trim().to_string(),
        KeyLocation::Query => query_value(parts.uri.query()?, param)?,
        KeyLocation::Cookie => cookie_value(&parts.headers, param)?,
    };
    (!value.is_empty()).then_some(value)
}

/// A query parameter's value (percent-decoded).
pub fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

/// A cookie's value from every `Cookie` header.
pub fn cookie_value(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k == name).then(|| v.trim_matches('"').to_string())
        })
}

pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 3 <= bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn keys() -> Vec<(String, [u8; 32])> {
        vec![
            ("ci".into(), Sha256::digest(b"s3cret").into()),
            ("ops".into(), Sha256::digest(b"other").into()),
        ]
    }

    #[test]
    fn header_query_and_cookie() {
        let k = keys();
        assert_eq!(
            verify(
                &parts("/", &[("x-api-key", "s3cret")]),
                KeyLocation::Header,
                "x-api-key",
                &k
            ),
            Outcome::Valid("ci".into())
        );
        assert_eq!(
            verify(
                &parts("/?a=1&api_key=oth%65r", &[]),
                KeyLocation::Query,
                "api_key",
                &k
            ),
            Outcome::Valid("ops".into())
        );
        assert_eq!(
            verify(
                &parts("/", &[("cookie", "x=1; key=s3cret")]),
                KeyLocation::Cookie,
                "key",
                &k
            ),
            Outcome::Valid("ci".into())
        );
        assert_eq!(
            verify(
                &parts("/", &[("x-api-key", "wrong")]),
                KeyLocation::Header,
                "x-api-key",
                &k
            ),
            Outcome::Invalid
        );
        assert_eq!(
            verify(&parts("/", &[]), KeyLocation::Header, "x-api-key", &k),
            Outcome::Missing
        );
        assert_eq!(
            verify(&parts("/?api_key=", &[]), KeyLocation::Query, "api_key", &k),
            Outcome::Missing
        );
    }

    #[test]
    fn percent_decoding_is_total() {
        assert_eq!(percent_decode("a%20b+c%"), "a b c%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
