//! TLS termination: JSON-RPC over HTTPS (HTTP/1.1 and h2 by ALPN), refused
//! old protocol versions, client certificates (required and optional), and
//! certificate reload by hand and by the file watcher — open connections
//! keep their certificate, new ones get the new one, a broken file changes
//! nothing.
//!
//! Every certificate is made with rcgen at test time in a temp directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use crate::support::pki::{Ca, Leaf, TempDir};
use a2a_gateway::tls;
use bytes::Bytes;
use http::{Request, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

/// Bound for one connection + exchange.
const WAIT: Duration = Duration::from_secs(10);

/// Files for one gateway: cert.pem, key.pem and (maybe) ca.pem.
struct Files {
    dir: TempDir,
}

impl Files {
    fn new(tag: &str, server: &Leaf) -> Files {
        let dir = TempDir::new(tag);
        dir.write("cert.pem", &server.cert_pem);
        dir.write("key.pem", &server.key_pem);
        Files { dir }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path("key.pem")
    }

    /// Replaces cert and key the way a deployment tool does: both written
    /// to new files first, then renamed over the old ones (key first), so
    /// every replaced file is a new inode.
    fn replace_atomically(&self, leaf: &Leaf) {
        let cert_tmp = self.dir.write("cert.pem.new", &leaf.cert_pem);
        let key_tmp = self.dir.write("key.pem.new", &leaf.key_pem);
        std::fs::rename(key_tmp, self.key()).unwrap();
        std::fs::rename(cert_tmp, self.cert()).unwrap();
    }

    /// `[tls]` for these files.
    fn section(
        &self,
        client_ca: Option<&Path>,
        client_auth: Option<&str>,
        interval: &str,
    ) -> String {
        let mut text = format!(
            "[tls]\ncert = '{}'\nkey = '{}'\nreload_interval = \"{interval}\"\n",
            self.cert().display(),
            self.key().display()
        );
        if let Some(ca) = client_ca {
            text.push_str(&format!("client_ca = '{}'\n", ca.display()));
        }
        if let Some(auth) = client_auth {
            text.push_str(&format!("client_auth = \"{auth}\"\n"));
        }
        text
    }
}

// ------------------------------------------------------------------ client

const TLS12: &SupportedProtocolVersion = &rustls::version::TLS12;
const TLS13: &SupportedProtocolVersion = &rustls::version::TLS13;

struct ClientSetup<'a> {
    trust: &'a Ca,
    alpn: &'a [&'a [u8]],
    versions: &'a [&'static SupportedProtocolVersion],
    identity: Option<&'a Leaf>,
    /// Bytes written before the TLS handshake (a PROXY protocol header).
    before: &'a [u8],
}

impl<'a> ClientSetup<'a> {
    fn new(trust: &'a Ca) -> Self {
        ClientSetup {
            trust,
            alpn: &[b"h2", b"http/1.1"],
            versions: &[TLS13, TLS12],
            identity: None,
            before: b"",
        }
    }

    fn before_handshake(mut self, bytes: &'a [u8]) -> Self {
        self.before = bytes;
        self
    }

    fn alpn(mut self, alpn: &'a [&'a [u8]]) -> Self {
        self.alpn = alpn;
        self
    }

    fn versions(mut self, versions: &'a [&'static SupportedProtocolVersion]) -> Self {
        self.versions = versions;
        self
    }

    fn identity(mut self, leaf: &'a Leaf) -> Self {
        self.identity = Some(leaf);
        self
    }

    fn config(&self) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(self.trust.der()).unwrap();
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_protocol_versions(self.versions)
                .unwrap()
                .with_root_certificates(roots);
        let mut config = match self.identity {
            None => builder.with_no_client_auth(),
            Some(leaf) => {
                let (chain, key) = leaf.identity();
                builder.with_client_auth_cert(chain, key).unwrap()
            }
        };
        config.alpn_protocols = self.alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// One TLS connection to the gateway, kept open across requests.
