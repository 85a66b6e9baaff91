//! The gateway binary configured for traces only through the standard
//! `OTEL_*` variables, as an operator's deployment sets them: spans reach
//! the collector over gRPC and over HTTP/protobuf, carry `service.name`
//! from `OTEL_SERVICE_NAME`, are flushed by SIGTERM's drain, and the log
//! lines of a traced call (the access line, and a warning on its way)
//! carry its `trace_id` and `span_id`, in JSON and in text.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::calls::send;
use crate::support::client;
use crate::support::closed_port::ClosedPort;
use crate::support::mock_agent::{MockAgent, Mode};
use crate::support::otlp::{Receiver, SpanKind};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");
const WAIT: Duration = Duration::from_secs(20);
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

struct Binary {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    _config: tempfile_path::Removed,
}

mod tempfile_path {
    /// A file removed when dropped.
    pub struct Removed(pub std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    /// Starts `run --config` with `env`, and waits for its listening line;
    /// the proxy's address.
    async fn start(
        tag: &str,
        format: &str,
        upstreams: &[(&str, String)],
        env: &[(&str, String)],
    ) -> (Binary, String) {
        let mut text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"2s\"\n\
             [log]\nformat = \"{format}\"\nlevel = \"info\"\n[card_refresh]\ntimeout = \"2s\"\n"
        );
        for (name, url) in upstreams {
            text.push_str(&format!(
                "[[upstreams]]\nname = \"{name}\"\nurl = \"{url}\"\n"
            ));
        }
        let path =
            std::env::temp_dir().join(format!("a2a-gw-traces-{tag}-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let mut command = Command::new(BIN);
        command
            .args(["run", "--config"])
            .arg(&path)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the binary starts");
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        let binary = Binary {
            child,
            lines,
            _config: tempfile_path::Removed(path),
        };
        let line = binary
            .wait_line(|l| l.contains("a2a-gateway listening"))
            .await;
        let addr = field(&line, "addr");
        (binary, addr)
    }

    async fn wait_line(&self, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(line) = self.lines.lock().unwrap().iter().find(|l| pred(l)) {
                return line.clone();
            }
            let all = self.lines.lock().unwrap().join("\n");
            assert!(Instant::now() < deadline, "no expected line:\n{all}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, then the exit within WAIT; every stderr line.
    async fn stop(mut self) -> Vec<String> {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit 0 on SIGTERM: {status}");
                break;
            }
            assert!(Instant::now() < deadline, "did not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let lines = self.lines.lock().unwrap().clone();
        lines
    }
}

/// A field of a JSON or text log line.
fn field(line: &str, name: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(line) {
        let value = v["fields"]
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {line}"));
        return value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
    }
    let at = line
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name} in {line}"));
    let rest = &line[at + name.len() + 1..];
    rest.split(' ')
        .next()
        .unwrap()
        .trim_matches('"')
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn otel_variables_alone_turn_on_grpc_export_and_json_logs_name_the_trace() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let gone = ClosedPort::new();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_string()),
        ("OTEL_SERVICE_NAME", "held-out-gateway".to_string()),
    ];
    let upstreams = [("echo", agent.url()), ("gone", gone.url())];
    let (gw, addr) = Binary::start("grpc", "json", &upstreams, &env).await;
    let tp = format!("00-{TRACE}-b7ad6b7169203331-01");
    let reply = client::post_json(
        &format!("http://{addr}/agents/echo"),
        send("e1"),
        &[("traceparent", tp.as_str())],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let failed = client::post_json(&format!("http://{addr}/agents/gone"), send("e2"), &[]).await;
    assert_eq!(failed.status, 502);
    let lines = gw.stop().await;

    // Flushed by the drain: no schedule delay was waited for.
    let spans = receiver
        .until(Duration::from_secs(2), |s| s.len() >= 4)
        .await;
    let servers: Vec<_> = spans
        .iter()
        .filter(|s| s.kind() == SpanKind::Server)
        .collect();
    assert_eq!(servers.len(), 2, "{spans:#?}");
    assert!(spans
        .iter()
        .all(|s| s.service.as_deref() == Some("held-out-gateway")));
    let continued = servers
        .iter()
        .find(|s| s.trace_id() == TRACE)
        .expect("the client's trace continued");
    assert_eq!(continued.parent_id(), "b7ad6b7169203331");
    let client_span = spans
        .iter()
        .find(|s| s.kind() == SpanKind::Client && s.parent_id() == continued.span_id())
        .expect("a client span under the server span");
    let forwarded = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let tp = forwarded.header("traceparent").unwrap();
    assert!(tp.contains(&client_span.span_id()), "{tp}");

    let access: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "a2a_gateway::telemetry::access")
        .collect();
    assert_eq!(access.len(), 2, "{}", lines.join("\n"));
    let traced = access
        .iter()
        .find(|v| v["fields"]["trace_id"] == TRACE)
        .expect("the access line names the trace");
    assert_eq!(traced["fields"]["span_id"], continued.span_id());
    let failed_server = servers.iter().find(|s| s.trace_id() != TRACE).unwrap();
    // The card fetch at start-up warned too, outside any call: no ids.
    let warnings: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == "WARN" && v["fields"]["upstream"] == "gone")
        .collect();
    let in_call = warnings
        .iter()
        .find(|v| v["fields"]["trace_id"] == failed_server.trace_id().as_str())
        .unwrap_or_else(|| panic!("the call's warning names its trace: {warnings:#?}"));
    assert_eq!(
        in_call["fields"]["span_id"],
        failed_server.span_id().as_str()
    );
    assert!(
        warnings
            .iter()
            .any(|v| v["fields"].get("trace_id").is_none()),
        "{warnings:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn http_protobuf_export_and_text_logs_name_the_trace() {
    let receiver = Receiver::http().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let env = [
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/v1/traces", receiver.endpoint()),
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_string()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "service.name=from-attributes,deployment.environment=test".to_string(),
        ),
        ("OTEL_TRACES_SAMPLER", "parentbased_always_on".to_string()),
    ];
    let (gw, addr) = Binary::start("http", "text", &[("echo", agent.url())], &env).await;
    let reply = client::post_json(&format!("http://{addr}/"), send("h1"), &[]).await;
    assert_eq!(reply.status, 200);
    let lines = gw.stop().await;
    let spans = receiver
        .until(Duration::from_secs(2), |s| s.len() >= 2)
        .await;
    let server = spans
        .iter()
        .find(|s| s.kind() == SpanKind::Server)
        .expect("a server span");
    assert_eq!(server.service.as_deref(), Some("from-attributes"));
    let access = lines
        .iter()
        .find(|l| l.contains(" a2a_gateway::telemetry::access: access "))
        .expect("an access line");
    assert_eq!(field(access, "trace_id"), server.trace_id());
    assert_eq!(field(access, "span_id"), server.span_id());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sampler_that_drops_everything_exports_nothing_but_still_propagates() {
    let receiver = Receiver::grpc().await;
    let agent = MockAgent::start(Mode::Normal).await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_string()),
        ("OTEL_TRACES_SAMPLER", "always_off".to_string()),
    ];
    let (gw, addr) = Binary::start("off", "json", &[("echo", agent.url())], &env).await;
    let tp = format!("00-{TRACE}-b7ad6b7169203331-01");
    let reply = client::post_json(
        &format!("http://{addr}/"),
        send("o1"),
        &[("traceparent", tp.as_str())],
    )
    .await;
    assert_eq!(reply.status, 200);
    gw.stop().await;
    let spans = receiver
        .until(Duration::from_millis(500), |s| !s.is_empty())
        .await;
    assert!(spans.is_empty(), "{spans:#?}");
    let forwarded = agent
        .requests()
        .into_iter()
        .rfind(|r| !r.is_card_fetch())
        .unwrap();
    let tp = forwarded.header("traceparent").unwrap();
    assert!(
        tp.starts_with(&format!("00-{TRACE}-")) && tp.ends_with("-00"),
        "unsampled, same trace: {tp}"
    );
}
