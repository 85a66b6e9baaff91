//! A streaming call (`message/stream`, `tasks/resubscribe`) to an `http://`
//! replica over HTTP/1.1, on a connection that hyper does not hold.
//!
//! Why: an SSE stream may stay open for hours with nothing to say, and a
//! gateway may hold tens of thousands of them. hyper's HTTP/1.1 client
//! connection keeps ~26 KiB for as long as it lives (its request channel,
//! an 8 KiB write buffer and an 8 KiB read buffer; none can be sized down:
//! bench/profile.md), ~14 KiB of it resident, and a stream needs a
//! connection of its own. Here the answer's body reads the socket itself,
//! only once it is readable, into a buffer let go as soon as what was read
//! has been handed on: an idle stream holds its socket and a few words.
//!
//! What is written is what hyper writes for the same call: the request
//! line, the headers as they are, a `content-length`, the body. The answer's
//! head is parsed by `httparse` (hyper's own parser), 1xx heads skipped; its
//! body is framed by [`super::framing`]. A connection whose answer ended
//! cleanly and may be kept goes back to the pool ([`Home`]). Unary calls
//! stay on hyper: their buffers live for one call, not for hours.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::request::Parts;
use http::{HeaderMap, Response, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::framing::{self, Decoder, Framing, Malformed};
use crate::http::body::BoxError;

/// Most header fields an answer's head may have (hyper's default too).
const MAX_HEADERS: usize = 100;
/// Largest answer head read.
const MAX_HEAD: usize = 64 * 1024;
/// Room asked for at each read of the socket.
const READ_SIZE: usize = 8 * 1024;

/// Why a streaming call failed. Once the request has been written, the
/// agent may have acted on it. No `source`: `upstream::failure` reads the
/// variant itself.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the request or reading the answer failed.
    #[error("connection error: {0}")]
    Io(io::Error),
    /// The agent closed the connection before a whole answer head.
    #[error("connection closed before message completed")]
    Closed,
    /// The answer was not HTTP/1.1 as the gateway reads it.
    #[error("invalid HTTP answer: {0}")]
    Malformed(Malformed),
    /// The answer's head was larger than the gateway reads.
    #[error("answer head larger than {MAX_HEAD} bytes")]
    HeadTooLarge,
}

impl From<Malformed> for Error {
    fn from(m: Malformed) -> Self {
        Error::Malformed(m)
    }
}

/// Where the bare socket goes when its answer has ended cleanly and the
/// connection may be kept (the pool's list): a closure, so that this file
/// need not know the pool.
pub type Home = Box<dyn FnOnce(TcpStream) + Send>;

/// Writes the call on `io` and reads the answer's head; the body is read
/// as the answer's consumer polls it. `head` is origin-form, `Host` set.
pub async fn call(
    mut io: TcpStream,
    head: &Parts,
    body: &Bytes,
    home: Home,
) -> Result<Response<StreamBody>, Error> {
    io.write_all(&request_bytes(head, body))
        .await
        .map_err(Error::Io)?;
    let (response, rest) = read_head(&mut io).await?;
    let (framing, keep_alive) =
        framing::of_head(response.status(), response.version(), response.headers())?;
    let body = StreamBody {
        io: Some(io),
        decoder: Decoder::new(framing, rest),
        home: keep_alive.then_some(home),
    };
    Ok(response.map(|()| body))
}

