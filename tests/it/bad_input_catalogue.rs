//! Keeps docs/bad-input.md true: reads its tables, starts the gateway of each
//! `catalogue-gateway` block in front of two mock agents, sends every row's
//! request and checks the status, JSON-RPC code, raw id, message, headers and
//! whether an agent was reached. Every mismatch is reported at once.
use std::collections::HashMap;
use std::time::Duration;

use crate::support::client::{self, Proto, Reply};
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{default_card, MockAgent, Mode};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use serde_json::json;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DOC: &str = include_str!("../../docs/bad-input.md");
/// Bound for one raw exchange (the slowest row waits for a 1 s timeout).
const WAIT: Duration = Duration::from_secs(5);
const COLUMNS: [&str; 8] = [
    "request", "body", "HTTP", "code", "id", "message", "headers", "agent",
];

// ------------------------------------------------------------ the document

/// One `catalogue-gateway` block and the rows that run against it.
#[derive(Debug)]
struct Section {
    config: String,
    cases: Vec<Case>,
}

#[derive(Debug)]
struct Case {
    /// The row as written, for failure messages.
    line: usize,
    request: Request,
    status: Status,
    code: Code,
    /// Raw JSON text of the answer's id.
    id: Option<String>,
    message: Option<String>,
    headers: Vec<(String, String)>,
    reaches_agent: bool,
}

#[derive(Debug)]
enum Request {
    Http {
        method: Method,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Raw(Vec<u8>),
}

#[derive(Debug, PartialEq)]
enum Status {
    Code(u16),
    Closed,
}

#[derive(Debug, PartialEq)]
enum Code {
    /// Not a JSON-RPC error: only the status (and message/headers) count.
    None,
    /// A relayed success.
    Ok,
    Rpc(i64),
    /// An HTTP+JSON error: a `google.rpc.Status` with this status name.
    Rest(String),
}

fn parse_doc(doc: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    let mut lines = doc.lines().enumerate();
    let mut in_table = false;
    while let Some((n, line)) = lines.next() {
        if line.trim() == "```toml catalogue-gateway" {
            let mut config = String::new();
            for (_, l) in lines.by_ref() {
                if l.trim() == "```" {
                    break;
                }
                config.push_str(l);
                config.push('\n');
            }
            sections.push(Section {
                config,
                cases: Vec::new(),
            });
            continue;
        }
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        let cells = split_row(line);
        if cells.iter().map(String::as_str).eq(COLUMNS) {
            in_table = true;
            continue;
        }
        if !in_table || cells.iter().all(|c| c.chars().all(|ch| ch == '-')) {
            continue;
        }
        let section = sections
            .last_mut()
            .unwrap_or_else(|| panic!("line {}: a catalogue row before any gateway block", n + 1));
        section.cases.push(parse_row(n + 1, &cells));
    }
    sections
}

/// The cells of a table row: split on unescaped `|`, `\|` unescaped.
fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|c| c.trim().to_string()).collect()
}

/// The first code span of a cell (any number of backticks, one space of
/// padding removed as CommonMark does), if any.
fn code_span(cell: &str) -> Option<String> {
    let start = cell.find('`')?;
    let ticks = cell[start..].chars().take_while(|&c| c == '`').count();
    let fence = "`".repeat(ticks);
    let rest = &cell[start + ticks..];
    let end = rest.find(&fence)?;
    let content = &rest[..end];
    let padded = content.len() >= 2 && content.starts_with(' ') && content.ends_with(' ');
    Some(if padded && !content.trim().is_empty() {
        content[1..content.len() - 1].to_string()
    } else {
        content.to_string()
    })
}

