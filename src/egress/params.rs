//! What a call to an agent's HTTP+JSON or gRPC interface needs first
//! (`super::rest`, `super::grpc`): the call's params as a value to encode
//! (when the bridge did not translate them into one already); and why a
//! 0.3 translation of them was refused.

use serde_json::Value;

use crate::bridge::Untranslatable;
use crate::http::error::GatewayError;
use serde_json::value::RawValue;

/// The call's params as sent, as a value to encode anew (none when it has
/// none). They were read on the way in, so a failure here is the gateway's.
pub(crate) fn params_value(raw: Option<&RawValue>) -> Result<Option<Value>, GatewayError> {
    let read = |raw: &RawValue| {
        serde_json::from_str(raw.get()).map_err(|e| {
            GatewayError::Internal(format!("the call's params did not read again: {e}"))
        })
    };
    raw.map(read).transpose()
}

/// A 0.3 translation's refusal: a method 0.3 does not have is an
/// unsupported operation; anything else is the params' fault, as
/// `refused` says it for the agent's binding.
pub(crate) fn refusal(e: Untranslatable, refused: impl Fn(String) -> GatewayError) -> GatewayError {
    match e.field.as_str() {
        "method" => GatewayError::UnsupportedOperation(e.why),
        _ => refused(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_are_read_again_and_none_stays_none() {
        let raw = RawValue::from_string(r#"{"id":"t1"}"#.into()).unwrap();
        assert_eq!(params_value(Some(&raw)).unwrap(), Some(json!({"id": "t1"})));
        assert_eq!(params_value(None).unwrap(), None);
    }

    #[test]
    fn a_missing_method_is_unsupported_and_other_refusals_are_the_params() {
        let refused = |why: String| GatewayError::InvalidParams(format!("over REST: {why}"));
        let method = Untranslatable::new("method", "0.3 has no ListTasks");
        match refusal(method, refused) {
            GatewayError::UnsupportedOperation(why) => assert_eq!(why, "0.3 has no ListTasks"),
            other => panic!("not unsupported: {other:?}"),
        }
        let field = Untranslatable::new("params.message", "not an object");
        match refusal(field, refused) {
            GatewayError::InvalidParams(why) => {
                assert!(
                    why.starts_with("over REST: ") && why.contains("params.message"),
                    "{why}"
                )
            }
            other => panic!("not the params' fault: {other:?}"),
        }
    }
}
