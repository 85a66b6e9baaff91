//! A body that passes every frame through untouched while keeping a
//! bounded copy, handed to a callback when the body ends cleanly. Used to
//! learn task ownership from unary answers without delaying them.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

type OnEnd = Box<dyn FnOnce(&[u8]) + Send>;

pin_project! {
    pub struct Observed<B> {
        #[pin]
        inner: B,
        copy: Option<BytesMut>,
        cap: usize,
        on_end: Option<OnEnd>,
    }
}

impl<B> Observed<B> {
    /// Copies at most `cap` bytes; a longer body is passed on but not seen.
    pub fn new(inner: B, cap: usize, on_end: impl FnOnce(&[u8]) + Send + 'static) -> Self {
        Self {
            inner,
            copy: Some(BytesMut::new()),
            cap,
            on_end: Some(Box::new(on_end)),
        }
    }
}

impl<B: Body<Data = Bytes>> Body for Observed<B> {
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
                if let (Some(data), Some(copy)) = (frame.data_ref(), this.copy.as_mut()) {
                    if copy.len() + data.len() <= *this.cap {
                        copy.extend_from_slice(data);
                    } else {
                        *this.copy = None;
                    }
                }
                // hyper stops polling a body whose length it knows once
                // `is_end_stream` is true, so the final `None` may never come.
                if this.inner.is_end_stream() {
                    if let (Some(f), Some(copy)) = (this.on_end.take(), this.copy.take()) {
                        f(&copy);
                    }
                }
            }
            Poll::Ready(None) => {
                if let (Some(f), Some(copy)) = (this.on_end.take(), this.copy.take()) {
                    f(&copy);
                }
            }
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