fn parse_row(line: usize, cells: &[String]) -> Case {
    let at = |what: &str| format!("docs/bad-input.md line {line}: {what}");
    assert_eq!(
        cells.len(),
        COLUMNS.len(),
        "{}",
        at("wrong number of cells")
    );
    let spec = code_span(&cells[0]).unwrap_or_else(|| panic!("{}", at("no request")));
    let body = match code_span(&cells[1]) {
        Some(text) => expand(&text),
        None if cells[1] == "(none)" => Vec::new(),
        None => panic!("{}", at("body is neither a code span nor (none)")),
    };
    let request = if spec == "RAW" {
        Request::Raw(unescape_raw(&body))
    } else {
        parse_request(&spec, body).unwrap_or_else(|| panic!("{}", at("bad request spec")))
    };
    let status = match cells[2].as_str() {
        "closed" => Status::Closed,
        s => Status::Code(s.parse().unwrap_or_else(|_| panic!("{}", at("bad HTTP")))),
    };
    let code = match cells[3].as_str() {
        "-" => Code::None,
        "ok" => Code::Ok,
        s if s.chars().all(|c| c.is_ascii_uppercase() || c == '_') => Code::Rest(s.into()),
        s => Code::Rpc(s.parse().unwrap_or_else(|_| panic!("{}", at("bad code")))),
    };
    let headers = code_span(&cells[6])
        .map(|spec| {
            spec.split(" ; ")
                .map(|h| {
                    let (name, value) = h
                        .split_once(':')
                        .unwrap_or_else(|| panic!("{}", at("bad header")));
                    (name.trim().to_ascii_lowercase(), value.trim().to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let reaches_agent = match cells[7].as_str() {
        "no" => false,
        "yes" => true,
        _ => panic!("{}", at("agent must be yes or no")),
    };
    let message = code_span(&cells[5]).map(|m| String::from_utf8(expand(&m)).unwrap());
    Case {
        line,
        request,
        status,
        code,
        id: code_span(&cells[4]),
        message,
        headers,
        reaches_agent,
    }
}

/// `METHOD /path ; name: value ; …`
fn parse_request(spec: &str, body: Vec<u8>) -> Option<Request> {
    let mut parts = spec.split(" ; ");
    let (method, path) = parts.next()?.split_once(' ')?;
    let headers = parts
        .map(|h| {
            let (name, value) = h.split_once(':')?;
            Some((name.trim().to_string(), value.trim().to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Request::Http {
        method: method.parse().ok()?,
        path: path.trim().to_string(),
        headers,
        body,
    })
}

/// Expands `⟨repeat N text⟩` and `⟨0xHH⟩`.
fn expand(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('⟨') {
        out.extend_from_slice(&rest.as_bytes()[..start]);
        let after = &rest[start + '⟨'.len_utf8()..];
        let end = after.find('⟩').expect("an unclosed ⟨");
        let token = &after[..end];
        if let Some(hex) = token.strip_prefix("0x") {
            out.push(u8::from_str_radix(hex, 16).expect("⟨0xHH⟩"));
        } else if let Some(args) = token.strip_prefix("repeat ") {
            let (n, unit) = args.split_once(' ').expect("⟨repeat N text⟩");
            let n: usize = n.parse().expect("⟨repeat N text⟩");
            out.extend_from_slice(unit.repeat(n).as_bytes());
        } else {
            panic!("unknown token ⟨{token}⟩");
        }
        rest = &after[end + '⟩'.len_utf8()..];
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

/// `\r`, `\n` and `\\` in RAW bodies.
fn unescape_raw(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b'r')) => out.push(b'\r'),
            (b'\\', Some(b'n')) => out.push(b'\n'),
            (b'\\', Some(b'\\')) => out.push(b'\\'),
            (b, _) => {
                out.push(b);
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    out
}

// ------------------------------------------------------------ running it

struct Fleet {
    echo: MockAgent,
    notes: MockAgent,
}

impl Fleet {
    /// `echo`: the default card (skill `echo`, streams). `notes`: skill
    /// `notes`, cannot stream. Both know only the tasks they created.
    async fn start() -> Fleet {
        let echo = MockAgent::start(Mode::Normal).await;
        let notes = MockAgent::start(Mode::Normal).await;
        let mut card = default_card(&notes.url());
        card["name"] = json!("Notes");
        card["capabilities"] = json!({"streaming": false});
        card["skills"] = json!([{"id": "notes", "name": "Notes",
            "description": "Keeps notes", "tags": ["notes"]}]);
        notes.set_card(Some(card));
        notes.set_id_prefix("notes-");
        echo.set_owned_tasks_only(true);
        notes.set_owned_tasks_only(true);
        Fleet { echo, notes }
    }

    fn requests(&self) -> usize {
        self.echo.request_count() + self.notes.request_count()
    }

    async fn gateway(&self, config: &str) -> TestGateway {
        let mut text = config
            .replace("${echo}", &self.echo.url())
            .replace("${notes}", &self.notes.url());
        if !text.contains("[card_refresh]") {
            text.push_str("\n[card_refresh]\ntimeout = \"2s\"\n");
        }
        TestGateway::from_toml(&text).await
    }
}

/// What came back: a response, or the connection closing without one.
enum Outcome {
    Reply(Reply),
    Closed,
}

async fn send(gw: &TestGateway, request: &Request) -> Result<Outcome, String> {
    match request {
        Request::Raw(bytes) => raw_exchange(gw, bytes).await,
        Request::Http {
            method,
            path,
            headers,
            body,
        } => {
            let mut all: Vec<(&str, &str)> = Vec::new();
            let sets_type = headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
            if !sets_type {
                all.push(("content-type", "application/json"));
            }
            for (name, value) in headers {
                if value != "(none)" {
                    all.push((name, value));
                }
            }
            let url = format!("http://{}{path}", gw.addr());
            let body = Bytes::from(body.clone());
            client::try_request(method.clone(), &url, body, &all, Proto::Http1)
                .await
                .map(Outcome::Reply)
        }
    }
}

/// Writes `bytes` on a fresh connection and reads one response, or notes
/// that the connection was closed without one.
async fn raw_exchange(gw: &TestGateway, bytes: &[u8]) -> Result<Outcome, String> {
    let mut stream = TcpStream::connect(gw.addr())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let exchange = async {
        // A peer that closes early may refuse part of the write.
        let _ = stream.write_all(bytes).await;
        let mut received = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(reply) = parse_response(&received) {
                return Outcome::Reply(reply);
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) if received.is_empty() => return Outcome::Closed,
                Ok(0) | Err(_) => {
                    return parse_response_at_eof(&received).map_or(Outcome::Closed, Outcome::Reply)
                }
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(WAIT, exchange)
        .await
        .map_err(|_| format!("no response and no close within {WAIT:?}"))
}

/// One complete HTTP/1.1 response at the start of `raw` (Content-Length or
/// chunked body).
fn parse_response(raw: &[u8]) -> Option<Reply> {
    let (status, headers, body_start) = parse_head(raw)?;
    let rest = &raw[body_start..];
    let body = if let Some(len) = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
    {
        rest.get(..len)?.to_vec()
    } else if headers
        .get(http::header::TRANSFER_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"))
    {
        dechunk(rest)?
    } else {
        return None; // read to EOF
    };
    Some(reply(status, headers, body))
}

/// A response whose body runs to the end of the connection.
fn parse_response_at_eof(raw: &[u8]) -> Option<Reply> {
    let (status, headers, body_start) = parse_head(raw)?;
    Some(reply(status, headers, raw[body_start..].to_vec()))
}

fn reply(status: StatusCode, headers: HeaderMap, body: Vec<u8>) -> Reply {
    Reply {
        status,
        headers,
        body: Bytes::from(body),
        version: http::Version::HTTP_11,
    }
}

fn parse_head(raw: &[u8]) -> Option<(StatusCode, HeaderMap, usize)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse::<u16>().ok()?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).ok()?,
            HeaderValue::from_str(value.trim()).ok()?,
        );
    }
    Some((StatusCode::from_u16(status).ok()?, headers, end + 4))
}

fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

/// Every way `outcome` differs from what the row says.
fn check(case: &Case, outcome: &Outcome) -> Vec<String> {
    let reply = match (outcome, &case.status) {
        (Outcome::Closed, Status::Closed) => return Vec::new(),
        (Outcome::Closed, Status::Code(want)) => {
            return vec![format!(
                "the connection closed without a response (want {want})"
            )]
        }
        (Outcome::Reply(r), Status::Closed) => {
            return vec![format!(
                "answered {} instead of closing: {}",
                r.status,
                r.text()
            )]
        }
        (Outcome::Reply(r), Status::Code(want)) => {
            if r.status.as_u16() != *want {
                return vec![format!("status {} (want {want}): {}", r.status, r.text())];
            }
            r
        }
    };
    let mut problems = Vec::new();
    let text = reply.text();
    for (name, piece) in &case.headers {
        match reply.header(name) {
            Some(value) if value.contains(piece.as_str()) => {}
            other => problems.push(format!("header {name}: {other:?} lacks {piece:?}")),
        }
    }
    if case.code == Code::None {
        if let Some(message) = &case.message {
            if !text.contains(message.as_str()) {
                problems.push(format!("body lacks {message:?}: {text}"));
            }
        }
        return problems;
    }
    if reply.header("content-type") != Some("application/json") {
        problems.push(format!(
            "content-type {:?}: {text}",
            reply.header("content-type")
        ));
    }
    let members: HashMap<String, Box<RawValue>> = match serde_json::from_slice(&reply.body) {
        Ok(m) => m,
        Err(e) => {
            problems.push(format!("not a JSON object ({e}): {text}"));
            return problems;
        }
    };
    let raw = |name: &str| members.get(name).map(|v| v.get());
    if let Code::Rest(status) = &case.code {
        let error: Value = raw("error")
            .and_then(|e| serde_json::from_str(e).ok())
            .unwrap_or(Value::Null);
        if error["status"] != status.as_str() || error["code"] != reply.status.as_u16() {
            problems.push(format!("not a google.rpc.Status {status}: {text}"));
        }
        let message = error["message"].as_str().unwrap_or_default();
        if let Some(want) = (case.message.as_ref()).filter(|w| !message.contains(w.as_str())) {
            problems.push(format!("message {message:?} lacks {want:?}"));
        }
        return problems;
    }
    if raw("jsonrpc") != Some("\"2.0\"") {
        problems.push(format!("jsonrpc is not \"2.0\": {text}"));
    }
    if let Some(id) = &case.id {
        if raw("id") != Some(id.as_str()) {
            problems.push(format!("id {:?} (want {id}): {text}", raw("id")));
        }
    }
    match case.code {
        Code::Ok => {
            if raw("result").is_none() || raw("error").is_some() {
                problems.push(format!("not a success: {text}"));
            }
        }
        Code::Rpc(code) => {
            if raw("result").is_some() {
                problems.push(format!("an error answer has a result: {text}"));
            }
            let error: Value = raw("error")
                .and_then(|e| serde_json::from_str(e).ok())
                .unwrap_or(Value::Null);
            if error["code"] != code {
                problems.push(format!("code {} (want {code}): {text}", error["code"]));
            }
            let message = error["message"].as_str().unwrap_or_default();
            if let Some(want) = &case.message {
                if !message.contains(want.as_str()) {
                    problems.push(format!("message {message:?} lacks {want:?}"));
                }
            }
        }
        Code::None | Code::Rest(_) => unreachable!(),
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_bad_input_catalogue_holds() {
    let sections = parse_doc(DOC);
    assert_eq!(sections.len(), 2, "gateway blocks in docs/bad-input.md");
    let rows: usize = sections.iter().map(|s| s.cases.len()).sum();
    assert!(
        rows >= 100,
        "only {rows} rows were read from docs/bad-input.md"
    );
    let mut failures = Vec::new();
    for section in &sections {
        assert!(!section.cases.is_empty(), "a gateway block without rows");
        let fleet = Fleet::start().await;
        let gw = fleet.gateway(&section.config).await;
        for case in &section.cases {
            let before = fleet.requests();
            let outcome = match send(&gw, &case.request).await {
                Ok(outcome) => outcome,
                Err(e) => {
                    failures.push(format!("line {}: {e}", case.line));
                    continue;
                }
            };
            let mut problems = check(case, &outcome);
            let reached = fleet.requests() > before;
            if reached != case.reaches_agent {
                problems.push(format!(
                    "an agent was {}reached",
                    if reached { "" } else { "not " }
                ));
            }
            failures.extend(
                problems
                    .into_iter()
                    .map(|p| format!("line {}: {p}", case.line)),
            );
        }
        // Whatever came before, the gateway still serves a good call.
        let good = r#"{"jsonrpc":"2.0","id":"after","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#;
        let key = [("a2a-skill", "echo"), ("x-api-key", "catalogue-key")];
        let reply = client::post_json(&gw.url(), good, &key).await;
        if reply.status != StatusCode::OK && reply.status != StatusCode::TOO_MANY_REQUESTS {
            failures.push(format!(
                "after the catalogue a good call got {}: {}",
                reply.status,
                reply.text()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "docs/bad-input.md is not true ({} problems):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn the_document_parser_reads_every_row_kind() {
    let sections = parse_doc(DOC);
    let cases: Vec<&Case> = sections.iter().flat_map(|s| &s.cases).collect();
    assert!(cases.iter().any(|c| matches!(c.request, Request::Raw(_))));
    assert!(cases.iter().any(|c| c.status == Status::Closed));
    assert!(cases.iter().any(|c| c.code == Code::Ok));
    assert!(cases.iter().any(|c| !c.headers.is_empty()));
    assert_eq!(expand("a⟨repeat 3 xy⟩b⟨0xff⟩"), b"axyxyxyb\xff");
    assert_eq!(unescape_raw(br"a\r\nb\\"), b"a\r\nb\\");
    assert_eq!(
        code_span("``a `b` c``").as_deref(),
        Some("a `b` c"),
        "double-backtick spans"
    );
    assert_eq!(split_row(r"| `a\|b` | c |"), ["`a|b`", "c"]);
}
