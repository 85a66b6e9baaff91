//! A real `redis-server` (Debian's package) on a free loopback port, for
//! the shared rate-limit store's tests; and a TCP proxy in front of it that
//! can be made slow.
//!
//! Where redis-server is not installed, `RedisServer::start` returns
//! `None` and the test says so and ends; with `A2A_GW_REQUIRE_REDIS` set
//! (`.ci/run` sets it, after installing the package) it fails instead.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BINARY: &str = "redis-server";

pub struct RedisServer {
    port: u16,
    password: Option<String>,
    /// Cluster mode: its node file's folder.
    cluster_dir: Option<std::path::PathBuf>,
    child: Option<Child>,
}

/// A port that was free a moment ago (redis-server cannot take port 0 and
/// say which it got).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("its address").port()
}

fn installed() -> bool {
    let found = Command::new(BINARY)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("A2A_GW_REQUIRE_REDIS").is_none(),
            "A2A_GW_REQUIRE_REDIS is set but {BINARY} is not installed"
        );
        eprintln!("SKIPPED: {BINARY} is not installed (apt-get install redis-server)");
    }
    found
}

impl RedisServer {
    /// A fresh server without a password, or `None` (see the module).
    pub async fn start() -> Option<RedisServer> {
        Self::start_with(None).await
    }

    /// A fresh server that requires `password`.
    pub async fn start_with(password: Option<&str>) -> Option<RedisServer> {
        if !installed() {
            return None;
        }
        let mut server = RedisServer {
            port: free_port(),
            password: password.map(String::from),
            cluster_dir: None,
            child: None,
        };
        server.restart().await;
        Some(server)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGKILL: as a crash, nothing is saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: no persistence),
    /// and waits until it answers.
    pub async fn restart(&mut self) {
        self.kill();
        let port = self.port.to_string();
        let mut args = vec![
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ];
        if let Some(p) = &self.password {
            args.extend(["--requirepass", p.as_str()]);
        }
        if self.cluster_dir.is_some() {
            args.extend([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]);
        }
        let mut command = Command::new(BINARY);
        if let Some(dir) = &self.cluster_dir {
            command.current_dir(dir);
        }
        let child = command
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        self.wait_ready().await;
    }

    async fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(mut s) = TcpStream::connect(self.addr()).await {
                let _ = s.write_all(b"PING\r\n").await;
                let mut buf = [0u8; 64];
                let read = tokio::time::timeout(Duration::from_millis(500), s.read(&mut buf)).await;
                // +PONG, or -NOAUTH when a password is required: it answers.
                if matches!(read, Ok(Ok(n)) if n > 0) {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "redis-server on port {} did not answer within 10 s",
            self.port
        );
    }

    /// One command (inline protocol), its raw reply.
    pub async fn command(&self, line: &str) -> String {
        let mut s = TcpStream::connect(self.addr())
            .await
            .expect("connect to redis");
        let mut text = String::new();
        if let Some(p) = &self.password {
            text.push_str(&format!("AUTH {p}\r\n"));
        }
        text.push_str(line);
        text.push_str("\r\nQUIT\r\n");
        s.write_all(text.as_bytes()).await.expect("write to redis");
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = &self.cluster_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A Redis Cluster of three masters on loopback, the slots split in
/// thirds (made with CLUSTER ADDSLOTSRANGE and MEET: `redis-cli --cluster
/// create` waits seconds longer for the same).
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub async fn start() -> Option<RedisCluster> {
        if !installed() {
            return None;
        }
        let mut nodes = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let dir =
                std::env::temp_dir().join(format!("a2a-gw-cluster-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a folder for the node");
            let mut node = RedisServer {
                port,
                password: None,
                cluster_dir: Some(dir),
                child: None,
            };
            node.restart().await;
            let (from, to) = (i * 5461, if i == 2 { 16383 } else { i * 5461 + 5460 });
            let said = node
                .command(&format!("CLUSTER ADDSLOTSRANGE {from} {to}"))
                .await;
            assert!(said.starts_with("+OK"), "ADDSLOTSRANGE: {said}");
            nodes.push(node);
        }
        for other in &nodes[1..] {
            let said = nodes[0]
                .command(&format!("CLUSTER MEET 127.0.0.1 {}", other.port))
                .await;
            assert!(said.starts_with("+OK"), "MEET: {said}");
        }
        let cluster = RedisCluster { nodes };
        cluster.wait_ok().await;
        Some(cluster)
    }

    async fn wait_ok(&self) {
        let started = Instant::now();
        loop {
            let mut ok = 0;
            for node in &self.nodes {
                ok += usize::from(
                    node.command("CLUSTER INFO")
                        .await
                        .contains("cluster_state:ok"),
                );
            }
            if ok == self.nodes.len() {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the cluster did not form in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The node that holds `key`'s slot.
    pub async fn node_of(&self, key: &str) -> &RedisServer {
        for node in &self.nodes {
            if node
                .command(&format!("EXISTS {key}"))
                .await
                .starts_with(":1")
            {
                return node;
            }
        }
        panic!("no node holds {key}");
    }
}

/// A TCP proxy to `target` that holds every chunk for `delay` (settable),
/// standing in for a slow store.
pub struct SlowProxy {
    addr: SocketAddr,
    delay_ms: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl SlowProxy {
    pub async fn start(target: SocketAddr) -> SlowProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let delay_ms = Arc::new(AtomicU64::new(0));
        let delay = delay_ms.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let delay = delay.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(target).await {
                        relay(client, server, delay).await;
                    }
                });
            }
        });
        SlowProxy {
            addr,
            delay_ms,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }
}

impl Drop for SlowProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies both ways; the store's replies wait `delay` each.
async fn relay(client: TcpStream, server: TcpStream, delay: Arc<AtomicU64>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match sr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let wait = delay.load(Ordering::Relaxed);
        if wait > 0 {
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
        if cw.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    up.abort();
}
