//! Load clients for bench/run.sh (subcommands of the bench-upstream example).
//! Each prints one JSON line on stdout; diagnostics go to stderr.
//!
//!   rate --url URL --body FILE --rate R --secs S [--conns C] [--h2] [--expect STR] [-H 'k: v']…
//!       Open-loop load at a fixed rate (wrk2's model): request i is due at
//!       start + i/R, spread round-robin over C keep-alive connections. HTTP/1.1
//!       sends one request per connection at a time; h2 multiplexes. Latency is
//!       measured from the moment the request was sent, or from its due time
//!       when it could not be sent on time because the connection was still busy
//!       (coordinated omission is charged to the server, timer slack is not).
//!       A request fails unless it answers 200 with STR (default `"result"`) in
//!       the body.
//!   sse --url URL --body FILE --streams N [--conns C] [--h2] [--events E] [-H …]
//!       Closed loop: C workers (HTTP/1.1: a connection each; h2: one shared
//!       connection) open N streams in all, one after another, and read each to
//!       its end. Per stream: time to the first complete event, time to the
//!       end, and the mean gap between events. A stream fails unless it answers
//!       200 text/event-stream with exactly E events.
//!   idle --url URL --body FILE --streams N [--h2] [--hold S] [-H …]
//!       Opens N streams (HTTP/1.1: a connection each; h2: 100 per connection),
//!       waits for the first event on every one, prints its JSON line, holds them
//!       all open for S seconds (default 5) and exits.
//!
//!   seq --url URL [--body FILE] --calls N [--h2] [--get] [--stream] [--expect STR] [--events E] [-H …]
//!       N calls one after another on one connection, each checked as `rate`
//!       checks it (`--stream`: as `sse` does; `--get`: a GET without a
//!       body). For bench/ledger.sh, which counts the instructions a call
//!       costs the gateway, so the client only has to be exact, not fast.
//!
//! `rate` and `sse` also take an `https://` URL with `--cacert FILE` (the PEM
//! certificate to trust): TLS with ALPN `h2` (with --h2) or `http/1.1`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Request, Response, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Opts {
    url: Uri,
    body: Bytes,
    rate: f64,
    secs: f64,
    conns: usize,
    h2: bool,
    expect: String,
    streams: usize,
    events: usize,
    hold: f64,
    calls: usize,
    get: bool,
    stream: bool,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// For an `https://` URL: the connector trusting `--cacert`.
    tls: Option<tokio_rustls::TlsConnector>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        url: Uri::from_static("http://127.0.0.1:8080/"),
        body: Bytes::new(),
        rate: 1000.0,
        secs: 5.0,
        conns: 16,
        h2: false,
        expect: "\"result\"".into(),
        streams: 1000,
        events: 10,
        hold: 5.0,
        calls: 1,
        get: false,
        stream: false,
        headers: Vec::new(),
        tls: None,
    };
    let mut cacert = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let switch = match flag.as_str() {
            "--h2" => Some(&mut o.h2),
            "--get" => Some(&mut o.get),
            "--stream" => Some(&mut o.stream),
            _ => None,
        };
        if let Some(on) = switch {
            *on = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--url" => o.url = value.parse().map_err(|e| format!("--url: {e}"))?,
            "--body" => {
                o.body = std::fs::read(value)
                    .map_err(|e| format!("--body {value}: {e}"))?
                    .into()
            }
            "--rate" => o.rate = num(value)?.max(1.0),
            "--secs" => o.secs = num(value)?.max(0.1),
            "--conns" => o.conns = (num(value)? as usize).max(1),
            "--expect" => o.expect = value.clone(),
            "--streams" => o.streams = num(value)? as usize,
            "--events" => o.events = num(value)? as usize,
            "--hold" => o.hold = num(value)?,
            "--calls" => o.calls = num(value)? as usize,
            "--cacert" => cacert = Some(value.clone()),
            "-H" => {
                let (k, v) = value
                    .split_once(':')
                    .ok_or_else(|| format!("-H wants 'name: value', got {value}"))?;
                let k = HeaderName::from_bytes(k.trim().as_bytes()).map_err(|e| e.to_string())?;
                let v = HeaderValue::from_str(v.trim()).map_err(|e| e.to_string())?;
                o.headers.push((k, v));
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.url.host().is_none() || o.url.port_u16().is_none() {
        return Err("--url must look like http://127.0.0.1:PORT/".into());
    }
    if o.url.scheme_str() == Some("https") {
        let cacert = cacert.ok_or("an https:// --url needs --cacert FILE")?;
        o.tls = Some(tls_connector(&cacert, o.h2)?);
    }
    Ok(o)
}

/// TLS trusting only `cacert`, offering the one protocol the client speaks.
fn tls_connector(cacert: &str, h2: bool) -> Result<tokio_rustls::TlsConnector, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for cert in
        CertificateDer::pem_file_iter(cacert).map_err(|e| format!("--cacert {cacert}: {e}"))?
    {
        let cert = cert.map_err(|e| format!("--cacert {cacert}: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("--cacert {cacert}: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![if h2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

pub fn main(mode: &str, args: &[String]) -> i32 {
    let opts = match parse(args) {
        Ok(o) => Arc::new(o),
        Err(e) => {
            eprintln!("bench-upstream {mode}: {e}");
            return 2;
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let line = runtime.block_on(async move {
        match mode {
            "rate" => rate(opts).await,
            "sse" => sse(opts).await,
            "seq" => seq(opts).await,
            _ => idle(opts).await,
        }
    });
    match line {
        Ok((line, failed)) => {
            if !line.is_empty() {
                println!("{line}");
            }
            // The JSON line is printed either way; the exit code says whether
            // every request succeeded.
            i32::from(failed > 0)
        }
        Err(e) => {
            eprintln!("bench-upstream {mode}: {e}");
            1
        }
    }
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    async fn send(&mut self, req: Request<Full<Bytes>>) -> Result<Response<Incoming>, String> {
        match self {
            Sender::H1(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await.map_err(|e| e.to_string())
            }
            Sender::H2(s) => {
                s.ready().await.map_err(|e| e.to_string())?;
                s.send_request(req).await.map_err(|e| e.to_string())
            }
        }
    }

    fn h2_clone(&self) -> Option<Sender> {
        match self {
            Sender::H2(s) => Some(Sender::H2(s.clone())),
            Sender::H1(_) => None,
        }
    }
}

fn authority(o: &Opts) -> String {
    format!(
        "{}:{}",
        o.url.host().unwrap_or("127.0.0.1"),
        o.url.port_u16().unwrap_or(80)
    )
}

async fn connect(o: &Opts) -> Result<Sender, String> {
    let stream = TcpStream::connect(authority(o))
        .await
        .map_err(|e| format!("connect {}: {e}", authority(o)))?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = &o.tls else {
        return handshake(o, TokioIo::new(stream)).await;
    };
    let host = o.url.host().unwrap_or("127.0.0.1");
    let name = rustls_pki_types::ServerName::try_from(host)
        .map_err(|e| format!("tls name {host}: {e}"))?
        .to_owned();
    let stream = tls
        .connect(name, stream)
        .await
        .map_err(|e| format!("tls handshake: {e}"))?;
    handshake(o, TokioIo::new(stream)).await
}

async fn handshake<T>(o: &Opts, io: T) -> Result<Sender, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    if o.h2 {
        let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
        tokio::spawn(conn);
        Ok(Sender::H2(send))
    } else {
        let (send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("h1 handshake: {e}"))?;
        tokio::spawn(conn);
        Ok(Sender::H1(send))
    }
}

fn request(o: &Opts) -> Request<Full<Bytes>> {
    let path = o.url.path_and_query().map_or("/", |p| p.as_str());
    let uri: Uri = if o.h2 {
        let scheme = o.url.scheme_str().unwrap_or("http");
        format!("{scheme}://{}{path}", authority(o))
            .parse()
            .expect("uri")
    } else {
        path.parse().expect("path")
    };
    let (method, body) = match o.get {
        true => (http::Method::GET, Bytes::new()),
        false => (http::Method::POST, o.body.clone()),
    };
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Full::new(body))
        .expect("request");
    let h = req.headers_mut();
    if !o.h2 {
        h.insert(
            header::HOST,
            HeaderValue::from_str(&authority(o)).expect("host"),
        );
    }
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for (k, v) in &o.headers {
        h.insert(k.clone(), v.clone());
    }
    req
}

/// One unary call: Ok(()) when it answered 200 (or 202, the push relay's
/// callback) with `expect` in the body.
async fn unary(sender: &mut Sender, o: &Opts) -> Result<(), String> {
    let resp = sender.send(request(o)).await?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if status != 200 && status != 202 {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    if !o.expect.is_empty() && !contains(&body, o.expect.as_bytes()) {
        return Err(format!(
            "answer lacks {}: {}",
            o.expect,
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[derive(Default)]
struct Tally {
    lat_us: Vec<u32>,
    ok: usize,
    errors: usize,
    first_error: Option<String>,
}

impl Tally {
    fn record(&mut self, r: Result<(), String>, lat: Duration) {
        match r {
            Ok(()) => {
                self.ok += 1;
                self.lat_us
                    .push(lat.as_micros().min(u32::MAX as u128) as u32);
            }
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert(e);
            }
        }
    }
}

fn pct(sorted: &[u32], q: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn summary(prefix: &str, v: &mut [u32]) -> String {
    v.sort_unstable();
    let mean = if v.is_empty() {
        0.0
    } else {
        v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
    };
    format!(
        r#""{prefix}p50_us":{},"{prefix}p90_us":{},"{prefix}p99_us":{},"{prefix}p999_us":{},"{prefix}max_us":{},"{prefix}mean_us":{:.1}"#,
        pct(v, 0.5),
        pct(v, 0.9),
        pct(v, 0.99),
        pct(v, 0.999),
        v.last().copied().unwrap_or(0),
        mean
    )
}

async fn rate(o: Arc<Opts>) -> Result<(String, usize), String> {
    let total = (o.rate * o.secs).round() as usize;
    let interval = Duration::from_secs_f64(1.0 / o.rate);
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let deadline = start + Duration::from_secs_f64(o.secs) + Duration::from_secs(15);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut workers = tokio::task::JoinSet::new();
    for k in 0..o.conns.min(total.max(1)) {
        let (o, tally) = (o.clone(), tally.clone());
        workers.spawn(async move {
            let mut sender = match connect(&o).await {
                Ok(s) => s,
                Err(e) => {
                    let mut t = tally.lock().unwrap();
                    let missed = (k..total).step_by(o.conns).count();
                    t.errors += missed;
                    t.first_error.get_or_insert(e);
                    return;
                }
            };
            let mut inflight = tokio::task::JoinSet::new();
            for i in (k..total).step_by(o.conns) {
                let due = start + interval * i as u32;
                let now = tokio::time::Instant::now();
                let t0 = if now < due {
                    tokio::time::sleep_until(due).await;
                    Instant::now()
                } else {
                    due.into_std()
                };
                if let Some(mut h2) = sender.h2_clone() {
                    let (o, tally) = (o.clone(), tally.clone());
                    inflight.spawn(async move {
                        let r = tokio::time::timeout(Duration::from_secs(10), unary(&mut h2, &o))
                            .await
                            .unwrap_or_else(|_| Err("timed out after 10 s".into()));
                        tally.lock().unwrap().record(r, t0.elapsed());
                    });
                } else {
                    let r = tokio::time::timeout(Duration::from_secs(10), unary(&mut sender, &o))
                        .await
                        .unwrap_or_else(|_| Err("timed out after 10 s".into()));
                    let failed = r.is_err();
                    tally.lock().unwrap().record(r, t0.elapsed());
                    if failed {
                        // The connection may be unusable: start a new one.
                        match connect(&o).await {
                            Ok(s) => sender = s,
                            Err(e) => {
                                tally.lock().unwrap().first_error.get_or_insert(e);
                            }
                        }
                    }
                }
            }
            while inflight.join_next().await.is_some() {}
        });
    }
    let finished = tokio::time::timeout_at(deadline, async {
        while workers.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    let elapsed = start.elapsed().as_secs_f64();
    workers.abort_all();
    let mut t = std::mem::take(&mut *tally.lock().unwrap());
    let missing = total.saturating_sub(t.ok + t.errors);
    t.errors += missing;
    if !finished {
        t.first_error
            .get_or_insert_with(|| "run did not finish in time".into());
    }
    if let Some(e) = &t.first_error {
        eprintln!("rate: {} failed; first: {e}", t.errors);
    }
    let line = format!(
        r#"{{"mode":"rate","proto":"{}","rate":{},"secs":{},"conns":{},"sent":{},"ok":{},"errors":{},"achieved_rps":{:.1},{}}}"#,
        if o.h2 { "h2" } else { "h1" },
        o.rate,
        o.secs,
        o.conns,
        total,
        t.ok,
        t.errors,
        t.ok as f64 / elapsed.max(1e-9),
        summary("", &mut t.lat_us)
    );
    Ok((line, t.errors))
}

struct StreamStats {
    ttfe: Vec<u32>,
    total: Vec<u32>,
    gap_us_sum: f64,
    events: usize,
    ok: usize,
    errors: usize,
    first_error: Option<String>,
}

/// Reads one stream to its end: (time to first event, time to end, mean gap, events).
async fn one_stream(
    sender: &mut Sender,
    o: &Opts,
) -> Result<(Duration, Duration, f64, usize), String> {
    let t0 = Instant::now();
    let resp = sender.send(request(o)).await?;
    let status = resp.status();
    let is_sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut body = resp.into_body();
    if status != 200 || !is_sse {
        let b = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "status {status}, not an event stream: {}",
            String::from_utf8_lossy(&b[..b.len().min(200)])
        ));
    }
    let (mut events, mut newline) = (0usize, false);
    let (mut first, mut last) = (None, t0);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("stream broke after {events} events: {e}"))?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        let now = Instant::now();
        for &b in data.iter() {
            match b {
                b'\n' if newline => {
                    events += 1;
                    first.get_or_insert(now);
                    last = now;
                    newline = false;
                }
                b'\n' => newline = true,
                b'\r' => {}
                _ => newline = false,
            }
        }
    }
    let end = t0.elapsed();
    let Some(first) = first else {
        return Err("stream ended with no event".into());
    };
    if o.events > 0 && events != o.events {
        return Err(format!("expected {} events, got {events}", o.events));
    }
    let gap = if events > 1 {
        (last - first).as_secs_f64() * 1e6 / (events - 1) as f64
    } else {
        0.0
    };
    Ok((first - t0, end, gap, events))
}

/// `seq`: the calls one after another on one connection.
async fn seq(o: Arc<Opts>) -> Result<(String, usize), String> {
    let mut sender = connect(&o).await?;
    let (mut ok, mut errors, mut first_error) = (0usize, 0usize, None);
    for _ in 0..o.calls {
        let done = match o.stream {
            true => one_stream(&mut sender, &o).await.map(drop),
            false => unary(&mut sender, &o).await,
        };
        match done {
            Ok(()) => ok += 1,
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = &first_error {
        eprintln!("bench-upstream seq: first error: {e}");
    }
    Ok((format!("{{\"ok\":{ok},\"errors\":{errors}}}"), errors))
}

async fn sse(o: Arc<Opts>) -> Result<(String, usize), String> {
    let next = Arc::new(AtomicUsize::new(0));
    let stats = Arc::new(Mutex::new(StreamStats {
        ttfe: Vec::new(),
        total: Vec::new(),
        gap_us_sum: 0.0,
        events: 0,
        ok: 0,
        errors: 0,
        first_error: None,
    }));
    let shared = if o.h2 { Some(connect(&o).await?) } else { None };
    let began = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..o.conns.min(o.streams.max(1)) {
        let (o, next, stats) = (o.clone(), next.clone(), stats.clone());
        let mut sender = match &shared {
            Some(s) => s.h2_clone(),
            None => None,
        };
        workers.spawn(async move {
            if sender.is_none() {
                match connect(&o).await {
                    Ok(s) => sender = Some(s),
                    Err(e) => {
                        let mut s = stats.lock().unwrap();
                        s.first_error.get_or_insert(e);
                        return;
                    }
                }
            }
            let Some(mut sender) = sender else { return };
            while next.fetch_add(1, Ordering::Relaxed) < o.streams {
                let r = tokio::time::timeout(Duration::from_secs(10), one_stream(&mut sender, &o))
                    .await
                    .unwrap_or_else(|_| Err("stream timed out after 10 s".into()));
                let failed = {
                    let mut s = stats.lock().unwrap();
                    match r {
                        Ok((ttfe, total, gap, events)) => {
                            s.ok += 1;
                            s.events += events;
                            s.ttfe.push(ttfe.as_micros() as u32);
                            s.total.push(total.as_micros() as u32);
                            s.gap_us_sum += gap;
                            false
                        }
                        Err(e) => {
                            s.errors += 1;
                            s.first_error.get_or_insert(e);
                            true
                        }
                    }
                };
                if failed {
                    {
                        if !o.h2 {
                            match connect(&o).await {
                                Ok(new) => sender = new,
                                Err(_) => return,
                            }
                        }
                    }
                }
            }
        });
    }
    let deadline = Duration::from_secs(30) + Duration::from_millis(20 * o.streams as u64);
    let finished = tokio::time::timeout(deadline, async {
        while workers.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    workers.abort_all();
    let elapsed = began.elapsed().as_secs_f64();
    let mut s = stats.lock().unwrap();
    let missing = o.streams.saturating_sub(s.ok + s.errors);
    s.errors += missing;
    if !finished {
        s.first_error
            .get_or_insert_with(|| "run did not finish in time".into());
    }
    if let Some(e) = &s.first_error {
        eprintln!("sse: {} failed; first: {e}", s.errors);
    }
    let gap = if s.ok > 0 {
        s.gap_us_sum / s.ok as f64
    } else {
        0.0
    };
    let (ok, errors, events) = (s.ok, s.errors, s.events);
    let ttfe = summary("ttfe_", &mut s.ttfe);
    let total = summary("total_", &mut s.total);
    let line = format!(
        r#"{{"mode":"sse","proto":"{}","streams":{},"conns":{},"ok":{ok},"errors":{errors},"events":{events},"streams_per_s":{:.1},"gap_mean_us":{gap:.1},{ttfe},{total}}}"#,
        if o.h2 { "h2" } else { "h1" },
        o.streams,
        o.conns,
        ok as f64 / elapsed.max(1e-9),
    );
    Ok((line, errors))
}

/// Holds what keeps one idle stream open.
enum Held {
    Tcp(#[allow(dead_code)] TcpStream),
    H2(#[allow(dead_code)] Incoming),
}

/// An idle HTTP/1.1 stream; `Err(Ok(_))` when the connection failed before
/// any byte of an answer (refused, reset: worth one more try), `Err(Err(_))`
/// for anything else.
async fn idle_h1(o: &Opts, head: &[u8]) -> Result<Held, Result<String, String>> {
    let transient = |e: std::io::Error| Ok(e.to_string());
    let mut s = TcpStream::connect(authority(o))
        .await
        .map_err(|e| Ok(format!("connect: {e}")))?;
    s.write_all(head).await.map_err(transient)?;
    s.write_all(&o.body).await.map_err(transient)?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match s.read(&mut chunk).await {
            Ok(n) => n,
            Err(e) if buf.is_empty() => return Err(transient(e)),
            Err(e) => return Err(Err(e.to_string())),
        };
        if n == 0 {
            return Err(Err(format!(
                "closed before the first event: {}",
                String::from_utf8_lossy(&buf)
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            if !buf.starts_with(b"HTTP/1.1 200") {
                return Err(Err(format!(
                    "not 200: {}",
                    String::from_utf8_lossy(&buf[..end])
                )));
            }
            if find(&buf[end + 4..], b"\n\n").is_some() {
                return Ok(Held::Tcp(s));
            }
        }
        if buf.len() > 65536 {
            return Err(Err("no event in the first 64 KiB".into()));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn idle_h2(mut sender: Sender, o: &Opts) -> Result<Held, String> {
    let resp = sender.send(request(o)).await?;
    if resp.status() != 200 {
        return Err(format!("status {}", resp.status()));
    }
    let mut body = resp.into_body();
    let mut seen = Vec::new();
    while find(&seen, b"\n\n").is_none() {
        match body.frame().await {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref() {
                    seen.extend_from_slice(d);
                }
            }
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err("stream ended before the first event".into()),
        }
    }
    Ok(Held::H2(body))
}

async fn idle(o: Arc<Opts>) -> Result<(String, usize), String> {
    const PER_H2_CONN: usize = 100;
    let began = Instant::now();
    let path = o.url.path_and_query().map_or("/", |p| p.as_str());
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        authority(&o),
        o.body.len()
    );
    for (k, v) in &o.headers {
        head.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or("")));
    }
    head.push_str("\r\n");
    let head: Arc<[u8]> = head.into_bytes().into();
    let mut senders = Vec::new();
    if o.h2 {
        for _ in 0..o.streams.div_ceil(PER_H2_CONN) {
            senders.push(connect(&o).await?);
        }
    }
    // Bound the streams being set up at once (the listen backlog is finite).
    let gate = Arc::new(tokio::sync::Semaphore::new(200));
    // A connection refused or reset before any answer (a kernel queue
    // overflowing while thousands connect) is tried once more, and counted.
    let retried = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..o.streams {
        let (o, head, gate, retried) = (o.clone(), head.clone(), gate.clone(), retried.clone());
        let h2 = senders.get(i / PER_H2_CONN).and_then(Sender::h2_clone);
        tasks.spawn(async move {
            let _permit = gate.acquire().await;
            let open = async {
                match h2 {
                    Some(sender) => idle_h2(sender, &o).await,
                    None => match idle_h1(&o, &head).await {
                        Err(Ok(_)) => {
                            retried.fetch_add(1, Ordering::Relaxed);
                            idle_h1(&o, &head)
                                .await
                                .map_err(|e| e.unwrap_or_else(|e| e))
                        }
                        other => other.map_err(|e| e.unwrap_or_else(|e| e)),
                    },
                }
            };
            tokio::time::timeout(Duration::from_secs(20), open)
                .await
                .unwrap_or_else(|_| Err("no first event within 20 s".into()))
        });
    }
    let mut held = Vec::with_capacity(o.streams);
    let (mut failed, mut first_error) = (0usize, None);
    let limit = Duration::from_secs(60);
    let collected = tokio::time::timeout(limit, async {
        while let Some(r) = tasks.join_next().await {
            match r {
                Ok(Ok(h)) => held.push(h),
                Ok(Err(e)) => {
                    failed += 1;
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert(e.to_string());
                }
            }
        }
    })
    .await;
    if collected.is_err() {
        tasks.abort_all();
        failed = o.streams - held.len();
        first_error.get_or_insert_with(|| "streams not all open within 60 s".into());
    }
    if let Some(e) = &first_error {
        eprintln!("idle: {failed} failed; first: {e}");
    }
    println!(
        r#"{{"mode":"idle","proto":"{}","streams":{},"opened":{},"errors":{failed},"retried":{},"open_secs":{:.2}}}"#,
        if o.h2 { "h2" } else { "h1" },
        o.streams,
        held.len(),
        retried.load(Ordering::Relaxed),
        began.elapsed().as_secs_f64()
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    tokio::time::sleep(Duration::from_secs_f64(o.hold)).await;
    drop(held);
    drop(senders);
    if failed > 0 {
        return Err(format!("{failed} of {} streams did not open", o.streams));
    }
    Ok((String::new(), 0))
}