/// The request as one write: request line, headers, `content-length`, body.
fn request_bytes(head: &Parts, body: &Bytes) -> Vec<u8> {
    let target = head.uri.path_and_query().map_or("/", |p| p.as_str());
    let fields: usize = (head.headers.iter())
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum();
    let mut out = Vec::with_capacity(64 + target.len() + fields + body.len());
    out.extend_from_slice(head.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &head.headers {
        // The framing is the gateway's: a length written below from the
        // body itself, as hyper does.
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
    out
}

/// Reads until a final (non-1xx) answer head; returns it and whatever was
/// read past it.
async fn read_head(io: &mut TcpStream) -> Result<(Response<()>, BytesMut), Error> {
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    loop {
        if let Some(response) = take_head(&mut buf)? {
            return Ok((response, buf));
        }
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(READ_SIZE);
        }
        if io.read_buf(&mut buf).await.map_err(Error::Io)? == 0 {
            return Err(Error::Closed);
        }
    }
}

/// Takes the final (non-1xx) answer head from the start of `buf`, skipping
/// interim heads; `None` when more must be read. Pure, so the fuzzer drives
/// it (`fuzz/fuzz_targets/agent_answer.rs`). Every limit is on a head's own
/// length, never on how much happened to be read at once, so the outcome
/// does not depend on how the bytes were split.
pub fn take_head(buf: &mut BytesMut) -> Result<Option<Response<()>>, Error> {
    while !buf.is_empty() {
        let Some((used, response)) = parse_head(buf)? else {
            // Not complete within MAX_HEAD bytes: longer than that.
            return match buf.len() >= MAX_HEAD {
                true => Err(Error::HeadTooLarge),
                false => Ok(None),
            };
        };
        if used > MAX_HEAD {
            return Err(Error::HeadTooLarge);
        }
        buf.advance(used);
        match response.status() {
            StatusCode::SWITCHING_PROTOCOLS => {
                return Err(Malformed("unexpected 101 Switching Protocols").into())
            }
            // 100 Continue, 103 Early Hints: the answer is still to come.
            status if status.is_informational() => continue,
            _ => return Ok(Some(response)),
        }
    }
    Ok(None)
}

/// A whole head at the start of `buf` (its length and the head), or `None`
/// when more must be read.
fn parse_head(buf: &[u8]) -> Result<Option<(usize, Response<()>)>, Error> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut fields);
    let used = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Error::HeadTooLarge),
        Err(_) => return Err(Malformed("invalid answer head").into()),
    };
    let status = (parsed.code)
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or(Malformed("invalid status code"))?;
    let version = match parsed.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let mut headers = HeaderMap::with_capacity(parsed.headers.len());
    for field in parsed.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| Malformed("invalid header name"))?;
        let value =
            HeaderValue::from_bytes(field.value).map_err(|_| Malformed("invalid header value"))?;
        headers.append(name, value);
    }
    let mut response = Response::new(());
    *response.status_mut() = status;
    *response.version_mut() = version;
    *response.headers_mut() = headers;
    Ok(Some((used, response)))
}

/// An answer's body, read from its connection as it is polled.
pub struct StreamBody {
    /// `None` once the body has ended or failed.
    io: Option<TcpStream>,
    decoder: Decoder,
    /// Where the connection goes when the body ends cleanly (`None`: it
    /// may not be kept).
    home: Option<Home>,
}

impl std::fmt::Debug for StreamBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamBody")
            .field("framing", &self.decoder.framing())
            .finish_non_exhaustive()
    }
}

