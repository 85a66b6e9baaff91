//! The one response body type every handler returns, and its constructors.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Frame;
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

/// Says the body is JSON (`Content-Type: application/json`).
pub fn set_json(headers: &mut HeaderMap) {
    let json = http::HeaderValue::from_static("application/json");
    headers.insert(http::header::CONTENT_TYPE, json);
}

/// The bytes a `Full` body holds: it gives them up at once, whole.
pub async fn full_bytes(mut body: Full<Bytes>) -> Bytes {
    match body.frame().await {
        Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
        Some(Err(never)) => match never {},
        None => Bytes::new(),
    }
}

/// Why [`read_to_limit`] stopped.
#[derive(Debug)]
pub enum ReadError<E> {
    /// More than the limit arrived.
    TooLarge,
    Body(E),
}

/// Reads a whole body of at most `max` bytes (trailers are dropped): the
/// one bounded reader of requests and answers. A body that comes as one
/// frame, as a small request does, is kept as it came: http-body-util's
/// `collect` queues every frame (an allocation per call).
pub async fn read_to_limit<B>(mut body: B, max: usize) -> Result<Bytes, ReadError<B::Error>>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    // Read before the first frame: a body's hint is what is still to come.
    let declared = body.size_hint().lower();
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
            let mut both = BytesMut::with_capacity(joined_capacity(len, declared, max));
            both.extend_from_slice(&earlier);
            both.extend_from_slice(&data);
            joined = Some(both);
        } else {
            first = Some(data);
        }
    }
    Ok(joined.map(BytesMut::freeze).or(first).unwrap_or_default())
}

/// [`read_to_limit`], keeping the trailers (a gRPC answer's status).
pub async fn read_with_trailers<B>(
    body: B,
    max: usize,
) -> Result<(Bytes, Option<HeaderMap>), ReadError<B::Error>>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let mut trailers = None;
    let keeping = KeepTrailers {
        body,
        trailers: &mut trailers,
    };
    let bytes = read_to_limit(keeping, max).await?;
    Ok((bytes, trailers))
}

/// A body whose trailers frame is kept aside, and which ends there. A
/// wrapper rather than a second reader: [`read_to_limit`]'s loop is on
/// every call's path, and measured dearer with the trailers kept in it.
struct KeepTrailers<'a, B> {
    body: B,
    trailers: &'a mut Option<HeaderMap>,
}

impl<B: http_body::Body<Data = Bytes> + Unpin> http_body::Body for KeepTrailers<'_, B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
            Some(Ok(frame)) => match frame.into_trailers() {
                Ok(trailers) => {
                    *this.trailers = Some(trailers);
                    Poll::Ready(None)
                }
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            },
            other => Poll::Ready(other),
        }
    }
}

/// The buffer for a body that came in more than one frame: as long as the
/// body said it would be, so that it is not grown by doubling, each step
/// copying all that was read so far. A 64 KiB HTTP/2 request comes in many
/// DATA frames, and growing spent more instructions than the rest of the
/// call (bench/profile.md). Never more than `max` or [`UPFRONT_LIMIT`],
/// never less than what has arrived; past that it grows as data comes.
fn joined_capacity(arrived: usize, declared: u64, max: usize) -> usize {
    usize::try_from(declared)
        .unwrap_or(usize::MAX)
        .min(max)
        .min(UPFRONT_LIMIT)
        .max(arrived)
}

/// The most a declared length reserves before its bytes arrive: a client
/// that declares a large body and then stalls holds this much, not the whole
/// body limit. Above it, the copies of doubling are small next to the body.
const UPFRONT_LIMIT: usize = 1 << 20;

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
    async fn trailers_are_kept_apart_from_the_bytes() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("5"));
        let frames: Vec<Result<Frame<Bytes>, BoxError>> = vec![
            Ok(Frame::data(Bytes::from_static(b"ab"))),
            Ok(Frame::data(Bytes::from_static(b"cd"))),
            Ok(Frame::trailers(trailers)),
        ];
        let body = StreamBody::new(futures_util::stream::iter(frames));
        let (bytes, kept) = read_with_trailers(body, 4).await.unwrap();
        assert_eq!(&bytes[..], b"abcd");
        assert_eq!(kept.unwrap()["grpc-status"], "5");
        let (bytes, kept) = read_with_trailers(chunks(&["abc"]), 4).await.unwrap();
        assert_eq!((&bytes[..], kept), (&b"abc"[..], None));
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

    #[test]
    fn a_split_body_is_joined_in_a_buffer_of_its_declared_length() {
        assert_eq!(joined_capacity(3000, 65_536, 1 << 20), 65_536);
        // Nothing declared (chunked): what arrived, then grown as needed.
        assert_eq!(joined_capacity(3000, 0, 1 << 20), 3000);
        // A declaration is never trusted past the body limit, nor past what
        // is reserved before the bytes arrive.
        assert_eq!(joined_capacity(3000, u64::MAX, 1 << 18), 1 << 18);
        assert_eq!(joined_capacity(3000, 8 << 20, 10 << 20), UPFRONT_LIMIT);
        assert_eq!(joined_capacity(2 << 20, 8 << 20, 10 << 20), 2 << 20);
        assert_eq!(joined_capacity(3000, 2000, 1 << 20), 3000);
    }

    /// A body in frames that says how long it is, as hyper's does when the
    /// request has a `content-length`.
    struct Declared {
        frames: std::collections::VecDeque<Bytes>,
        declared: u64,
    }

    impl http_body::Body for Declared {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
            std::task::Poll::Ready(
                self.frames
                    .pop_front()
                    .map(|b| Ok(http_body::Frame::data(b))),
            )
        }

        fn size_hint(&self) -> http_body::SizeHint {
            http_body::SizeHint::with_exact(self.declared)
        }
    }

    #[tokio::test]
    async fn a_body_is_read_whole_whatever_length_it_declared() {
        let text: Vec<u8> = (0..70_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for declared in [0, 10, 70_000, 100_000] {
            let body = Declared {
                frames: text.chunks(16_384).map(Bytes::copy_from_slice).collect(),
                declared,
            };
            let read = read_to_limit(body, 1 << 20).await.unwrap();
            assert_eq!(&read[..], &text[..], "declared {declared}");
        }
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
