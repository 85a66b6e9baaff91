//! `server.release_memory_interval`: after a burst of connections has
//! drained, heap that was freed but kept by malloc goes back to the system,
//! and `/metrics` says how much.
//!
//! The burst is 100 real connections, each answered once, then closed. The
//! freed heap it leaves is made bigger in this process (the gateway's own):
//! 64 MiB in 1 KiB blocks, every 64th kept so `free` alone cannot return the
//! rest. It runs alone in a child process (`support::alone`), so no other
//! test's gateway releases it first.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::time::{Duration, Instant};

use crate::support::client;
use crate::support::gateway::TestGateway;
use crate::support::mock_agent::{MockAgent, Mode};
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MIB: f64 = 1024.0 * 1024.0;

/// The counter's value, read over HTTP from the admin listener.
async fn released_bytes(gateway: &TestGateway) -> f64 {
    let reply = client::get(&format!("{}/metrics", gateway.admin_url()), &[]).await;
    assert_eq!(reply.status, StatusCode::OK);
    let text = reply.text();
    text.lines()
        .find_map(|l| l.strip_prefix("a2a_gateway_memory_released_bytes_total "))
        .unwrap_or_else(|| panic!("no memory_released_bytes_total in:\n{text}"))
        .trim()
        .parse()
        .expect("a number")
}

/// Frees 64 MiB that malloc keeps; returns what stays allocated.
fn leave_freed_heap() -> Vec<Vec<u8>> {
    let mut blocks: Vec<Vec<u8>> = (0..65_536).map(|i| vec![i as u8; 1024]).collect();
    blocks.iter_mut().step_by(64).map(std::mem::take).collect()
}

/// `n` keep-alive connections, each with one answered request.
async fn connections(gateway: &TestGateway, n: usize) -> Vec<TcpStream> {
    let mut open = Vec::with_capacity(n);
    for _ in 0..n {
        let mut stream = TcpStream::connect(gateway.addr()).await.expect("connect");
        stream
            .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: gw\r\n\r\n")
            .await
            .expect("write");
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.expect("an answer");
        assert_eq!(&head, b"HTTP/1.1 200");
        open.push(stream);
    }
    open
}

async fn gateway(interval: &str) -> (MockAgent, TestGateway) {
    let agent = MockAgent::start(Mode::Normal).await;
    let extra = format!("[server]\nrelease_memory_interval = \"{interval}\"\n");
    let gateway = TestGateway::one("echo", &agent.url(), "", &extra).await;
    (agent, gateway)
}

/// One test, in two parts that must not overlap: the counters of open
/// connections and malloc's heap are the process's, not a gateway's.
#[tokio::test]
async fn freed_heap_goes_back_to_the_system_after_a_burst_unless_turned_off() {
    if !crate::support::alone::here() {
        return;
    }
    // "0s": a drained burst and freed heap, and nothing is released.
    let (_agent, off) = gateway("0s").await;
    drop(connections(&off, 100).await);
    let kept = leave_freed_heap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(released_bytes(&off).await, 0.0, "turned off");
    off.running.shutdown().await;
    drop(kept);
    a2a_gateway::memory_release::release();

    let (_agent, on) = gateway("50ms").await;
    assert_eq!(released_bytes(&on).await, 0.0, "nothing before a burst");
    let burst = connections(&on, 100).await;
    let kept = leave_freed_heap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        released_bytes(&on).await,
        0.0,
        "nothing while the burst is open"
    );
    drop(burst);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let released = released_bytes(&on).await;
        if released >= 16.0 * MIB {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {:.1} MiB released of the 63 MiB freed",
            released / MIB
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kept.len(), 1024);
}
