//! The access line, written here into the log queue when the log is plain
//! text or JSON (not a terminal's coloured text).
//!
//! Through `tracing`, the line cost ~20,000 instructions a call, as much as
//! the rest of a proxied call over hyper's own cost (bench/profile.md):
//! every field went through a visitor as `dyn Debug`, every string was
//! escaped one `char` at a time by `fmt`, the timestamp's calendar date was
//! worked out again. Here it is a few appends to one buffer, and the line
//! is byte for byte what `tracing_subscriber::fmt` writes for the same
//! event (the tests below compare the two).

use std::cell::{Cell, RefCell};
use std::fmt::{self, Write as _};
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::LogFormat;

/// The access line's target: operators filter on it (`RUST_LOG`).
pub const TARGET: &str = "a2a_gateway::telemetry::access";

/// One access line's fields, in the order they are written.
pub struct Fields<'a> {
    pub request_id: &'a str,
    pub client: Option<IpAddr>,
    pub caller: &'a str,
    pub method: &'a str,
    /// How the client called: `jsonrpc` or `http+json`.
    pub binding: &'a str,
    pub skill: &'a str,
    pub upstream: &'a str,
    pub rule: &'a str,
    /// The client's A2A version, and the agent's (they differ when the
    /// bridge translated); `-` before routing.
    pub version: &'a str,
    pub agent_version: &'a str,
    pub status: u16,
    /// The JSON-RPC error, when there was one; no field without.
    pub code: Option<i32>,
    pub duration: Duration,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub outcome: &'a str,
    /// The call's trace and server span ids, when traces are exported.
    pub trace: Option<(&'a str, &'a str)>,
}

/// A value, or `-` when there is none, as the other fields of the line.
struct OrDash<T>(Option<T>);

impl<T: fmt::Display> fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

impl Fields<'_> {
    /// The line as a `tracing` event, for whatever subscriber is installed
    /// (a terminal's, a test's).
    pub fn trace(&self) {
        tracing::info!(
            target: TARGET,
            request_id = self.request_id,
            client = %OrDash(self.client),
            caller = self.caller,
            method = self.method,
            binding = self.binding,
            skill = self.skill,
            upstream = self.upstream,
            rule = self.rule,
            version = self.version,
            agent_version = self.agent_version,
            status = self.status,
            code = self.code,
            // Whole microseconds: `0.819`, not `0.8190339999999999`.
            duration_ms = self.micros() as f64 / 1000.0,
            request_bytes = self.request_bytes,
            response_bytes = self.response_bytes,
            outcome = self.outcome,
            trace_id = self.trace.map(|(t, _)| t),
            span_id = self.trace.map(|(_, s)| s),
            "access"
        );
    }

    fn micros(&self) -> u64 {
        u64::try_from(self.duration.as_micros()).unwrap_or(u64::MAX)
    }

    /// Appends the line, newline included, as `format` lays it out.
    pub fn write(&self, format: LogFormat, now: SystemTime, out: &mut Vec<u8>) {
        match format {
            LogFormat::Text => self.laid_out::<Text>(now, out),
            LogFormat::Json => self.laid_out::<Json>(now, out),
        }
    }

    /// The fields, in `tracing`'s order, each as `L` writes it.
    fn laid_out<L: Layout>(&self, now: SystemTime, out: &mut Vec<u8>) {
        L::open(now, out);
        L::name(out, "request_id");
        string::<L>(out, self.request_id);
        L::name(out, "client");
        L::client(out, self.client);
        for (name, text) in [
            ("caller", self.caller),
            ("method", self.method),
            ("binding", self.binding),
            ("skill", self.skill),
            ("upstream", self.upstream),
            ("rule", self.rule),
            ("version", self.version),
            ("agent_version", self.agent_version),
        ] {
            L::name(out, name);
            string::<L>(out, text);
        }
        L::name(out, "status");
        digits(out, self.status);
        if let Some(code) = self.code {
            L::name(out, "code");
            digits(out, code);
        }
        L::name(out, "duration_ms");
        millis(out, self.micros());
        L::name(out, "request_bytes");
        digits(out, self.request_bytes);
        L::name(out, "response_bytes");
        digits(out, self.response_bytes);
        L::name(out, "outcome");
        string::<L>(out, self.outcome);
        if let Some((trace_id, span_id)) = self.trace {
            L::name(out, "trace_id");
            string::<L>(out, trace_id);
            L::name(out, "span_id");
            string::<L>(out, span_id);
        }
        L::close(out);
    }
}