struct Conn {
    sender: Sender,
    addr: SocketAddr,
    alpn: Option<Vec<u8>>,
    version: Option<rustls::ProtocolVersion>,
    server_cert: CertificateDer<'static>,
    task: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Answer {
    status: StatusCode,
    version: Version,
    /// The head's headers, and the trailers after them (gRPC's status).
    headers: http::HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

impl Conn {
    /// TCP + TLS + HTTP handshakes (the protocol the ALPN chose).
    async fn open(addr: SocketAddr, setup: &ClientSetup<'_>) -> Result<Conn, String> {
        let config = setup.config();
        let connect = async {
            let mut tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect: {e}"))?;
            tcp.write_all(setup.before)
                .await
                .map_err(|e| format!("write: {e}"))?;
            let name = ServerName::try_from("localhost").unwrap();
            let stream = TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake: {e}"))?;
            let (_, session) = stream.get_ref();
            let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
            let version = session.protocol_version();
            let server_cert = session
                .peer_certificates()
                .and_then(|c| c.first())
                .cloned()
                .ok_or("no server certificate")?;
            let io = TokioIo::new(stream);
            let (sender, task) = if alpn.as_deref() == Some(b"h2") {
                let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(|e| format!("h2 handshake: {e}"))?;
                (
                    Sender::H2(sender),
                    tokio::spawn(async move {
                        let _ = conn.await;
                    }),
                )
            } else {
                let (sender, conn) = http1::handshake(io)
                    .await
                    .map_err(|e| format!("http1 handshake: {e}"))?;
                (
                    Sender::H1(sender),
                    tokio::spawn(async move {
                        let _ = conn.await;
                    }),
                )
            };
            Ok(Conn {
                sender,
                addr,
                alpn,
                version,
                server_cert,
                task,
            })
        };
        tokio::time::timeout(WAIT, connect)
            .await
            .unwrap_or_else(|_| panic!("TLS connect to {addr} did not finish in {WAIT:?}"))
    }

    fn server_subject(&self) -> String {
        tls::describe(&self.server_cert).unwrap().subject
    }

    /// A JSON-RPC POST on this connection.
    async fn post(&mut self, body: &str) -> Result<Answer, String> {
        let json = [("content-type", "application/json")];
        self.post_to("/", &json, Bytes::from(body.to_string()))
            .await
    }

    /// A POST of `body` to `path` with these headers.
    async fn post_to(
        &mut self,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Answer, String> {
        let (uri, version) = match self.sender {
            Sender::H1(_) => (path.to_string(), Version::HTTP_11),
            Sender::H2(_) => (
                format!("https://localhost:{}{path}", self.addr.port()),
                Version::HTTP_2,
            ),
        };
        let mut request = Request::post(uri).version(version);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if version == Version::HTTP_11 {
            request = request.header("host", format!("localhost:{}", self.addr.port()));
        }
        let request = request.body(Full::new(body)).unwrap();
        let exchange = async {
            let response = match &mut self.sender {
                Sender::H1(s) => {
                    s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                    s.send_request(request).await
                }
                Sender::H2(s) => {
                    s.ready().await.map_err(|e| format!("not ready: {e}"))?;
                    s.send_request(request).await
                }
            }
            .map_err(|e| format!("request: {e}"))?;
            let (parts, body) = response.into_parts();
            let collected = body.collect().await.map_err(|e| format!("body: {e}"))?;
            let mut headers = parts.headers;
            if let Some(trailers) = collected.trailers() {
                headers.extend(trailers.clone());
            }
            Ok(Answer {
                status: parts.status,
                version: parts.version,
                headers,
                body: collected.to_bytes(),
            })
        };
        tokio::time::timeout(WAIT, exchange)
            .await
            .unwrap_or_else(|_| panic!("request did not finish in {WAIT:?}"))
    }
}

/// Connects and makes one call; `Err` if either the handshake or the call
/// fails (with TLS 1.3 a refused client certificate only shows on the
/// first read, after the client thinks the handshake is done).
async fn call(addr: SocketAddr, setup: &ClientSetup<'_>) -> Result<Answer, String> {
    let mut conn = Conn::open(addr, setup).await?;
    conn.post(&send("hello")).await
}

fn send(text: &str) -> String {
    crate::support::calls::call_raw(r#""r-1""#, "message/send", text)
}

fn assert_answered(answer: &Answer) {
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let v = answer.json();
    assert_eq!(v["id"], "r-1", "{v}");
    assert!(v.get("result").is_some(), "{v}");
}

async fn gateway(agent: &MockAgent, tls_section: &str) -> TestGateway {
    TestGateway::start(&[("echo", &agent.url())], tls_section).await
}

/// A TLS gateway whose header-read (and handshake) timeout is `timeout`.
async fn gateway_with_header_timeout(
    agent: &MockAgent,
    files: &Files,
    timeout: &str,
) -> TestGateway {
    let tls_section = files.section(None, None, "1h");
    let limits = format!("[limits]\nheader_read_timeout = \"{timeout}\"\n{tls_section}");
    gateway(agent, &limits).await
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn grpc_over_tls_is_told_apart_by_alpn_h2() {
    use a2a_gateway::a2a::grpc::v1;
    use prost::Message as _;
    let ca = Ca::new("Test CA");
    let files = Files::new("grpc-tls", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(None, None, "1h")).await;
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[b"h2"]))
        .await
        .expect("h2 by ALPN");
    assert_eq!(conn.alpn.as_deref(), Some(&b"h2"[..]));
    let request = crate::support::calls::grpc_send("over TLS");
    let message = request.encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    let grpc = [("content-type", "application/grpc"), ("te", "trailers")];
    let path = "/lf.a2a.v1.A2AService/SendMessage";
    let answer = conn
        .post_to(path, &grpc, Bytes::from(framed))
        .await
        .unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    let status = answer
        .headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok());
    assert_eq!(status, Some("0"), "{:?}", answer.headers);
    let reply = v1::SendMessageResponse::decode(&answer.body[5..]).expect("one message");
    assert!(
        matches!(
            reply.payload,
            Some(v1::send_message_response::Payload::Task(_))
        ),
        "{reply:?}"
    );
    let call = (agent.requests().into_iter())
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    assert_eq!(
        call.json()["params"]["message"]["parts"][0]["text"],
        "over TLS"
    );

    // Over HTTP/1.1 by ALPN: a gRPC status saying HTTP/2 is needed.
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[b"http/1.1"]))
        .await
        .unwrap();
    let answer = conn
        .post_to(path, &grpc, Bytes::from_static(b"\0\0\0\0\0"))
        .await
        .unwrap();
    let status = answer
        .headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok());
    assert_eq!(status, Some("3"), "{:?}", answer.headers);
}

