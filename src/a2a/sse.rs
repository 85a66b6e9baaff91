//! Server-Sent Events, the framing of A2A's streams over JSON-RPC and
//! HTTP+JSON: where whole events end in a growing byte buffer
//! ([`EventScanner`]), and the lines of whole events ([`lines`]). Lines end
//! in LF, CRLF or CR, and an event at an empty line (WHATWG HTML §9.2.5).
//! The relay, the version bridge and the reading of task ids
//! (`crate::a2a::seen`) all split lines here, so they agree on every
//! ending.
//!
//! The relay forwards only whole events, so a stream that breaks mid-event
//! never hands the client half a JSON object before the gateway's final
//! error event.

#[derive(Debug, Default)]
pub struct EventScanner {
    /// Bytes of the pending buffer already scanned.
    pos: usize,
    /// The current line has content (it is not, so far, an empty line).
    in_line: bool,
    /// The last byte was CR, so an LF next completes that line ending.
    after_cr: bool,
}

impl EventScanner {
    /// Scans new bytes at the end of `buf` and returns how many leading bytes
    /// hold only complete events (0 if none). The caller must then remove
    /// exactly that many bytes from the front of its buffer.
    pub fn scan(&mut self, buf: &[u8]) -> usize {
        let mut boundary = 0;
        let mut i = self.pos;
        while i < buf.len() {
            // Everything up to the next CR or LF is line content: one search
            // (memchr, SIMD) instead of a look at every byte of an event.
            let end = memchr::memchr2(b'\n', b'\r', &buf[i..]).map(|n| i + n);
            if end != Some(i) {
                self.in_line = true;
                self.after_cr = false;
            }
            let Some(at) = end else { break };
            let b = buf[at];
            if b == b'\n' && self.after_cr {
                self.after_cr = false;
            } else {
                self.after_cr = b == b'\r';
                if !self.in_line {
                    boundary = at + 1;
                }
                self.in_line = false;
            }
            i = at + 1;
        }
        self.pos = buf.len() - boundary;
        boundary
    }
}

