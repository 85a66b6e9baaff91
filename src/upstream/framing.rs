//! An HTTP/1.1 answer's body framing (RFC 9112 §6.3), decoded from the
//! bytes read so far: chunked, a `content-length`, or everything until the
//! connection closes. Pure: [`super::h1_stream`] does the reading.
//!
//! The buffer is let go whenever everything in it has been handed on, so a
//! body waiting for its next bytes holds no buffer at all: what an idle SSE
//! stream costs (bench/profile.md).

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, StatusCode, Version};

/// Longest chunk-size line (with extensions) or trailer field accepted,
/// its CRLF included.
const MAX_LINE: usize = 8 * 1024;

const SIZE_LINE_TOO_LONG: &str = "chunk size line too long";
const TRAILER_TOO_LONG: &str = "trailer field too long";

/// How the body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// This many bytes are still to come.
    Length(u64),
    Chunked(Chunk),
    /// Everything until the agent closes the connection.
    ToClose,
    /// The body is complete.
    Done,
}

/// Where a chunked body's decoding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// Waiting for a chunk-size line.
    Size,
    /// This many bytes of the current chunk are still to come.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section after the last chunk (read and dropped).
    Trailers,
}

/// Why a body (or the head before it) could not be read as HTTP/1.1.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub &'static str);

/// The body's framing from the answer's head, and whether the connection
/// may carry another call once the body has ended.
pub fn of_head(
    status: StatusCode,
    version: Version,
    headers: &HeaderMap,
) -> Result<(Framing, bool), Malformed> {
    let keep_alive = version == Version::HTTP_11 && !has_token(headers, CONNECTION, "close");
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok((Framing::Done, keep_alive));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        // A content-length beside it is ignored; the connection is not
        // reused after such an answer (RFC 9112 §6.1).
        let reusable = keep_alive && !headers.contains_key(CONTENT_LENGTH);
        return Ok(match last_coding_is_chunked(headers) {
            true => (Framing::Chunked(Chunk::Size), reusable),
            false => (Framing::ToClose, false),
        });
    }
    match content_length(headers)? {
        Some(n) => Ok((Framing::Length(n), keep_alive)),
        None => Ok((Framing::ToClose, false)),
    }
}

/// The one length all `content-length` values agree on.
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Malformed> {
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let part = part.trim_ascii();
            let n = std::str::from_utf8(part)
                .ok()
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or(Malformed("invalid content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(Malformed("conflicting content-length values"));
            }
            length = Some(n);
        }
    }
    Ok(length)
}

fn last_coding_is_chunked(headers: &HeaderMap) -> bool {
    let last = headers.get_all(TRANSFER_ENCODING).iter().next_back();
    let coding = last.and_then(|v| v.as_bytes().rsplit(|&b| b == b',').next());
    coding.is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

fn has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
    })
}

/// A body's bytes read so far and how far they have been decoded.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    framing: Framing,
}