#[tokio::test]
async fn json_rpc_over_tls_with_http11_and_h2_reaches_the_agent() {
    let ca = Ca::new("Test CA");
    let files = Files::new("basic", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(None, None, "1h")).await;

    // ALPN "http/1.1" only.
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[b"http/1.1"]))
        .await
        .unwrap();
    assert_eq!(conn.alpn.as_deref(), Some(&b"http/1.1"[..]));
    let answer = conn.post(&send("one")).await.unwrap();
    assert_answered(&answer);
    assert_eq!(answer.version, Version::HTTP_11);
    // Keep-alive: a second call on the same connection.
    assert_answered(&conn.post(&send("two")).await.unwrap());

    // ALPN "h2" (a browser-like offer of both picks h2).
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_eq!(conn.alpn.as_deref(), Some(&b"h2"[..]));
    let answer = conn.post(&send("three")).await.unwrap();
    assert_answered(&answer);
    assert_eq!(answer.version, Version::HTTP_2);

    // No ALPN at all: HTTP/1.1 (HTTP/2 over TLS needs ALPN).
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[]))
        .await
        .unwrap();
    assert_eq!(conn.alpn, None);
    let answer = conn.post(&send("four")).await.unwrap();
    assert_answered(&answer);
    assert_eq!(answer.version, Version::HTTP_11);

    let requests = agent.requests();
    assert_eq!(requests.len(), 4);
    for r in &requests {
        assert_eq!(r.header("x-forwarded-proto"), Some("https"), "{r:?}");
        assert_eq!(r.json()["method"], "message/send");
    }
    assert_eq!(
        requests[2].json()["params"]["message"]["parts"][0]["text"],
        "three"
    );
}