impl StreamBody {
    /// Reads what the socket has, without holding a buffer while it has
    /// nothing; `Ok(0)` at the connection's end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(io) = &self.io else {
            return Poll::Ready(Ok(0));
        };
        loop {
            ready!(io.poll_read_ready(cx))?;
            match io.try_read_buf(self.decoder.room(READ_SIZE)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.decoder.release_if_empty(),
                done => return Poll::Ready(done),
            }
        }
    }

    /// The body ended cleanly: the connection goes home if it may.
    fn finish(&mut self) {
        let io = self.io.take();
        if let (Some(io), Some(home), 0) = (io, self.home.take(), self.decoder.buffered()) {
            home(io);
        }
    }

    fn fail(&mut self, e: Error) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.io = None;
        self.home = None;
        Poll::Ready(Some(Err(Box::new(e))))
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            match this.decoder.next_data() {
                Ok(Some(data)) => {
                    // A consumer may stop polling once `is_end_stream` says
                    // so: the connection goes home with the last bytes.
                    if this.decoder.framing() == Framing::Done {
                        this.finish();
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(None) if this.decoder.framing() == Framing::Done => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(m) => return this.fail(m.into()),
            }
            if this.io.is_none() {
                return Poll::Ready(None);
            }
            match ready!(this.poll_fill(cx)) {
                Ok(0) => {
                    this.io = None;
                    this.home = None;
                    if let Err(m) = this.decoder.closed() {
                        return this.fail(m.into());
                    }
                }
                Ok(_) => {}
                Err(e) => return this.fail(Error::Io(e)),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.decoder.framing() == Framing::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.decoder.framing() {
            Framing::Length(n) => SizeHint::with_exact(n),
            Framing::Done => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use http::{header, Request, Uri};
    use http_body_util::{BodyExt, Full};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    use super::super::pool::{self, Pool};
    use super::*;

    /// An agent that reads one request per connection (head and a
    /// `content-length` body), reports it, and writes `answer` in `pieces`.
    async fn agent(
        answer: &'static [u8],
        pieces: usize,
    ) -> (Uri, mpsc::UnboundedReceiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (seen, requests) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    while !is_whole(&request) {
                        let mut buf = [0u8; 1024];
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = seen.send(request);
                    let step = answer.len().div_ceil(pieces.max(1)).max(1);
                    for piece in answer.chunks(step) {
                        if stream.write_all(piece).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    // Held open: a body framed by the close ends when this does.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                });
            }
        });
        (format!("http://{addr}/rpc").parse().unwrap(), requests)
    }

    /// A whole request: its head and as much body as it declares.
    fn is_whole(request: &[u8]) -> bool {
        let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
            return false;
        };
        let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        request.len() >= end + 4 + length
    }

    fn pool(url: &Uri) -> Pool {
        let t = Duration::from_secs(2);
        Pool::for_url(url, t, 4, Duration::from_secs(60)).unwrap()
    }

    fn stream_request() -> Request<Full<Bytes>> {
        Request::builder()
            .method("POST")
            .uri("/rpc?v=1")
            .header(header::HOST, "agent:9000")
            .header(header::ACCEPT, "text/event-stream")
            .header("x-two", "a")
            .header("x-two", "b")
            // A stale length is not written: the body's own is.
            .header(header::CONTENT_LENGTH, "999")
            .body(Full::new(Bytes::from_static(
                b"{\"method\":\"message/stream\"}",
            )))
            .unwrap()
    }

    async fn body_of(response: Response<super::super::answer::Leased>) -> Result<Bytes, BoxError> {
        Ok(response.into_body().collect().await?.to_bytes())
    }

    const SSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        transfer-encoding: chunked\r\n\r\n\
        b\r\ndata: one\n\n\r\nb\r\ndata: two\n\n\r\n0\r\n\r\n";

    #[tokio::test]
    async fn the_request_goes_as_given_and_a_chunked_answer_comes_back_whole() {
        let (url, mut requests) = agent(SSE, 7).await;
        let response = pool(&url).send_stream(stream_request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert_eq!(
            body_of(response).await.unwrap(),
            "data: one\n\ndata: two\n\n"
        );
        let written = requests.recv().await.unwrap();
        let want = "POST /rpc?v=1 HTTP/1.1\r\nhost: agent:9000\r\naccept: text/event-stream\r\n\
            x-two: a\r\nx-two: b\r\ncontent-length: 27\r\n\r\n{\"method\":\"message/stream\"}";
        assert_eq!(String::from_utf8_lossy(&written), want);
    }

    #[tokio::test]
    async fn interim_heads_are_skipped() {
        const ANSWER: &[u8] =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n\
            HTTP/1.1 202 Accepted\r\ncontent-length: 2\r\nx-kept: 1\r\n\r\nok";
        let (url, _requests) = agent(ANSWER, 5).await;
        let response = pool(&url).send_stream(stream_request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        assert_eq!(response.headers()["x-kept"], "1");
        assert!(response.headers().get("link").is_none());
        assert_eq!(body_of(response).await.unwrap(), "ok");
    }

    #[tokio::test]
    async fn a_body_to_the_close_ends_when_the_agent_closes() {
        const ANSWER: &[u8] =
            b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: all\n\n";
        let (url, _requests) = agent(ANSWER, 3).await;
        let response = pool(&url).send_stream(stream_request()).await.unwrap();
        assert_eq!(body_of(response).await.unwrap(), "data: all\n\n");
    }

    async fn failure(answer: &'static [u8]) -> pool::Error {
        let (url, _requests) = agent(answer, 1).await;
        let e = pool(&url).send_stream(stream_request()).await.unwrap_err();
        assert!(e.maybe_delivered(), "written, so perhaps acted on: {e}");
        e
    }

    #[tokio::test]
    async fn an_answer_that_is_not_http_fails_and_says_why() {
        let e = failure(b"SSH-2.0-OpenSSH\r\n\r\n").await;
        assert!(matches!(e, pool::Error::Stream(Error::Malformed(_))), "{e}");
        assert_eq!(e.to_string(), "invalid HTTP answer: invalid answer head");
        let e = failure(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").await;
        assert_eq!(e.to_string(), "invalid HTTP answer: invalid content-length");
        let e = failure(b"HTTP/1.1 101 Switching Protocols\r\n\r\n").await;
        assert!(matches!(e, pool::Error::Stream(Error::Malformed(_))), "{e}");
        let e = failure(b"HTTP/1.1 200 OK\r\n").await;
        assert!(matches!(e, pool::Error::Stream(Error::Closed)), "{e}");
    }

    #[tokio::test]
    async fn an_endless_head_is_refused_at_its_limit() {
        static ENDLESS: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
            let mut head = b"HTTP/1.1 200 OK\r\nx-long: ".to_vec();
            head.resize(MAX_HEAD + 4096, b'a');
            head
        });
        let e = failure(ENDLESS.as_slice()).await;
        assert!(matches!(e, pool::Error::Stream(Error::HeadTooLarge)), "{e}");
    }

    /// A head's limit holds whether it arrives in one read or in many.
    #[test]
    fn a_head_over_the_limit_is_refused_however_it_arrives() {
        let head = |len: usize| {
            let mut head = b"HTTP/1.1 200 OK\r\nx-long: ".to_vec();
            head.resize(len - 4, b'a');
            head.extend_from_slice(b"\r\n\r\nbody");
            head
        };
        for step in [1000, 4096, MAX_HEAD - 1, MAX_HEAD, MAX_HEAD + 1, 1 << 20] {
            let feed = |bytes: &[u8]| {
                let (mut buf, mut status) = (BytesMut::new(), None);
                for piece in bytes.chunks(step) {
                    buf.extend_from_slice(piece);
                    if status.is_none() {
                        status = take_head(&mut buf)?.map(|r| r.status());
                    }
                }
                Ok::<_, Error>(status.map(|s| (s, buf)))
            };
            let (status, rest) = feed(&head(MAX_HEAD)).unwrap().unwrap();
            assert_eq!((status, &rest[..]), (StatusCode::OK, &b"body"[..]));
            let e = feed(&head(MAX_HEAD + 1)).unwrap_err();
            assert!(matches!(e, Error::HeadTooLarge), "step {step}: {e}");
        }
    }

    #[tokio::test]
    async fn a_body_cut_short_ends_in_an_error() {
        const ANSWER: &[u8] =
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n";
        let (url, _requests) = agent(ANSWER, 2).await;
        let response = pool(&url).send_stream(stream_request()).await.unwrap();
        let e = body_of(response).await.unwrap_err();
        assert!(
            e.to_string()
                .contains("closed the connection before the answer's end"),
            "{e}"
        );
    }
}
