//! A body that passes every frame through untouched while keeping a
//! bounded copy, handed to a callback when the body ends cleanly. Used to
//! learn task ownership from unary answers without delaying them.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

/// What has been kept of the body so far. Most answers come in one frame:
/// that frame is kept by reference (no copy); a second frame starts a copy.
enum Kept {
    Nothing,
    One(Bytes),
    Copied(BytesMut),
    /// Longer than the cap: passed on, not seen.
    TooLong,
}

impl Kept {
    fn add(&mut self, data: &Bytes, cap: usize) {
        let len = match self {
            Kept::Nothing => 0,
            Kept::One(first) => first.len(),
            Kept::Copied(copy) => copy.len(),
            Kept::TooLong => return,
        };
        if len + data.len() > cap {
            *self = Kept::TooLong;
            return;
        }
        match std::mem::replace(self, Kept::TooLong) {
            Kept::Nothing => *self = Kept::One(data.clone()),
            Kept::One(first) => {
                let mut copy = BytesMut::with_capacity(first.len() + data.len());
                copy.extend_from_slice(&first);
                copy.extend_from_slice(data);
                *self = Kept::Copied(copy);
            }
            Kept::Copied(mut copy) => {
                copy.extend_from_slice(data);
                *self = Kept::Copied(copy);
            }
            Kept::TooLong => {}
        }
    }

    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Kept::Nothing => Some(&[]),
            Kept::One(first) => Some(first),
            Kept::Copied(copy) => Some(copy),
            Kept::TooLong => None,
        }
    }
}

pin_project! {
    /// The callback is a type parameter, not a box: one allocation a call
    /// fewer (the body itself is boxed once, whole).
    pub struct Observed<B, F> {
        #[pin]
        inner: B,
        kept: Kept,
        cap: usize,
        on_end: Option<F>,
    }
}

impl<B, F: FnOnce(&[u8])> Observed<B, F> {
    /// Keeps at most `cap` bytes; a longer body is passed on but not seen.
    pub fn new(inner: B, cap: usize, on_end: F) -> Self {
        Self {
            inner,
            kept: Kept::Nothing,
            cap,
            on_end: Some(on_end),
        }
    }
}

/// Hands what was kept to the callback, once.
fn report<F: FnOnce(&[u8])>(kept: &mut Kept, on_end: &mut Option<F>) {
    if let (Some(bytes), Some(f)) = (kept.bytes(), on_end.take()) {
        f(bytes);
    }
    *kept = Kept::TooLong;
}

impl<B: Body<Data = Bytes>, F: FnOnce(&[u8])> Body for Observed<B, F> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.kept.add(data, *this.cap);
                }
                // hyper stops polling a body whose length it knows once
                // `is_end_stream` is true, so the final `None` may never come.
                if this.inner.is_end_stream() {
                    report(this.kept, this.on_end);
                }
            }
            Poll::Ready(None) => report(this.kept, this.on_end),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full};
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn passes_bytes_and_reports_the_copy() {
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let body = Observed::new(Full::new(Bytes::from_static(b"hello")), 10, move |b| {
            *s.lock().unwrap() = Some(b.to_vec());
        });
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"hello");
        assert_eq!(seen.lock().unwrap().as_deref(), Some(&b"hello"[..]));
    }

    #[tokio::test]
    async fn reports_when_the_last_frame_ends_the_body() {
        // Polled as hyper does: stop as soon as the body says it has ended.
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let mut body = Observed::new(Full::new(Bytes::from_static(b"abc")), 10, move |b| {
            *s.lock().unwrap() = Some(b.to_vec());
        });
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "abc");
        assert!(body.is_end_stream());
        assert_eq!(seen.lock().unwrap().as_deref(), Some(&b"abc"[..]));
    }

    #[tokio::test]
    async fn reports_a_body_of_several_frames_whole() {
        let seen = Arc::new(Mutex::new(None));
        let s = seen.clone();
        let frames = ["ab", "cd", "e"].map(|c| {
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(c.as_bytes())))
        });
        let inner = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        let body = Observed::new(inner, 10, move |b| {
            *s.lock().unwrap() = Some(b.to_vec());
        });
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"abcde");
        assert_eq!(seen.lock().unwrap().as_deref(), Some(&b"abcde"[..]));
    }

    #[tokio::test]
    async fn too_long_is_passed_but_not_reported() {
        let seen = Arc::new(Mutex::new(false));
        let s = seen.clone();
        let body = Observed::new(Full::new(Bytes::from_static(b"hello")), 3, move |_| {
            *s.lock().unwrap() = true
        });
        assert_eq!(&body.collect().await.unwrap().to_bytes()[..], b"hello");
        assert!(!*seen.lock().unwrap());
    }
}