#[tokio::test]
async fn the_published_card_uses_https() {
    let ca = Ca::new("Test CA");
    let files = Files::new("card", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(None, None, "1h")).await;
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[b"http/1.1"]))
        .await
        .unwrap();
    let Sender::H1(sender) = &mut conn.sender else {
        panic!("expected HTTP/1.1")
    };
    let request = Request::get("/.well-known/agent-card.json")
        .header("host", format!("localhost:{}", gw.addr().port()))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let card: Value = serde_json::from_slice(&body).unwrap();
    let url = card["url"].as_str().unwrap_or_default();
    assert!(url.starts_with("https://localhost:"), "{card}");
}

#[tokio::test]
async fn tls12_and_tls13_are_served_and_older_versions_refused() {
    let ca = Ca::new("Test CA");
    let files = Files::new("versions", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(None, None, "1h")).await;

    for version in [TLS12, TLS13] {
        let versions = [version];
        let setup = ClientSetup::new(&ca).versions(&versions);
        let mut conn = Conn::open(gw.addr(), &setup).await.unwrap();
        assert_eq!(conn.version, Some(version.version));
        assert_answered(&conn.post(&send("hi")).await.unwrap());
    }

    // rustls clients cannot offer TLS 1.0 / 1.1, so the ClientHello is
    // written by hand. The same hello claiming TLS 1.2 gets a ServerHello,
    // which shows the hello itself is well-formed.
    let reply = first_bytes(gw.addr(), &client_hello([3, 3]), 7).await;
    assert_eq!(
        reply.first(),
        Some(&0x16),
        "a TLS 1.2 hello gets a handshake: {reply:?}"
    );
    for (name, version) in [("TLS 1.0", [3, 1]), ("TLS 1.1", [3, 2])] {
        let reply = first_bytes(gw.addr(), &client_hello(version), 7).await;
        // An alert record: type 21, fatal (2), protocol_version (70).
        assert!(reply.len() >= 7, "{name}: {reply:?}");
        assert_eq!(reply[0], 0x15, "{name}: expected an alert, got {reply:?}");
        assert_eq!(&reply[5..7], &[2, 70], "{name}: {reply:?}");
    }
}

/// Sends `bytes` and reads until `n` bytes came back, EOF or an error
/// (bounded by [`WAIT`]).
async fn first_bytes(addr: SocketAddr, bytes: &[u8], n: usize) -> Vec<u8> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        let mut received = Vec::new();
        let mut chunk = [0u8; 1024];
        while received.len() < n {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(k) => received.extend_from_slice(&chunk[..k]),
            }
        }
        received
    };
    tokio::time::timeout(WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("no answer from {addr} in {WAIT:?}"))
}

/// A minimal ClientHello offering only `version` (no supported_versions
/// extension), with ECDHE suites, groups and signature algorithms a TLS 1.2
/// server accepts.
fn client_hello(version: [u8; 2]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&version);
    body.extend_from_slice(&[7u8; 32]); // random
    body.push(0); // session id
    let suites: &[u8] = &[0xc0, 0x2b, 0xc0, 0x2f, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x2f];
    body.extend_from_slice(&(suites.len() as u16).to_be_bytes());
    body.extend_from_slice(suites);
    body.extend_from_slice(&[1, 0]); // compression: null
    let mut extensions = Vec::new();
    let mut ext = |kind: u16, data: &[u8]| {
        extensions.extend_from_slice(&kind.to_be_bytes());
        extensions.extend_from_slice(&(data.len() as u16).to_be_bytes());
        extensions.extend_from_slice(data);
    };
    ext(0x000a, &[0, 4, 0x00, 0x1d, 0x00, 0x17]); // groups: x25519, P-256
    ext(0x000b, &[1, 0]); // ec point formats: uncompressed
    ext(0x000d, &[0, 6, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01]); // signature algorithms
    body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
    body.extend_from_slice(&extensions);

    let mut handshake = vec![1u8]; // client_hello
    handshake.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 3, 1];
    record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