/// What one log format writes around and between the fields.
trait Layout {
    /// Up to the first field: the time, the level, the target, the message.
    fn open(now: SystemTime, out: &mut Vec<u8>);
    /// A field's name, after the field before it.
    fn name(out: &mut Vec<u8>, name: &str);
    /// A string that is not [`plain`], escaped as `tracing` escapes it.
    fn escaped(out: &mut Vec<u8>, text: &str);
    /// The client's address (`-` without one).
    fn client(out: &mut Vec<u8>, client: Option<IpAddr>);
    /// After the last field, the newline included.
    fn close(out: &mut Vec<u8>);
}

/// `tracing_subscriber::fmt`'s text format, without colours.
struct Text;

impl Layout for Text {
    fn open(now: SystemTime, out: &mut Vec<u8>) {
        timestamp(now, out);
        out.extend_from_slice(b"  INFO a2a_gateway::telemetry::access: access");
    }

    fn name(out: &mut Vec<u8>, name: &str) {
        out.push(b' ');
        out.extend_from_slice(name.as_bytes());
        out.push(b'=');
    }

    /// As `{:?}` writes it.
    fn escaped(out: &mut Vec<u8>, text: &str) {
        let mut escaped = String::new();
        let _ = write!(escaped, "{text:?}");
        out.extend_from_slice(escaped.as_bytes());
    }

    /// Unquoted, as `Display` writes it.
    fn client(out: &mut Vec<u8>, client: Option<IpAddr>) {
        address(out, client);
    }

    fn close(out: &mut Vec<u8>) {
        out.push(b'\n');
    }
}

/// `tracing_subscriber::fmt`'s JSON format.
struct Json;

impl Layout for Json {
    fn open(now: SystemTime, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"timestamp\":\"");
        timestamp(now, out);
        out.extend_from_slice(b"\",\"level\":\"INFO\",\"fields\":{\"message\":\"access\"");
    }

    fn name(out: &mut Vec<u8>, name: &str) {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
    }

    /// As serde_json escapes it.
    fn escaped(out: &mut Vec<u8>, text: &str) {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, text);
    }

    /// A string, as `tracing` records a `Display` field in JSON.
    fn client(out: &mut Vec<u8>, client: Option<IpAddr>) {
        out.push(b'"');
        address(out, client);
        out.push(b'"');
    }

    fn close(out: &mut Vec<u8>) {
        out.extend_from_slice(b"},\"target\":\"a2a_gateway::telemetry::access\"}\n");
    }
}

/// A string field's value: copied between quotes when it needs no escape.
fn string<L: Layout>(out: &mut Vec<u8>, text: &str) {
    if plain(text) {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        L::escaped(out, text);
    }
}

