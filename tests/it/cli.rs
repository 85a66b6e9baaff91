//! The `a2a-gateway` binary as an operator runs it: `check`, `run` from
//! flags and from a file, `demo`, and a clean exit on SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::client;
use crate::support::mock_agent::{MockAgent, Mode};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-gateway");

fn config_path() -> String {
    format!("{}/config/gateway.toml", env!("CARGO_MANIFEST_DIR"))
}

/// A child process that is killed if the test fails before stopping it.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        Proc::spawn_logging(args, None)
    }

    /// With `RUST_LOG` set to `filter`, or unset.
    fn spawn_logging(args: &[&str], filter: Option<&str>) -> Proc {
        let mut command = Command::new(BIN);
        match filter {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        let child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        Proc(child)
    }

    /// Reads lines from stdout or stderr until one contains `needle`.
    fn wait_line(&mut self, from_stderr: bool, needle: &str) -> String {
        let (tx, rx) = mpsc::channel();
        let reader: Box<dyn Read + Send> = if from_stderr {
            Box::new(self.0.stderr.take().expect("stderr piped"))
        } else {
            Box::new(self.0.stdout.take().expect("stdout piped"))
        };
        let needle = needle.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines().map_while(Result::ok) {
                if line.contains(&needle) {
                    let _ = tx.send(line);
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("expected line within 20 s")
    }

    /// SIGTERM, then the exit status within a bounded time.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.0.try_wait().expect("wait works") {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `addr=127.0.0.1:PORT` out of the "listening" log line.
fn field(line: &str, name: &str) -> String {
    let start = line.find(&format!("{name}=")).expect("field present") + name.len() + 1;
    line[start..].split_whitespace().next().unwrap().to_string()
}

#[test]
fn check_accepts_the_shipped_config() {
    let out = Command::new(BIN)
        .args(["check", "--config", &config_path()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("OK"));
}

#[test]
fn check_says_whether_and_where_traces_go() {
    let shipped = Command::new(BIN)
        .args(["check", "--config", &config_path()])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&shipped.stdout);
    assert!(
        said.contains("traces: off unless OTEL_EXPORTER_OTLP_ENDPOINT"),
        "{said}"
    );
    let path = std::env::temp_dir().join(format!("a2a-gw-traces-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "[telemetry]\notlp_endpoint = \"http://otel:4317\"\notlp_protocol = \"grpc\"\n[[upstreams]]\nname = \"a\"\nurl = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("traces: exported over OTLP (grpc) to http://otel:4317"),
        "{said}"
    );
}

#[test]
fn check_prints_every_problem_with_its_path_and_fails() {
    let path = std::env::temp_dir().join(format!("a2a-gw-bad-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "[server]\nlisten = \"nowhere\"\n[limits]\nsse_idle_timeout = \"forever\"\n[[upstreams]]\nname = \"x y\"\nurl = \"ftp://h\"\ntypo = 1\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for path in [
        "server.listen",
        "limits.sse_idle_timeout",
        "upstreams[0].name",
        "upstreams[0].url",
        "upstreams[0].typo",
    ] {
        assert!(
            err.contains(&format!("error: {path}: ")),
            "{path} missing in:\n{err}"
        );
    }
}

#[test]
fn check_reports_a_missing_file() {
    let out = Command::new(BIN)
        .args(["check", "--config", "/nonexistent/gw.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/gw.toml"));
}

#[test]
fn run_without_any_upstream_explains_what_is_missing() {
    let out = Command::new(BIN)
        .args(["run", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--upstream NAME=URL"));
}

#[test]
fn run_rejects_a_malformed_upstream_flag() {
    let out = Command::new(BIN)
        .args(["run", "--upstream", "no-equals-sign"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected NAME=URL"));
}

async fn proves_proxying(gateway: &str, mock: &MockAgent) {
    let body = r#"{"jsonrpc":"2.0","id":"cli","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}"#;
    let reply = client::post_json(&format!("http://{gateway}/"), body, &[]).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["id"], "cli");
    let sent = mock.requests().pop().expect("reached upstream");
    assert_eq!(sent.body, body.as_bytes());
    // The id the gateway made reaches the agent and comes back, and a
    // client's own is kept (through the traced stack at debug too).
    let made = reply.header("x-request-id").expect("an id on the answer");
    assert_eq!(made.len(), 36, "{made}");
    assert_eq!(
        sent.headers.get("x-request-id").map(|v| v.as_bytes()),
        Some(made.as_bytes())
    );
    let own = client::post_json(
        &format!("http://{gateway}/"),
        body,
        &[("x-request-id", "cli-own")],
    )
    .await;
    assert_eq!(own.header("x-request-id"), Some("cli-own"));
}

#[tokio::test(flavor = "multi_thread")]
async fn run_from_flags_alone_serves_and_exits_cleanly_on_sigterm() {
    let mock = MockAgent::start(Mode::Normal).await;
    let upstream = format!("echo={}", mock.url());
    // At debug, requests go through the stack with a span each (`stack`);
    // the other tests here run the shipped level, info, without.
    let mut proc = Proc::spawn_logging(
        &[
            "run",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
        ],
        Some("a2a_gateway=debug"),
    );
    let line = proc.wait_line(true, "a2a-gateway listening");
    let (addr, admin) = (field(&line, "addr"), field(&line, "admin_addr"));
    proves_proxying(&addr, &mock).await;
    let ready = client::get(&format!("http://{admin}/readyz"), &[]).await;
    assert_eq!(ready.status, 200);
    assert!(proc.terminate().success(), "exit 0 on SIGTERM");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_from_the_shipped_file_with_flags_overriding_it() {
    let mock = MockAgent::start(Mode::Normal).await;
    let upstream = format!("echo={}", mock.url());
    let config = config_path();
    let mut proc = Proc::spawn(&[
        "run",
        "--config",
        &config,
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
    ]);
    let line = proc.wait_line(true, "a2a-gateway listening");
    assert!(
        line.contains("upstreams=1"),
        "the flag replaced the file's echo upstream: {line}"
    );
    proves_proxying(&field(&line, "addr"), &mock).await;
    assert!(proc.terminate().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_runs_two_agents_behind_the_gateway() {
    let mut proc = Proc::spawn(&[
        "demo",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ]);
    let line = proc.wait_line(false, "gateway  http://");
    let url = line.split_whitespace().nth(1).unwrap().to_string();
    let send = |id: u32, text: &str, task: Option<&str>| {
        let task = task
            .map(|t| format!(r#","taskId":"{t}""#))
            .unwrap_or_default();
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"message/send","params":{{"message":{{"kind":"message","messageId":"m{id}","role":"user"{task},"parts":[{{"kind":"text","text":"{text}"}}]}}}}}}"#
        )
    };
    // The published card lists both agents' skills, URLs at the gateway.
    let card = client::get(&format!("{url}.well-known/agent-card.json"), &[])
        .await
        .json();
    assert_eq!(card["url"], url.as_str());
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["book-flight", "forecast"]);
    // Routing by hint: the travel agent asks for a date.
    let first = client::post_json(
        &url,
        send(1, "a flight to Lisbon", None),
        &[("a2a-skill", "book-flight")],
    )
    .await
    .json();
    assert_eq!(
        first["result"]["status"]["state"], "input-required",
        "{first}"
    );
    let task = first["result"]["id"].as_str().unwrap().to_string();
    // The second turn needs no hint: the gateway knows who owns the task.
    let second = client::post_json(&url, send(2, "next Friday", Some(&task)), &[])
        .await
        .json();
    assert_eq!(second["result"]["status"]["state"], "completed", "{second}");
    // Routing by text match reaches the weather agent.
    let weather = client::post_json(
        &url,
        send(3, "will it rain in Paris tomorrow? weather forecast", None),
        &[],
    )
    .await
    .json();
    assert!(
        weather["result"]["id"]
            .as_str()
            .unwrap()
            .starts_with("weather-"),
        "{weather}"
    );
    // Streaming, event by event, in 1.0 shapes.
    let stream_body = r#"{"jsonrpc":"2.0","id":4,"method":"SendStreamingMessage","params":{"message":{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"Berlin"}]}}}"#;
    let mut stream = client::post_stream(
        &url,
        stream_body,
        &[("a2a-version", "1.0"), ("a2a-skill", "forecast")],
    )
    .await;
    let events = stream.collect_events(Duration::from_secs(10)).await;
    assert!(events.len() >= 4, "{events:?}");
    assert!(events.last().unwrap().contains("TASK_STATE_COMPLETED"));
    assert!(proc.terminate().success());
}

/// Two `run` processes, as two replicas of a fleet, share one per-caller
/// limit through a real redis-server: across both, the limit, not twice it.
#[tokio::test(flavor = "multi_thread")]
async fn two_gateway_processes_share_one_limit_through_redis() {
    let Some(redis) = crate::support::redis::RedisServer::start().await else {
        return;
    };
    let mock = MockAgent::start(Mode::Normal).await;
    let text = format!(
        "[rate_limits]\nper_caller = {{ per_minute = 8 }}\n[rate_limits.store]\nurl = \"{}\"\ntimeout = \"250ms\"\n[[upstreams]]\nname = \"echo\"\nurl = \"{}\"\n",
        redis.url(),
        mock.url()
    );
    let path = std::env::temp_dir().join(format!("a2a-gw-replicas-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let args = |p: &str| {
        let listen = ["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"];
        let mut all = vec!["run".to_string(), "--config".into(), p.to_string()];
        all.extend(listen.iter().map(|s| s.to_string()));
        all
    };
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let owned = args(path.to_str().unwrap());
        let mut proc = Proc::spawn(&owned.iter().map(String::as_str).collect::<Vec<_>>());
        let line = proc.wait_line(true, "a2a-gateway listening");
        replicas.push((proc, field(&line, "addr")));
    }
    let _ = std::fs::remove_file(&path);
    let started = Instant::now();
    let mut admitted = [0usize; 2];
    for i in 0..24 {
        let url = format!("http://{}/", replicas[i % 2].1);
        let body = crate::support::calls::send(&format!("r{i}"));
        let reply = client::post_json(&url, body, &[]).await;
        match reply.status.as_u16() {
            200 => admitted[i % 2] += 1,
            429 => assert_eq!(
                reply.header("ratelimit-policy"),
                Some("\"caller\";q=8;w=60")
            ),
            other => panic!("{other}: {}", reply.text()),
        }
    }
    // One unit comes back every 7.5 s.
    let refilled = (started.elapsed().as_millis() / 7500) as usize;
    let total = admitted[0] + admitted[1];
    assert!((8..=8 + refilled).contains(&total), "{admitted:?}");
    assert!(
        admitted[0] >= 4 && admitted[1] >= 4,
        "both replicas admitted: {admitted:?}"
    );
    for (proc, _) in &mut replicas {
        assert!(proc.terminate().success());
    }
}

/// A card refused by `card_signature = "required"` is logged once, naming
/// the agent and the reason.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_agent_card_is_logged_with_the_agent_and_the_reason() {
    let mock = MockAgent::start(Mode::Normal).await;
    let dir = std::env::temp_dir().join(format!("a2a-gw-cli-sig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("gateway.toml");
    let text = format!(
        "[[upstreams]]\nname = \"unsigned-agent\"\nurl = \"{}\"\ncard_signature = \"required\"\n[upstreams.card_trust]\nkeys = [{{ kty = \"OKP\", crv = \"Ed25519\", kid = \"k\", x = \"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\" }}]\n",
        mock.url()
    );
    std::fs::write(&config, text).unwrap();
    let config = config.to_str().unwrap().to_string();
    let mut proc = Proc::spawn(&[
        "run",
        "--config",
        &config,
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ]);
    let line = proc.wait_line(true, "agent card refused");
    assert!(line.contains("unsigned-agent"), "{line}");
    assert!(line.contains("the card has no signatures"), "{line}");
    assert!(line.contains("WARN"), "{line}");
    assert!(proc.terminate().success());
    let _ = std::fs::remove_dir_all(&dir);
}