/// The lines of `chunk`, each without its ending: `\n`, `\r\n` or `\r`.
/// A chunk of whole events from [`EventScanner`] may begin with the `\n` of
/// a CRLF whose `\r` ended the chunk before: it reads as one empty line,
/// which ends no event (none has begun), so it changes nothing.
pub fn lines(chunk: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = chunk;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        let ending = match rest.get(end..end + 2) {
            Some(b"\r\n") => 2,
            _ => usize::from(end < rest.len()),
        };
        rest = &rest[end + ending..];
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<&str> {
        lines(text.as_bytes())
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect()
    }

    #[test]
    fn lines_end_in_lf_crlf_or_cr() {
        assert_eq!(split("a\nb\n"), ["a", "b"]);
        assert_eq!(split("a\r\nb\r\n"), ["a", "b"]);
        assert_eq!(split("a\rb\r"), ["a", "b"]);
        assert_eq!(split("a\r\n\r\nb"), ["a", "", "b"]);
        assert_eq!(split("a\rb\nc\r\nd"), ["a", "b", "c", "d"]);
        assert_eq!(split("\r\n"), [""]);
        assert_eq!(split("\n\r"), ["", ""]);
        assert!(split("").is_empty());
    }

    /// The data of each event in `chunks` of a stream, as the relay's
    /// scanner cuts them and [`lines`] reads them: multi-line data joined
    /// with `\n`.
    fn events(chunks: &[&[u8]]) -> Vec<String> {
        let (mut scanner, mut buf, mut out) = (EventScanner::default(), Vec::new(), Vec::new());
        let mut data: Option<String> = None;
        let mut read = |whole: &[u8], data: &mut Option<String>| {
            for line in lines(whole) {
                if line.is_empty() {
                    out.extend(data.take());
                } else if let Some(rest) = line.strip_prefix(b"data:") {
                    let rest =
                        std::str::from_utf8(rest.strip_prefix(b" ").unwrap_or(rest)).unwrap();
                    match data {
                        Some(d) => *d = format!("{d}\n{rest}"),
                        None => *data = Some(rest.to_string()),
                    }
                }
            }
        };
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            let n = scanner.scan(&buf);
            read(&buf[..n], &mut data);
            buf.drain(..n);
        }
        read(&buf, &mut data);
        out.extend(data);
        out
    }

    #[test]
    fn every_ending_and_mixed_endings_give_the_same_events() {
        let want = ["{\"a\":\n1}", "2"];
        for text in [
            "data: {\"a\":\ndata: 1}\n\ndata: 2\n\n",
            "data: {\"a\":\r\ndata: 1}\r\n\r\ndata: 2\r\n\r\n",
            "data: {\"a\":\rdata: 1}\r\rdata: 2\r\r",
            "data: {\"a\":\r\ndata: 1}\n\rdata: 2\r\n\n",
            ": comment\r\nevent: x\r\ndata: {\"a\":\ndata: 1}\r\n\r\nid: 7\rdata: 2\r\n\r\n",
        ] {
            assert_eq!(events(&[text.as_bytes()]), want, "{text:?}");
        }
    }

    #[test]
    fn an_event_split_across_chunks_at_every_byte_reads_the_same() {
        let text = b"data: {\"a\":\r\ndata: 1}\r\n\r\ndata: 2\r\rdata: 3\n\n";
        let whole = events(&[text]);
        assert_eq!(whole, ["{\"a\":\n1}", "2", "3"]);
        for at in 0..=text.len() {
            let (a, b) = text.split_at(at);
            assert_eq!(events(&[a, b]), whole, "split at {at}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events(&bytes), whole, "a byte at a time");
    }

    /// Feeds `chunks` one by one and returns the events as forwarded.
    fn run(chunks: &[&str]) -> Vec<String> {
        let mut s = EventScanner::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c.as_bytes());
            let n = s.scan(&buf);
            if n > 0 {
                out.push(String::from_utf8(buf.drain(..n).collect()).unwrap());
            }
        }
        out
    }

    #[test]
    fn whole_events_pass_at_once() {
        assert_eq!(run(&["data: a\n\ndata: b\n\n"]), ["data: a\n\ndata: b\n\n"]);
    }

    #[test]
    fn partial_event_waits_for_its_end() {
        assert_eq!(
            run(&["data: {\"a\"", ":1}\n", "\n", "data: x"]),
            ["data: {\"a\":1}\n\n"]
        );
    }

    #[test]
    fn crlf_and_cr_line_endings() {
        assert_eq!(run(&["data: a\r\n\r\n"]), ["data: a\r\n\r"]);
        assert_eq!(
            run(&["data: a\r\n\r", "\ndata: b\r\n\r\n"]),
            ["data: a\r\n\r", "\ndata: b\r\n\r"]
        );
        assert_eq!(run(&["data: a\r\r"]), ["data: a\r\r"]);
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        // "\r" then "\n" must not count as two line endings (an empty line).
        assert_eq!(
            run(&["data: a\r", "\ndata: b\n\n"]),
            ["data: a\r\ndata: b\n\n"]
        );
    }

    #[test]
    fn multi_line_events_and_comments() {
        assert_eq!(
            run(&[": keep-alive\n\n", "event: x\ndata: 1\ndata: 2\n\n"]),
            [": keep-alive\n\n", "event: x\ndata: 1\ndata: 2\n\n"]
        );
    }

    /// The scanner as first written, a byte at a time: the reference.
    fn reference(state: &mut (bool, bool), buf: &[u8], from: usize) -> usize {
        let (in_line, after_cr) = state;
        let mut boundary = 0;
        for (i, &b) in buf.iter().enumerate().skip(from) {
            match b {
                b'\n' if *after_cr => *after_cr = false,
                b'\n' | b'\r' => {
                    *after_cr = b == b'\r';
                    if !*in_line {
                        boundary = i + 1;
                    }
                    *in_line = false;
                }
                _ => {
                    *after_cr = false;
                    *in_line = true;
                }
            }
        }
        boundary
    }

    proptest::proptest! {
        #[test]
        fn finds_the_boundaries_a_byte_at_a_time_scan_finds(
            chunks in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(b"ab:\r\n".to_vec()), 0..12),
                1..8,
            )
        ) {
            let (mut fast, mut slow) = (EventScanner::default(), (false, false));
            let (mut buf, mut slow_pos) = (Vec::new(), 0);
            for chunk in chunks {
                buf.extend_from_slice(&chunk);
                let want = reference(&mut slow, &buf, slow_pos);
                slow_pos = buf.len() - want;
                proptest::prop_assert_eq!(fast.scan(&buf), want);
                buf.drain(..want);
            }
        }
    }

    #[test]
    fn byte_by_byte_matches_whole() {
        let text = "data: one\n\nid: 2\ndata: two\r\n\r\ndata: three\n\n";
        let chunks: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(run(&refs).concat(), text);
    }
}