#[tokio::test]
async fn plain_http_and_stalled_handshakes_do_not_get_in_the_way() {
    let ca = Ca::new("Test CA");
    let files = Files::new("plain", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway_with_header_timeout(&agent, &files, "500ms").await;

    // A client that connects and says nothing holds no one up, and is cut
    // off after the header-read timeout.
    let mut silent = TcpStream::connect(gw.addr()).await.unwrap();
    assert_answered(&call(gw.addr(), &ClientSetup::new(&ca)).await.unwrap());
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(WAIT, silent.read(&mut buf))
        .await
        .expect("a silent client is disconnected after the header-read timeout");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");

    // Plain HTTP on the TLS port gets no HTTP answer.
    let reply = client::raw_http(
        gw.addr(),
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(
        !reply.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&reply)
    );
    assert_answered(&call(gw.addr(), &ClientSetup::new(&ca)).await.unwrap());
}

#[tokio::test]
async fn client_auth_required_needs_a_certificate_from_the_client_ca() {
    let ca = Ca::new("Test CA");
    let rogue = Ca::new("Rogue CA");
    let files = Files::new("required", &ca.server("gateway", 1));
    let client_ca = files.dir.write("ca.pem", &ca.cert.pem());
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(Some(&client_ca), None, "1h")).await;
    let alice = ca.client("alice");
    let mallory = rogue.client("mallory");

    for versions in [&[TLS13][..], &[TLS12][..]] {
        let anonymous = ClientSetup::new(&ca).versions(versions);
        let err = call(gw.addr(), &anonymous).await.err();
        assert!(
            err.is_some(),
            "no client certificate must fail ({versions:?})"
        );
        let wrong = ClientSetup::new(&ca).versions(versions).identity(&mallory);
        assert!(call(gw.addr(), &wrong).await.is_err(), "wrong CA must fail");
        let right = ClientSetup::new(&ca).versions(versions).identity(&alice);
        assert_answered(&call(gw.addr(), &right).await.unwrap());
    }
    assert_eq!(
        agent.requests().len(),
        2,
        "only alice's calls reach the agent"
    );
}

#[tokio::test]
async fn client_auth_optional_accepts_anonymous_but_not_a_wrong_ca() {
    let ca = Ca::new("Test CA");
    let rogue = Ca::new("Rogue CA");
    let files = Files::new("optional", &ca.server("gateway", 1));
    let client_ca = files.dir.write("ca.pem", &ca.cert.pem());
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(
        &agent,
        &files.section(Some(&client_ca), Some("optional"), "1h"),
    )
    .await;

    assert_answered(&call(gw.addr(), &ClientSetup::new(&ca)).await.unwrap());
    let alice = ca.client("alice");
    assert_answered(
        &call(gw.addr(), &ClientSetup::new(&ca).identity(&alice))
            .await
            .unwrap(),
    );
    let mallory = rogue.client("mallory");
    assert!(call(gw.addr(), &ClientSetup::new(&ca).identity(&mallory))
        .await
        .is_err());
    assert_eq!(agent.requests().len(), 2);
}