impl Decoder {
    /// `read` holds what came after the head.
    pub fn new(framing: Framing, read: BytesMut) -> Self {
        let mut decoder = Self { buf: read, framing };
        decoder.release_if_empty();
        decoder
    }

    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Bytes read but not decoded yet (after the end: bytes the agent sent
    /// past its answer).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Where the next read goes; it holds room for `at_least` more bytes.
    pub fn room(&mut self, at_least: usize) -> &mut BytesMut {
        if self.buf.capacity() - self.buf.len() < at_least {
            self.buf.reserve(at_least);
        }
        &mut self.buf
    }

    /// Drops the buffer if nothing is in it: a read that found nothing
    /// leaves no buffer behind.
    pub fn release_if_empty(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
    }

    /// The connection closed: the end of a body framed by it, or a body cut
    /// short.
    pub fn closed(&mut self) -> Result<(), Malformed> {
        match self.framing {
            Framing::ToClose | Framing::Done => {
                self.framing = Framing::Done;
                Ok(())
            }
            Framing::Length(_) | Framing::Chunked(_) => Err(Malformed(
                "the agent closed the connection before the answer's end",
            )),
        }
    }

    /// The next piece of body data in what has been read; `None` when more
    /// must be read first or the body has ended ([`Framing::Done`]).
    pub fn next_data(&mut self) -> Result<Option<Bytes>, Malformed> {
        loop {
            match self.framing {
                Framing::Done => return Ok(None),
                Framing::Length(0) => self.framing = Framing::Done,
                Framing::Length(left) => {
                    let Some(data) = self.take(left) else {
                        return Ok(None);
                    };
                    self.framing = match left - data.len() as u64 {
                        0 => Framing::Done,
                        left => Framing::Length(left),
                    };
                    return Ok(Some(data));
                }
                Framing::ToClose => return Ok(self.take(u64::MAX)),
                Framing::Chunked(Chunk::Data(left)) => {
                    let Some(data) = self.take(left) else {
                        return Ok(None);
                    };
                    let left = left - data.len() as u64;
                    self.framing = Framing::Chunked(match left {
                        0 => Chunk::DataEnd,
                        _ => Chunk::Data(left),
                    });
                    return Ok(Some(data));
                }
                Framing::Chunked(chunk) => {
                    if !self.step_chunked(chunk)? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// One step through a chunk's framing lines; `false` when more must be
    /// read first.
    fn step_chunked(&mut self, chunk: Chunk) -> Result<bool, Malformed> {
        let next = match chunk {
            Chunk::Size => match httparse::parse_chunk_size(&self.buf) {
                Ok(httparse::Status::Complete((used, _))) if used > MAX_LINE => {
                    return Err(Malformed(SIZE_LINE_TOO_LONG))
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    self.buf.advance(used);
                    match size {
                        0 => Chunk::Trailers,
                        n => Chunk::Data(n),
                    }
                }
                Ok(httparse::Status::Partial) => return self.short_line(SIZE_LINE_TOO_LONG),
                Err(_) => return Err(Malformed("invalid chunk size line")),
            },
            Chunk::DataEnd => match self.buf.get(..2) {
                Some([b'\r', b'\n']) => {
                    self.buf.advance(2);
                    Chunk::Size
                }
                None if self.buf.first().is_none_or(|&b| b == b'\r') => return Ok(false),
                _ => return Err(Malformed("no CRLF after a chunk's data")),
            },
            Chunk::Trailers => match self.buf.windows(2).position(|w| w == b"\r\n") {
                // The empty line: the body's end.
                Some(0) => {
                    self.buf.advance(2);
                    self.framing = Framing::Done;
                    self.release_if_empty();
                    return Ok(true);
                }
                Some(at) if at + 2 > MAX_LINE => return Err(Malformed(TRAILER_TOO_LONG)),
                // A trailer field: dropped, as hyper's client does by default.
                Some(at) => {
                    self.buf.advance(at + 2);
                    Chunk::Trailers
                }
                None => return self.short_line(TRAILER_TOO_LONG),
            },
            // At a chunk's data already: `next_data` takes it.
            Chunk::Data(_) => return Ok(true),
        };
        self.framing = Framing::Chunked(next);
        self.release_if_empty();
        Ok(true)
    }

    /// A framing line not complete yet: read more, unless it is too long
    /// to be one. The limit is on the line (its CRLF included), complete or
    /// not, so how the bytes were split never changes the outcome.
    fn short_line(&self, too_long: &'static str) -> Result<bool, Malformed> {
        match self.buf.len() < MAX_LINE {
            true => Ok(false),
            false => Err(Malformed(too_long)),
        }
    }

    /// Up to `max` bytes of what has been read, as a frame of their own;
    /// the buffer goes with the last of them.
    fn take(&mut self, max: u64) -> Option<Bytes> {
        if self.buf.is_empty() {
            return None;
        }
        let n = usize::try_from(max).map_or(self.buf.len(), |m| m.min(self.buf.len()));
        let data = match n == self.buf.len() {
            true => std::mem::take(&mut self.buf).freeze(),
            false => self.buf.split_to(n).freeze(),
        };
        Some(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn framing(status: u16, pairs: &[(&'static str, &'static str)]) -> (Framing, bool) {
        let status = StatusCode::from_u16(status).unwrap();
        of_head(status, Version::HTTP_11, &headers(pairs)).unwrap()
    }

    /// Feeds `input` in pieces of `step` bytes and collects the data.
    fn decode(
        framing: Framing,
        input: &[u8],
        step: usize,
    ) -> Result<(Vec<u8>, Decoder), Malformed> {
        let mut decoder = Decoder::new(framing, BytesMut::new());
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            decoder.room(piece.len()).extend_from_slice(piece);
            while let Some(data) = decoder.next_data()? {
                out.extend_from_slice(&data);
            }
        }
        Ok((out, decoder))
    }

    #[test]
    fn the_head_says_how_the_body_ends() {
        let chunked = Framing::Chunked(Chunk::Size);
        assert_eq!(
            framing(200, &[("transfer-encoding", "chunked")]),
            (chunked, true)
        );
        assert_eq!(
            framing(200, &[("transfer-encoding", "gzip, Chunked")]),
            (chunked, true)
        );
        // Chunked not last: the body runs to the connection's end.
        assert_eq!(
            framing(200, &[("transfer-encoding", "chunked, gzip")]),
            (Framing::ToClose, false)
        );
        // Both: chunked wins, and the connection is not reused.
        let both = [("transfer-encoding", "chunked"), ("content-length", "5")];
        assert_eq!(framing(200, &both), (chunked, false));
        assert_eq!(
            framing(200, &[("content-length", "12")]),
            (Framing::Length(12), true)
        );
        assert_eq!(
            framing(200, &[("content-length", "7, 7")]),
            (Framing::Length(7), true)
        );
        assert_eq!(framing(200, &[]), (Framing::ToClose, false));
        assert_eq!(
            framing(204, &[("content-length", "3")]),
            (Framing::Done, true)
        );
        assert_eq!(framing(304, &[]), (Framing::Done, true));
        let close = [("connection", "keep-alive, Close"), ("content-length", "1")];
        assert_eq!(framing(200, &close), (Framing::Length(1), false));
        let old = of_head(
            StatusCode::OK,
            Version::HTTP_10,
            &headers(&[("content-length", "1")]),
        );
        assert_eq!(old, Ok((Framing::Length(1), false)));
    }

    #[test]
    fn a_bad_content_length_is_malformed() {
        for bad in [
            &[("content-length", "x")][..],
            &[("content-length", "-1")],
            &[("content-length", "")],
        ] {
            assert!(
                of_head(StatusCode::OK, Version::HTTP_11, &headers(bad)).is_err(),
                "{bad:?}"
            );
        }
        let two = [("content-length", "1"), ("content-length", "2")];
        assert_eq!(
            of_head(StatusCode::OK, Version::HTTP_11, &headers(&two)),
            Err(Malformed("conflicting content-length values"))
        );
    }

    #[test]
    fn chunked_bodies_decode_however_they_are_split() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nx-trailer: t\r\n\r\n";
        for step in [1, 2, 3, 7, body.len()] {
            let (out, decoder) = decode(Framing::Chunked(Chunk::Size), body, step).unwrap();
            assert_eq!(out, b"hello, world", "step {step}");
            assert_eq!(decoder.framing(), Framing::Done);
            assert_eq!(decoder.buffered(), 0);
        }
    }

    #[test]
    fn a_length_body_ends_at_its_length_and_keeps_what_follows() {
        let (out, decoder) = decode(Framing::Length(5), b"helloEXTRA", 3).unwrap();
        assert_eq!(out, b"hello");
        assert_eq!(decoder.framing(), Framing::Done);
        assert_eq!(decoder.buffered(), 5, "bytes past the answer are not body");
    }

    #[test]
    fn a_body_to_the_close_ends_when_the_connection_does() {
        let (out, mut decoder) = decode(Framing::ToClose, b"all of it", 4).unwrap();
        assert_eq!(out, b"all of it");
        assert_eq!(decoder.closed(), Ok(()));
        assert_eq!(decoder.framing(), Framing::Done);
    }

    #[test]
    fn a_body_cut_short_is_an_error_at_the_close() {
        let (_, mut decoder) = decode(Framing::Chunked(Chunk::Size), b"5\r\nhel", 2).unwrap();
        assert!(decoder.closed().is_err());
        let (_, mut decoder) = decode(Framing::Length(10), b"short", 5).unwrap();
        assert!(decoder.closed().is_err());
    }

    #[test]
    fn broken_chunked_framing_is_malformed() {
        let cases: [&[u8]; 3] = [b"zz\r\n", b"3\r\nabcXY", b"3\r\nabc\r\n0\r\n"];
        for (i, case) in cases.iter().enumerate() {
            let result = decode(Framing::Chunked(Chunk::Size), case, case.len());
            match i {
                // A trailer section not ended yet is only incomplete.
                2 => assert!(result.is_ok()),
                _ => assert!(result.is_err(), "{:?}", String::from_utf8_lossy(case)),
            }
        }
        let endless = vec![b'1'; MAX_LINE + 10];
        assert!(decode(Framing::Chunked(Chunk::Size), &endless, 512).is_err());
    }

    /// A framing line's limit holds whether the line arrives in one read or
    /// in many (the fuzzer's split invariant, `fuzz/fuzz_targets/agent_answer.rs`).
    #[test]
    fn a_line_over_the_limit_is_refused_however_it_arrives() {
        let line = |len: usize| {
            let mut line = b"5;x=".to_vec();
            line.resize(len - 2, b'y');
            line.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
            line
        };
        let trailer = |len: usize| {
            let mut body = b"0\r\nx-t: ".to_vec();
            body.resize(3 + len - 2, b'z');
            body.extend_from_slice(b"\r\n\r\n");
            body
        };
        for step in [7, 100, MAX_LINE - 1, MAX_LINE, MAX_LINE + 1, 1 << 20] {
            let chunked = Framing::Chunked(Chunk::Size);
            let (data, decoder) = decode(chunked, &line(MAX_LINE), step).unwrap();
            assert_eq!(
                (&data[..], decoder.framing()),
                (&b"hello"[..], Framing::Done)
            );
            let e = decode(chunked, &line(MAX_LINE + 1), step).unwrap_err();
            assert_eq!(e, Malformed(SIZE_LINE_TOO_LONG), "step {step}");
            let (_, decoder) = decode(chunked, &trailer(MAX_LINE), step).unwrap();
            assert_eq!(decoder.framing(), Framing::Done, "step {step}");
            let e = decode(chunked, &trailer(MAX_LINE + 1), step).unwrap_err();
            assert_eq!(e, Malformed(TRAILER_TOO_LONG), "step {step}");
        }
    }

    #[test]
    fn a_waiting_body_holds_no_buffer() {
        let mut decoder = Decoder::new(Framing::Chunked(Chunk::Size), BytesMut::new());
        decoder.room(8192).extend_from_slice(b"6\r\ndata: \r\n");
        let data = decoder.next_data().unwrap().unwrap();
        assert_eq!(&data[..], b"data: ");
        assert_eq!(decoder.next_data().unwrap(), None);
        assert_eq!(decoder.buffered(), 0);
        assert_eq!(
            decoder.buf.capacity(),
            0,
            "the read buffer went with the data"
        );
        decoder.room(16);
        decoder.release_if_empty();
        assert_eq!(decoder.buf.capacity(), 0);
    }
}
