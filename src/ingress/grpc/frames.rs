//! What a gRPC front door needs to pass a call through to an agent that
//! speaks its service (`crate::egress::grpc::pass`): the client's frames read
//! whole before tonic decodes them (routing reads the decoded message; the
//! agent gets the frames as they came), and the slot where the agent's own
//! answer waits for the front door, which answers with it instead of with
//! what tonic would say.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::Response;
use hyper::body::Incoming;
use tonic::Status;

use crate::egress::grpc::GrpcEncoded;
use crate::http::body::Body;

/// The call's frames, whole: at most `limit` bytes of message and its
/// frame head, else RESOURCE_EXHAUSTED; and one whole frame
/// ([`check_frame`]).
pub(crate) async fn frames_of(
    body: Incoming,
    headers: &http::HeaderMap,
    limit: usize,
) -> Result<Bytes, Status> {
    use crate::http::body::{read_to_limit, ReadError};
    let frames = match read_to_limit(body, limit.saturating_add(5)).await {
        Ok(read) => read,
        Err(ReadError::TooLarge) => {
            return Err(Status::resource_exhausted(format!(
                "the message is over limits.max_body_bytes ({limit} bytes)"
            )))
        }
        Err(ReadError::Body(e)) => {
            return Err(Status::cancelled(format!("the request broke off: {e}")))
        }
    };
    let encoding = headers.get("grpc-encoding").map(|v| v.as_bytes());
    check_frame(&frames, encoding)?;
    Ok(frames)
}

/// Every A2A RPC takes one request message: one gRPC frame, a flag byte (0
/// as it is, 1 compressed), a 4-byte big-endian length, then that many
/// bytes. A body that is not that is the client's error, reported here where
/// the frame is read: INVALID_ARGUMENT, naming what was wrong. A message
/// compressed with an encoding the gateway does not take is UNIMPLEMENTED,
/// as gRPC says (none is taken: `grpc-accept-encoding` is identity).
pub(crate) fn check_frame(frames: &[u8], encoding: Option<&[u8]>) -> Result<(), Status> {
    let Some((head, message)) = frames.split_first_chunk::<5>() else {
        let why = match frames.len() {
            0 => "the request has no message (the body is empty)".to_string(),
            n => format!("the body is not a gRPC frame: {n} bytes, short of the 5-byte frame head"),
        };
        return Err(Status::invalid_argument(why));
    };
    let [flag, length @ ..] = *head;
    let length = u32::from_be_bytes(length) as usize;
    match (flag, encoding) {
        (0, _) => {}
        (1, None | Some(b"identity")) => {
            return Err(Status::invalid_argument(
                "the message is flagged compressed, but no grpc-encoding says how",
            ))
        }
        (1, Some(other)) => {
            let other = String::from_utf8_lossy(other);
            let shown: String = other.chars().take(32).collect();
            return Err(Status::unimplemented(format!(
                "grpc-encoding '{}' is not taken here: send the message uncompressed",
                shown.escape_default()
            )));
        }
        (flag, _) => {
            let why = format!("the frame's compressed flag is {flag}, where gRPC has 0 or 1");
            return Err(Status::invalid_argument(why));
        }
    }
    match message.len().cmp(&length) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Less => Err(Status::invalid_argument(format!(
            "the frame's length prefix says {length} bytes, but the body holds {} after it",
            message.len()
        ))),
        std::cmp::Ordering::Greater => Err(Status::invalid_argument(format!(
            "the body holds {} bytes after its one message: this RPC takes one request message",
            message.len() - length
        ))),
    }
}

/// Where the agent's own answer to a passed-through call is kept.
#[derive(Clone, Default)]
pub(crate) struct KeptAnswer(Arc<Mutex<Option<Response<Body>>>>);

impl KeptAnswer {
    /// The answer, unless it is the agent's own, passed through: that one
    /// is kept here.
    pub(crate) fn unless_passed(&self, response: Response<Body>) -> Option<Response<Body>> {
        if response.extensions().get::<GrpcEncoded>().is_none() {
            return Some(response);
        }
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(response);
        }
        None
    }

    /// The agent's own answer if one was kept, else tonic's.
    pub(crate) fn or(&self, answered: Response<Body>) -> Response<Body> {
        let kept = self.0.lock().ok().and_then(|mut slot| slot.take());
        kept.unwrap_or(answered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn check(frames: &[u8], encoding: Option<&str>) -> Result<(), (Code, String)> {
        check_frame(frames, encoding.map(str::as_bytes))
            .map_err(|s| (s.code(), s.message().to_string()))
    }

    #[test]
    fn one_whole_frame_passes() {
        assert_eq!(check(b"\0\0\0\0\x02ab", None), Ok(()));
        assert_eq!(check(b"\0\0\0\0\0", None), Ok(()));
        // Flagged 0, the encoding does not matter.
        assert_eq!(check(b"\0\0\0\0\x01a", Some("gzip")), Ok(()));
    }

    #[test]
    fn each_framing_fault_is_invalid_argument_naming_it() {
        for (frames, encoding, says) in [
            (&b""[..], None, "no message"),
            (b"{\"a\"", None, "not a gRPC frame"),
            (
                b"\0\0\0\0\x09abc",
                None,
                "says 9 bytes, but the body holds 3",
            ),
            (b"\0\0\0\0\x01ab", None, "1 bytes after its one message"),
            (b"\x01\0\0\0\x01a", None, "no grpc-encoding"),
            (b"\x01\0\0\0\x01a", Some("identity"), "no grpc-encoding"),
            (b"\x07\0\0\0\x01a", None, "compressed flag is 7"),
        ] {
            let (code, message) = check(frames, encoding).unwrap_err();
            assert_eq!(code, Code::InvalidArgument, "{frames:?}: {message}");
            assert!(message.contains(says), "{frames:?}: {message}");
        }
    }

    #[test]
    fn an_encoding_not_taken_is_unimplemented() {
        let (code, message) = check(b"\x01\0\0\0\x01a", Some("gzip")).unwrap_err();
        assert_eq!(code, Code::Unimplemented);
        assert!(message.contains("'gzip'"), "{message}");
    }
}
