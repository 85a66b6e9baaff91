//! The HTTP+JSON front door. A placed REST call (`crate::a2a::rest`) goes
//! the JSON-RPC call's way as the 1.0 call it is (authentication,
//! validation, routing, limits, the version bridge): this decodes it into
//! that call's method and params. Its answer is encoded in the REST binding on the way back
//! (`crate::relay::rest`).

use bytes::Bytes;
use http::request::Parts;
use http::HeaderValue;
use serde_json::Value;

use crate::a2a::rest::{with_body, Refused, RestRoute};
use crate::a2a::Version;
use crate::bridge::headers::VERSION as A2A_VERSION;
use crate::bridge::v03;
use crate::call::intake::check_content_type;
use crate::call::Decoded;
use crate::egress::rest::RestRequest;
use crate::http::error::GatewayError;

/// The placed call decoded (its body joins the path's params), and the
/// call as sent. A route without a body must come without one.
pub(crate) fn request(
    parts: &mut Parts,
    bytes: Bytes,
    mut placed: RestRoute,
) -> Result<(Decoded, Option<RestRequest>), GatewayError> {
    // The 1.0 routes are 1.0 calls, whether or not the client says so: an
    // agent reads a call without `A2A-Version` as 0.3. A 0.3 route's call
    // is written in 1.0 here, headers too (`A2A-Extensions`).
    match placed.v03 {
        true => crate::bridge::headers::for_agent(&mut parts.headers, Version::V1_0),
        false => {
            (parts.headers.entry(A2A_VERSION)).or_insert(HeaderValue::from_static("1.0"));
        }
    }
    if !bytes.is_empty() {
        if !placed.takes_body {
            let message = format!("{} takes no body", parts.method);
            return Err(GatewayError::Rpc {
                code: crate::a2a::jsonrpc::INVALID_REQUEST,
                message,
            });
        }
        check_content_type(&parts.headers).map_err(GatewayError::UnsupportedMediaType)?;
        if body_alone(&placed, &bytes)? {
            let method = placed.method;
            let call = Decoded::Params {
                method,
                params: bytes.clone(),
            };
            let sent = RestRequest {
                path: placed.path,
                body: bytes,
            };
            return Ok((call, Some(sent)));
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(not_json)?;
        let value = match placed.v03 {
            true => v03::rest::body_in(placed.method.family, value)
                .map_err(|e| GatewayError::InvalidParams(e.to_string()))?,
            false => value,
        };
        with_body(&mut placed, value).map_err(|r| refused(r, parts))?;
    }
    let params = serde_json::to_vec(&placed.params)
        .map_err(|e| GatewayError::Internal(format!("the call could not be encoded: {e}")))?;
    let call = Decoded::Params {
        method: placed.method,
        params: Bytes::from(params),
    };
    let sent = Some(RestRequest {
        path: placed.path,
        body: bytes,
    });
    Ok((call, sent))
}

fn not_json(e: serde_json::Error) -> GatewayError {
    GatewayError::Rpc {
        code: crate::a2a::jsonrpc::PARSE_ERROR,
        message: format!("the body is not JSON: {e}"),
    }
}

/// Whether the call's params are the 1.0 body alone (`message:send` and
/// `message:stream`: no path ids, no query): the body's bytes are the
/// params as they are, once checked to be one JSON object, rather than
/// parsed into a tree and written out again. This made a REST send cost
/// 1.20x a JSON-RPC one in gateway CPU, at the budget's edge (bench/rest.sh).
fn body_alone(placed: &RestRoute, body: &Bytes) -> Result<bool, GatewayError> {
    let alone = !placed.v03 && placed.params.as_object().is_some_and(|p| p.is_empty());
    if !alone {
        return Ok(false);
    }
    let raw: &serde_json::value::RawValue = serde_json::from_slice(body).map_err(not_json)?;
    if !raw.get().starts_with('{') {
        return Err(GatewayError::InvalidParams(
            "the body must be a JSON object".into(),
        ));
    }
    Ok(true)
}

/// Why a REST call could not be placed, as the gateway's error.
pub fn refused(refused: Refused, parts: &Parts) -> GatewayError {
    let path = || parts.uri.path().chars().take(128).collect();
    match refused {
        Refused::NotFound => GatewayError::NotFound {
            method: parts.method.to_string(),
            path: path(),
            hint: "see the HTTP+JSON routes of A2A 1.0",
        },
        Refused::MethodNotAllowed(allow) => GatewayError::MethodNotAllowed {
            method: parts.method.to_string(),
            path: path(),
            allow,
        },
        Refused::Invalid(why) => GatewayError::InvalidParams(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_body_is_the_params_as_it_is() {
        let placed = crate::a2a::rest::place(&http::Method::POST, "/message:send", None).unwrap();
        let body = Bytes::from_static(b" \n {\"message\": {\"x\": 1}} \n");
        assert!(body_alone(&placed, &body).unwrap());
        let not_object = body_alone(&placed, &Bytes::from_static(b" [1]"));
        assert!(matches!(not_object, Err(GatewayError::InvalidParams(_))));
        let two = body_alone(&placed, &Bytes::from_static(b"{} {}"));
        assert!(
            matches!(two, Err(GatewayError::Rpc { .. })),
            "one value only"
        );
        let with_id = crate::a2a::rest::place(&http::Method::GET, "/tasks/t", None).unwrap();
        assert!(!body_alone(&with_id, &Bytes::from_static(b"{}")).unwrap());
    }
}
