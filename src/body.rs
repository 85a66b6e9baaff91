//! The one response body type every handler returns, and its constructors.

use bytes::{Bytes, BytesMut};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Empty, Full};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Boxed so unary bodies, relayed upstream bodies and SSE relays share one
/// type; unsync because hyper's `Incoming` only needs `Send`.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// Why [`read_to_limit`] stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    /// More than the limit arrived.
    TooLarge,
    Body(E),
}

/// Reads a whole body of at most `max` bytes (trailers are dropped). A body
/// that comes as one frame, as a small request does, is kept as it came:
/// http-body-util's `collect` queues every frame (an allocation per call).
pub async fn read_to_limit<B>(mut body: B, max: usize) -> Result<Bytes, ReadError<B::Error>>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(ReadError::Body)?.into_data() else {
            continue;
        };
        len = len.saturating_add(data.len());
        if len > max {
            return Err(ReadError::TooLarge);
        }
        if let Some(joined) = &mut joined {
            joined.extend_from_slice(&data);
        } else if let Some(earlier) = first.take() {
            let mut both = BytesMut::with_capacity(len);
            both.extend_from_slice(&earlier);
            both.extend_from_slice(&data);
            joined = Some(both);
        } else {
            first = Some(data);
        }
    }
    Ok(joined.map(BytesMut::freeze).or(first).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;

    fn chunks(
        parts: &[&'static str],
    ) -> impl http_body::Body<Data = Bytes, Error = BoxError> + Unpin {
        let frames: Vec<Result<http_body::Frame<Bytes>, BoxError>> = parts
            .iter()
            .map(|p| Ok(http_body::Frame::data(Bytes::from_static(p.as_bytes()))))
            .collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn reads_one_frame_or_many_up_to_the_limit() {
        let one = read_to_limit(chunks(&["hello"]), 5).await.unwrap();
        assert_eq!(&one[..], b"hello");
        let many = read_to_limit(chunks(&["he", "", "ll", "o"]), 5)
            .await
            .unwrap();
        assert_eq!(&many[..], b"hello");
        let none = read_to_limit(chunks(&[]), 5).await.unwrap();
        assert!(none.is_empty());
        assert!(matches!(
            read_to_limit(chunks(&["hel", "lo!"]), 5).await,
            Err(ReadError::TooLarge)
        ));
        assert!(matches!(
            read_to_limit(chunks(&["hello!"]), 5).await,
            Err(ReadError::TooLarge)
        ));
    }

    #[tokio::test]
    async fn a_failing_body_says_so() {
        let frames: Vec<Result<http_body::Frame<Bytes>, BoxError>> = vec![
            Ok(http_body::Frame::data(Bytes::from_static(b"ab"))),
            Err("connection reset".into()),
        ];
        let body = StreamBody::new(futures_util::stream::iter(frames));
        match read_to_limit(body, 100).await {
            Err(ReadError::Body(e)) => assert_eq!(e.to_string(), "connection reset"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
