//! Test plumbing for the subscriber tests (`mod.rs`): a one-shot HTTP client, hubs to subscribe to, signing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use hubload_hub::{HubConfig, HubState, RetryPolicy, StatsSnapshot};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// One HTTP/1.1 request over a fresh connection: (status, raw head, body). Test-only.
pub async fn request(addr: &str, head: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{head}\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(buf[..split].to_vec()).unwrap();
    let status = head[9..12].parse().unwrap();
    (status, head, buf[split + 4..].to_vec())
}

pub struct Hub {
    pub addr: String,
    _stop: oneshot::Sender<()>,
}

impl Hub {
    pub async fn start() -> Hub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let state = HubState::new(HubConfig {
            retry: RetryPolicy {
                max_attempts: 5,
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(50),
            },
            ..HubConfig::default()
        });
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            hubload_hub::serve(listener, state, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Hub { addr, _stop: stop }
    }

    pub fn url(&self) -> url::Url {
        format!("http://{}/hub", self.addr).parse().unwrap()
    }

    pub async fn stats(&self) -> StatsSnapshot {
        let (_, _, body) = request(&self.addr, "GET /stats HTTP/1.1", b"").await;
        serde_json::from_slice(&body).unwrap()
    }

    /// Poll `/stats` until `done` holds (deadline 20 s).
    pub async fn stats_when(&self, done: impl Fn(&StatsSnapshot) -> bool) -> StatsSnapshot {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.stats().await;
            if done(&s) || Instant::now() > deadline {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn register(&self, topic: &str) {
        let form = format!("hub.mode=register&hub.topic={topic}");
        let head = "POST /hub HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded";
        let (status, _, body) = request(&self.addr, head, form.as_bytes()).await;
        assert_eq!((status, body.as_slice()), (200, &b"hub.mode=accepted"[..]));
    }

    /// A Ballerina-dialect publish; true when accepted.
    pub async fn publish(&self, topic: &str, body: &[u8]) -> bool {
        let head = format!(
            "POST /hub?hub.mode=publish&hub.topic={topic} HTTP/1.1\r\nContent-Type: application/json"
        );
        let (status, _, reply) = request(&self.addr, &head, body).await;
        status == 200 && reply == b"hub.mode=accepted"
    }
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

pub fn sign(body: &[u8], secret: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A stand-in hub that accepts every subscription (202) and then either verifies it (a GET
/// whose challenge must come back exactly) or denies it with a `hub.mode=denied` GET, as
/// WebSub §5.2 allows.
pub async fn stand_in_hub(deny: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read until the form body (after the blank line) has arrived in full.
                let form = loop {
                    let n = conn.read(&mut chunk).await.unwrap();
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length: ")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap();
                        if body.len() >= len || n == 0 {
                            break body.to_owned();
                        }
                    }
                };
                let field = |k: &str| {
                    url::form_urlencoded::parse(form.as_bytes())
                        .find(|(n, _)| n == k)
                        .map(|(_, v)| v.into_owned())
                        .unwrap()
                };
                let (callback, topic) = (field("hub.callback"), field("hub.topic"));
                conn.write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
                drop(conn);
                let cb = url::Url::parse(&callback).unwrap();
                let q = {
                    let mut q = url::form_urlencoded::Serializer::new(String::new());
                    if deny {
                        q.append_pair("hub.mode", "denied")
                            .append_pair("hub.topic", &topic)
                            .append_pair("hub.reason", "not today");
                    } else {
                        q.append_pair("hub.mode", "subscribe")
                            .append_pair("hub.topic", &topic)
                            .append_pair("hub.challenge", "c-123 xyz")
                            .append_pair("hub.lease_seconds", "60");
                    }
                    q.finish()
                };
                let at = format!("{}:{}", cb.host_str().unwrap(), cb.port().unwrap());
                let get = format!("GET {}?{q} HTTP/1.1", cb.path());
                let (status, _, body) = request(&at, &get, b"").await;
                assert_eq!(status, 200);
                if !deny {
                    assert_eq!(body, b"c-123 xyz", "the challenge, exactly");
                }
            });
        }
    });
    addr
}