/// Text that both `{:?}` and JSON write as it is, between quotes: printable
/// ASCII without a quote or a backslash. Anything else takes the slow way.
fn plain(text: &str) -> bool {
    text.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

fn digits(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// The client's address as `Display` writes it; IPv4 by hand, as `fmt`
/// costs more than the rest of the line.
fn address(out: &mut Vec<u8>, client: Option<IpAddr>) {
    match client {
        Some(IpAddr::V4(ip)) => {
            let [a, b, c, d] = ip.octets();
            let mut digits = itoa::Buffer::new();
            out.extend_from_slice(digits.format(a).as_bytes());
            for octet in [b, c, d] {
                out.push(b'.');
                out.extend_from_slice(digits.format(octet).as_bytes());
            }
        }
        Some(ip) => {
            let mut text = String::new();
            let _ = write!(text, "{ip}");
            out.extend_from_slice(text.as_bytes());
        }
        None => out.push(b'-'),
    }
}

/// Microseconds as milliseconds, the way `{:?}` and serde_json write the
/// `f64` `micros / 1000.0`: the shortest decimal that reads back as that
/// number, which for a whole number of microseconds is the exact one,
/// trailing zeros dropped but one kept after the point (`1.0`, `0.819`).
/// Exact for any duration under 2^53 microseconds (285 years).
fn millis(out: &mut Vec<u8>, micros: u64) {
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(digits.format(micros / 1000).as_bytes());
    out.push(b'.');
    let fraction = micros % 1000;
    let three = [
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ];
    let kept = three
        .iter()
        .rposition(|&d| d != b'0')
        .map_or(1, |last| last + 1);
    out.extend_from_slice(&three[..kept]);
}

/// The last second's date and time, as `2026-11-25T04:40:07`: a second's
/// calls all share it.
struct Second {
    unix: u64,
    text: [u8; 19],
}

thread_local! {
    static SECOND: Cell<Option<Second>> = const { Cell::new(None) };
    static LINE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The latest year humantime writes (9999-12-31T23:59:59).
const LAST_SECOND: u64 = 253_402_300_799;

/// `now` in RFC 3339 with microseconds, UTC, as `tracing`'s timer writes it
/// (`2026-11-25T04:40:07.123456Z`). A clock before 1970 reads as 1970.
fn timestamp(now: SystemTime, out: &mut Vec<u8>) {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let unix = since.as_secs().min(LAST_SECOND);
    let text = match SECOND.take() {
        Some(second) if second.unix == unix => second.text,
        _ => {
            let mut text = [0u8; 19];
            let whole = UNIX_EPOCH + Duration::from_secs(unix);
            let formatted = humantime::format_rfc3339_seconds(whole).to_string();
            text.copy_from_slice(&formatted.as_bytes()[..19]);
            text
        }
    };
    SECOND.set(Some(Second { unix, text }));
    out.extend_from_slice(&text);
    out.push(b'.');
    let micros = since.subsec_micros();
    let mut six = [b'0'; 6];
    let mut rest = micros;
    for digit in six.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.extend_from_slice(&six);
    out.push(b'Z');
}

/// Formats the line in this thread's buffer and hands it to `emit`.
pub fn with_line(fields: &Fields, format: LogFormat, emit: impl FnOnce(&[u8])) {
    LINE.with(|line| match line.try_borrow_mut() {
        Ok(mut line) => {
            line.clear();
            fields.write(format, SystemTime::now(), &mut line);
            emit(&line);
        }
        // Only if `emit` logged an access line itself; never expected.
        Err(_) => {
            let mut line = Vec::new();
            fields.write(format, SystemTime::now(), &mut line);
            emit(&line);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::log::capture::Capture;

    fn fields<'a>() -> Fields<'a> {
        Fields {
            request_id: "ops-test-1",
            client: Some("127.0.0.1".parse().unwrap()),
            caller: "-",
            method: "message/send",
            binding: "jsonrpc",
            skill: "none",
            upstream: "echo",
            rule: "default",
            version: "0.3",
            agent_version: "1.0",
            status: 200,
            code: None,
            duration: Duration::from_micros(819),
            request_bytes: 1024,
            response_bytes: 312,
            outcome: "complete",
            trace: None,
        }
    }

    /// What `tracing_subscriber::fmt`, as `log::init` sets it up without a
    /// terminal, writes for the same fields.
    fn through_tracing(fields: &Fields, format: LogFormat) -> String {
        let _serial = crate::telemetry::log::capture::serial();
        let capture = Capture::default();
        tracing::dispatcher::with_default(&capture.dispatch(format), || {
            tracing::callsite::rebuild_interest_cache();
            fields.trace()
        });
        capture.text()
    }

    fn ours(fields: &Fields, format: LogFormat) -> String {
        let mut out = Vec::new();
        fields.write(format, SystemTime::now(), &mut out);
        String::from_utf8(out).unwrap()
    }

    /// The line with its timestamp (27 bytes, wherever it starts) replaced.
    fn untimed(line: &str) -> String {
        let at = line.find("T").map(|t| t - 10).unwrap();
        format!("{}<time>{}", &line[..at], &line[at + 27..])
    }

    fn assert_same(fields: &Fields) {
        for format in [LogFormat::Text, LogFormat::Json] {
            let (ours, theirs) = (ours(fields, format), through_tracing(fields, format));
            assert_eq!(untimed(&ours), untimed(&theirs), "{format:?}");
        }
    }

    #[test]
    fn a_plain_call_is_written_as_tracing_writes_it() {
        assert_same(&fields());
    }

    #[test]
    fn trace_ids_are_written_as_tracing_writes_them() {
        let mut f = fields();
        f.trace = Some(("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"));
        assert_same(&f);
        assert!(ours(&f, LogFormat::Json).contains(
            r#""trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7""#
        ));
    }

    #[test]
    fn an_error_code_a_missing_client_and_a_caller_are_written_as_tracing_writes_them() {
        let mut f = fields();
        f.code = Some(-32601);
        f.client = None;
        f.caller = "alice@example.com";
        f.status = 502;
        f.outcome = "aborted";
        assert_same(&f);
        for ip in [
            "2001:db8::1",
            "::ffff:10.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "10.20.3.199",
        ] {
            f.client = Some(ip.parse().unwrap());
            assert_same(&f);
        }
    }

    #[test]
    fn strings_that_need_escapes_are_escaped_as_tracing_escapes_them() {
        for odd in [
            "quo\"te",
            "back\\slash",
            "new\nline\ttab",
            "bell\u{7}",
            "del\u{7f}",
            "caf\u{e9} \u{1f600}",
            "zero\u{200b}width",
            "",
        ] {
            let mut f = fields();
            f.caller = odd;
            f.request_id = odd;
            assert_same(&f);
        }
    }

    #[test]
    fn durations_are_written_as_tracing_writes_the_float() {
        for micros in [
            0,
            1,
            10,
            100,
            819,
            1000,
            1500,
            1001,
            12_345,
            999_999,
            1_000_000,
            86_400_000_000,
        ] {
            let mut ours = Vec::new();
            millis(&mut ours, micros);
            let float = micros as f64 / 1000.0;
            assert_eq!(String::from_utf8(ours).unwrap(), format!("{float:?}"));
            let mut f = fields();
            f.duration = Duration::from_micros(micros);
            assert_same(&f);
        }
    }

    #[test]
    fn the_timestamp_reads_back_as_the_instant_to_the_microsecond() {
        let instants = [
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(951_782_400, 123_456_789), // 2000-02-29
            UNIX_EPOCH + Duration::new(1_795_000_000, 999_999_000),
            UNIX_EPOCH + Duration::new(1_795_000_000, 1_000), // same second, cached
            UNIX_EPOCH + Duration::new(4_107_542_400, 0),     // 2100-03-01
        ];
        for now in instants {
            let mut out = Vec::new();
            timestamp(now, &mut out);
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.len(), 27, "{text}");
            let back = humantime::parse_rfc3339(&text).unwrap();
            let micros = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_micros();
            assert_eq!(micros(back), micros(now), "{text}");
        }
        let mut before = Vec::new();
        timestamp(UNIX_EPOCH - Duration::from_secs(5), &mut before);
        assert_eq!(before, b"1970-01-01T00:00:00.000000Z");
    }
}
