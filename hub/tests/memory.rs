//! Memory bounded in bytes: the `hubload-hub` binary, three stuck subscribers and 1 MB
//! publishes. Its resident memory stays under its budget plus a stated slack, and `/stats`
//! accounts for every delivery exactly.

use std::process::{Child, Command, Stdio};

use hubload_hub::StatsSnapshot;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::eventually_async;

const MB: usize = 1_000_000;
const SUBSCRIBERS: u64 = 3;
const PUBLISHES: u64 = 60;
/// What the hub may use beyond its content budget: the binary, its runtime, the request
/// body being read (twice while it is gathered), and allocator slack. With budgets both
/// runs peaked at 21–24 MiB (debug build); with the budgets lifted (4G/8G) the first run
/// peaked at 95 MiB, 1 MB more per publish held.
const SLACK: u64 = 32 << 20;

/// A callback that verifies (echoes `hub.challenge` to a GET) and then never answers a
/// delivery: it keeps every POST's connection open, reading nothing more.
async fn stuck_subscriber() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = listener.accept().await {
            let mut head = vec![0u8; 4096];
            let n = s.read(&mut head).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&head[..n]).into_owned();
            if let Some(target) = head.strip_prefix("GET ") {
                let challenge = target
                    .split(['?', '&', ' '])
                    .find_map(|kv| kv.strip_prefix("hub.challenge="))
                    .unwrap_or_default()
                    .to_owned();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{challenge}",
                    challenge.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            } else {
                held.push(s);
            }
        }
    });
    format!("http://{addr}/cb")
}

/// The hub binary on a free loopback port, with these extra flags.
struct HubProcess {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl HubProcess {
    async fn start(flags: &[&str]) -> HubProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new(env!("CARGO_BIN_EXE_hubload-hub"))
            .args(["--listen", &listen])
            .args(flags)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let hub = HubProcess {
            child,
            base: format!("http://{listen}"),
            client: reqwest::Client::new(),
        };
        eventually_async("the hub to listen", || async {
            hub.client
                .get(format!("{}/stats", hub.base))
                .send()
                .await
                .is_ok()
        })
        .await;
        hub
    }

    async fn post(&self, query: &str, content_type: &str, body: Vec<u8>) -> u16 {
        let r = self
            .client
            .post(format!("{}/hub?{query}", self.base))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        r.status().as_u16()
    }

    async fn stats(&self) -> StatsSnapshot {
        let r = self.client.get(format!("{}/stats", self.base)).send();
        serde_json::from_slice(&r.await.unwrap().bytes().await.unwrap()).unwrap()
    }

    /// Peak resident memory (VmHWM) of the hub process, in bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status");
        kb * 1024
    }

    /// Register "t", subscribe three stuck callbacks, publish `PUBLISHES` 1 MB bodies;
    /// how many got 200 and 503.
    async fn run_stuck(&self) -> (u64, u64) {
        assert_eq!(
            self.post("hub.mode=register&hub.topic=t", "application/json", vec![])
                .await,
            200
        );
        for _ in 0..SUBSCRIBERS {
            let cb = stuck_subscriber().await;
            let form = format!("hub.mode=subscribe&hub.topic=t&hub.callback={cb}");
            let form_type = "application/x-www-form-urlencoded";
            assert_eq!(self.post("", form_type, form.into_bytes()).await, 202);
        }
        eventually_async("three verified subscribers", || async {
            self.stats().await.topics["t"].subscribers == SUBSCRIBERS
        })
        .await;
        let (mut ok, mut full) = (0, 0);
        for i in 0..PUBLISHES {
            let body = vec![b'a' + (i % 26) as u8; MB];
            match self
                .post("hub.mode=publish&hub.topic=t", "application/json", body)
                .await
            {
                200 => ok += 1,
                503 => full += 1,
                other => panic!("publish {i}: {other}"),
            }
        }
        (ok, full)
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn stuck_subscribers_fill_their_byte_budgets_then_deliveries_are_dropped() {
    // 4 MiB per subscriber holds 4 bodies of 1 MB (queued or in flight); the hub holds
    // each body once, so 4 MB of its 8 MiB
    let hub = HubProcess::start(&["--max-queue-bytes", "4M", "--max-memory", "8M"]).await;
    let (ok, full) = hub.run_stuck().await;
    let peak = hub.peak_rss();
    println!(
        "peak RSS {} MiB (budget 8 MiB + slack {} MiB)",
        peak >> 20,
        SLACK >> 20
    );
    assert_eq!((ok, full), (PUBLISHES, 0));
    let s = hub.stats().await;
    let d = &s.distribution;
    let held = 4;
    assert_eq!(d.published, PUBLISHES);
    assert_eq!(d.delivered + d.failed, 0);
    assert_eq!(d.pending, SUBSCRIBERS * held);
    assert_eq!(d.dropped, SUBSCRIBERS * (PUBLISHES - held));
    assert_eq!(d.dropped_queue_bytes, d.dropped);
    assert_eq!(
        d.published * SUBSCRIBERS,
        d.delivered + d.failed + d.dropped + d.pending
    );
    assert_eq!(d.queued_bytes, SUBSCRIBERS * held * MB as u64);
    assert_eq!(d.memory_bytes, held * MB as u64);
    assert!(peak < (8 << 20) + SLACK, "peak RSS {peak} bytes");
}

#[tokio::test]
async fn a_hub_at_its_memory_budget_answers_503() {
    // 6 MiB of memory holds 6 bodies of 1 MB; each subscriber could hold 8
    let hub = HubProcess::start(&["--max-queue-bytes", "8M", "--max-memory", "6M"]).await;
    let (ok, full) = hub.run_stuck().await;
    let peak = hub.peak_rss();
    println!(
        "peak RSS {} MiB (budget 6 MiB + slack {} MiB)",
        peak >> 20,
        SLACK >> 20
    );
    assert_eq!((ok, full), (6, PUBLISHES - 6));
    let s = hub.stats().await;
    assert_eq!(
        (s.publish.accepted, s.publish.over_memory),
        (6, PUBLISHES - 6)
    );
    let d = &s.distribution;
    assert_eq!((d.published, d.pending, d.dropped), (6, SUBSCRIBERS * 6, 0));
    assert_eq!(d.memory_bytes, 6 * MB as u64);
    assert_eq!(d.memory_limit, 6 << 20);
    let metrics = hub
        .client
        .get(format!("{}/metrics", hub.base))
        .send()
        .await
        .unwrap();
    let text = metrics.text().await.unwrap();
    assert!(
        text.contains(&format!("hub_memory_bytes {}\n", 6 * MB)),
        "{text}"
    );
    assert!(
        text.contains(&format!("hub_queued_bytes {}\n", 18 * MB)),
        "{text}"
    );
    assert!(peak < (6 << 20) + SLACK, "peak RSS {peak} bytes");
}