#[tokio::test]
async fn reload_serves_the_new_certificate_to_new_connections_only() {
    let ca = Ca::new("Test CA");
    let files = Files::new("reload", &ca.server("gateway-one", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    // The watcher waits an hour: only the explicit reloads count here.
    let gw = gateway(&agent, &files.section(None, None, "1h")).await;

    let mut old = Conn::open(gw.addr(), &ClientSetup::new(&ca).alpn(&[b"http/1.1"]))
        .await
        .unwrap();
    assert_answered(&old.post(&send("before")).await.unwrap());
    assert!(old.server_subject().contains("CN=gateway-one"));

    // In-place rewrite, then the reload hook (what SIGHUP does).
    let two = ca.server("gateway-two-renewed", 2);
    files.dir.write("cert.pem", &two.cert_pem);
    files.dir.write("key.pem", &two.key_pem);
    gw.running.reload_tls().unwrap();

    // The open keep-alive connection keeps working on its session.
    assert_answered(&old.post(&send("after")).await.unwrap());
    assert!(old.server_subject().contains("CN=gateway-one"));
    // A new one sees the new certificate.
    let mut new = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_eq!(new.server_cert, two.der);
    assert_answered(&new.post(&send("new")).await.unwrap());

    // A broken key is refused and the current certificate keeps serving.
    files.dir.write(
        "key.pem",
        "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n",
    );
    let err = gw.running.reload_tls().unwrap_err();
    assert!(err.contains("tls.key"), "{err}");
    // So is a key that belongs to another certificate.
    files
        .dir
        .write("key.pem", &ca.server("someone-else", 3).key_pem);
    let err = gw.running.reload_tls().unwrap_err();
    assert!(err.contains("does not belong"), "{err}");
    let mut after = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_eq!(after.server_cert, two.der);
    assert_answered(&after.post(&send("still")).await.unwrap());
    assert_answered(&old.post(&send("old still")).await.unwrap());
    assert_answered(&new.post(&send("new still")).await.unwrap());
}

#[tokio::test]
async fn the_watcher_picks_up_replaced_files() {
    let ca = Ca::new("Test CA");
    let files = Files::new("watch", &ca.server("gateway-one", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway(&agent, &files.section(None, None, "200ms")).await;
    let mut old = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_answered(&old.post(&send("before")).await.unwrap());

    let two = ca.server("gateway-two-renewed", 2);
    files.replace_atomically(&two);
    // Bounded wait: a few reload intervals, polled with new connections.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let conn = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
        if conn.server_cert == two.der {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watcher did not reload within 10 s (still {})",
            conn.server_subject()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_answered(&old.post(&send("after")).await.unwrap());

    // A broken replacement is ignored by the watcher as well.
    files.dir.write("key.pem", "garbage");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut conn = Conn::open(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_eq!(conn.server_cert, two.der);
    assert_answered(&conn.post(&send("still")).await.unwrap());
}

#[tokio::test]
async fn start_fails_clearly_when_the_files_go_bad_after_check() {
    let ca = Ca::new("Test CA");
    let files = Files::new("start", &ca.server("gateway", 1));
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n{}\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n",
        files.section(None, None, "1h")
    );
    let config = a2a_gateway::config::load_with(Some(&text), &Default::default()).unwrap();
    std::fs::remove_file(files.key()).unwrap();
    let err = match a2a_gateway::build(config).start().await {
        Ok(_) => panic!("start must fail without the key file"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("TLS") && err.contains("tls.key") && err.contains("cannot read"),
        "{err}"
    );
}

#[tokio::test]
async fn check_reports_tls_problems_by_field() {
    let dir = TempDir::new("check");
    let garbage = dir.write("garbage.pem", "not PEM\n");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[tls]\ncert = '{}'\nkey = '{}'\nclient_auth = \"required\"\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n",
        garbage.display(),
        dir.path("missing.pem").display()
    );
    let err = match a2a_gateway::config::load_with(Some(&text), &Default::default()) {
        Ok(_) => panic!("the config must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("tls.cert"), "{err}");
    assert!(err.contains("holds no certificate"), "{err}");
    assert!(err.contains("tls.key"), "{err}");
    assert!(err.contains("cannot read"), "{err}");
    assert!(err.contains("tls.client_auth"), "{err}");
}

/// The `mutualTLS` security scheme: the verified client certificate is the
/// caller's identity (its first subjectAltName), passed to the agent in the
/// identity header; a TLS client without one is refused with 401.
#[tokio::test]
async fn the_mutual_tls_scheme_names_the_caller_by_its_certificate() {
    let ca = Ca::new("Test CA");
    let files = Files::new("mtls-scheme", &ca.server("gateway", 1));
    let client_ca = files.dir.write("ca.pem", &ca.cert.pem());
    let agent = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "{}\n[auth]\n[auth.schemes.mtls]\ntype = \"mutualTLS\"\n\n[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\nidentity_header = \"X-Caller\"\n",
        files.section(Some(&client_ca), Some("optional"), "1h"),
        agent.url()
    );
    let gw = TestGateway::from_toml(&text).await;

    let anonymous = call(gw.addr(), &ClientSetup::new(&ca)).await.unwrap();
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.json()["error"]["code"], -32030);
    assert_eq!(agent.requests().len(), 0);

    let alice = ca.client("alice");
    let answer = call(gw.addr(), &ClientSetup::new(&ca).identity(&alice))
        .await
        .unwrap();
    assert_answered(&answer);
    let seen = agent
        .requests()
        .pop()
        .expect("alice's call reached the agent");
    assert_eq!(seen.header("x-caller"), Some("alice@example.com"));
}

#[tokio::test]
async fn a_stalled_handshake_does_not_hold_up_shutdown() {
    let ca = Ca::new("Test CA");
    let files = Files::new("stalled", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let gw = gateway_with_header_timeout(&agent, &files, "30s").await;
    let mut stalled = TcpStream::connect(gw.addr()).await.unwrap();
    // Served first: the stalled connection has been accepted by now.
    assert_answered(&call(gw.addr(), &ClientSetup::new(&ca)).await.unwrap());
    let took = gw.shut_down_within(WAIT).await;
    assert!(
        took < Duration::from_millis(1500),
        "shutdown took {took:?}; the grace is 2 s"
    );
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(WAIT, stalled.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
}

#[tokio::test]
async fn a_proxy_protocol_header_comes_before_the_handshake() {
    let ca = Ca::new("Test CA");
    let files = Files::new("ppp", &ca.server("gateway", 1));
    let agent = MockAgent::start(Mode::Normal).await;
    let section = format!(
        "[server]\nproxy_protocol = true\n{}",
        files.section(None, None, "1h")
    );
    let gw = TestGateway::from_toml(&format!(
        "{section}\n[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n",
        agent.url()
    ))
    .await;
    let header = b"PROXY TCP4 203.0.113.9 10.0.0.1 40000 443\r\n";
    let setup = ClientSetup::new(&ca).before_handshake(header);
    assert_answered(&call(gw.addr(), &setup).await.unwrap());
    let seen = agent.requests().pop().unwrap();
    assert_eq!(seen.header("x-forwarded-for"), Some("203.0.113.9"));
    assert_eq!(seen.header("x-forwarded-proto"), Some("https"));
    assert!(
        call(gw.addr(), &ClientSetup::new(&ca)).await.is_err(),
        "a handshake without the header is refused"
    );
}

/// The `mutualTLS` scheme holds for gRPC calls too (h2 by ALPN): no
/// certificate is UNAUTHENTICATED, a verified one names the caller.
#[tokio::test]
async fn the_mutual_tls_scheme_names_a_grpc_caller_too() {
    use prost::Message as _;
    let ca = Ca::new("Test CA");
    let files = Files::new("mtls-grpc", &ca.server("gateway", 1));
    let client_ca = files.dir.write("ca.pem", &ca.cert.pem());
    let agent = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "{}\n[auth]\n[auth.schemes.mtls]\ntype = \"mutualTLS\"\n\n[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\nidentity_header = \"X-Caller\"\n",
        files.section(Some(&client_ca), Some("optional"), "1h"),
        agent.url()
    );
    let gw = TestGateway::from_toml(&text).await;
    let request = crate::support::calls::grpc_send("who am I");
    let message = request.encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(&message);
    let framed = Bytes::from(framed);
    let grpc = [("content-type", "application/grpc"), ("te", "trailers")];
    let path = "/lf.a2a.v1.A2AService/SendMessage";
    let status_of = |headers: &http::HeaderMap| {
        (headers.get("grpc-status")).and_then(|v| v.to_str().ok().map(str::to_string))
    };

    let setup = ClientSetup::new(&ca).alpn(&[b"h2"]);
    let mut anonymous = Conn::open(gw.addr(), &setup).await.unwrap();
    let answer = anonymous
        .post_to(path, &grpc, framed.clone())
        .await
        .unwrap();
    assert_eq!(
        status_of(&answer.headers).as_deref(),
        Some("16"),
        "{:?}",
        answer.headers
    );
    assert_eq!(agent.requests().len(), 0);

    let alice = ca.client("alice");
    let setup = ClientSetup::new(&ca).alpn(&[b"h2"]).identity(&alice);
    let mut conn = Conn::open(gw.addr(), &setup).await.unwrap();
    let answer = conn.post_to(path, &grpc, framed).await.unwrap();
    assert_eq!(
        status_of(&answer.headers).as_deref(),
        Some("0"),
        "{:?}",
        answer.headers
    );
    let seen = agent
        .requests()
        .pop()
        .expect("alice's call reached the agent");
    assert_eq!(seen.header("x-caller"), Some("alice@example.com"));
}
