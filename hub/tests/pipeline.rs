//! Pipelined deliveries (`delivery_pipeline`): against a fault-injecting raw callback
//! (answers 500, closes a connection without answering, closes after each connection's 3rd
//! answer with requests still pipelined behind it) whose own counts the hub's must equal
//! exactly, and against Python's `http.server` (a server we did not write), keeping the
//! connection open (HTTP/1.1) and closing it after each answer (HTTP/1.0).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hubload_hub::{HubConfig, RetryPolicy};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::util::{challenge_answer, raw, request, subscribe, TestHub};

/// What the fault-injecting callback did, counted by itself.
#[derive(Default)]
struct Log {
    /// 2xx answers per body.
    ok: Mutex<BTreeMap<u64, u32>>,
    /// Requests answered 500.
    failed: AtomicU64,
    /// Requests received on a connection the callback then closed without answering them.
    lost: AtomicU64,
    /// Requests received after an answer that closed the connection (not processed).
    ignored: AtomicU64,
    /// Requests whose successor had already arrived when they were answered.
    pipelined: AtomicU64,
    /// Faults already used, each once per body: ("kill" | "500", body).
    used: Mutex<HashSet<(&'static str, u64)>>,
}

/// Bodies whose first arrival kills the connection (no answer to it or anything after it).
const KILL: [u64; 2] = [6, 17];
/// A connection's 3rd answer closes it.
const CLOSE_AT: u64 = 3;

/// Count the requests that arrive until the connection is idle for 300 ms or ends (the
/// hub writes a whole pipeline at once, so they are all there already).
async fn drain(s: &mut TcpStream, buf: &mut Vec<u8>) -> u64 {
    let mut n = 0;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(300), request(s, buf)).await
    {
        n += 1;
    }
    n
}

async fn faulty(mut s: TcpStream, log: Arc<Log>, mut gate: watch::Receiver<bool>) {
    let mut buf = Vec::new();
    let mut answered = 0;
    while let Some((method, path, body)) = request(&mut s, &mut buf).await {
        if method == "GET" {
            s.write_all(challenge_answer(&path).as_bytes())
                .await
                .unwrap();
            continue;
        }
        let n: u64 = std::str::from_utf8(&body).unwrap().parse().unwrap();
        if n == 0 {
            let _ = gate.wait_for(|open| *open).await;
        }
        let first = |fault| log.used.lock().unwrap().insert((fault, n));
        if KILL.contains(&n) && first("kill") {
            log.lost
                .fetch_add(1 + drain(&mut s, &mut buf).await, SeqCst);
            return;
        }
        if !buf.is_empty() {
            log.pipelined.fetch_add(1, SeqCst);
        }
        answered += 1;
        let close = if answered == CLOSE_AT {
            "Connection: close\r\n"
        } else {
            ""
        };
        let answer = if n % 5 == 2 && first("500") {
            log.failed.fetch_add(1, SeqCst);
            format!("HTTP/1.1 500 Oops\r\n{close}Content-Length: 4\r\n\r\noops")
        } else {
            *log.ok.lock().unwrap().entry(n).or_default() += 1;
            format!("HTTP/1.1 204 No Content\r\n{close}\r\n")
        };
        s.write_all(answer.as_bytes()).await.unwrap();
        if !close.is_empty() {
            log.ignored.fetch_add(drain(&mut s, &mut buf).await, SeqCst);
            return;
        }
    }
}

/// Poll `cond` every 10 ms for up to 30 s (the kills wait out a 300 ms drain each).
async fn within_30s(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

fn config(pipeline: usize) -> HubConfig {
    HubConfig {
        delivery_concurrency: 1,
        delivery_pipeline: pipeline,
        retry: RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        },
        ..HubConfig::default()
    }
}

#[tokio::test]
async fn faults_inside_a_pipeline_are_counted_exactly() {
    const N: u64 = 30;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Log::default());
    let (gate, gate_rx) = watch::channel(false);
    let l2 = log.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(faulty(s, l2.clone(), gate_rx.clone()));
        }
    });
    let hub = TestHub::start(config(4)).await;
    hub.register("t").await;
    subscribe(&hub, "t", &format!("http://{addr}/cb"), &[]).await;
    // The callback holds its answer to "0" until everything else is queued, so the worker
    // then takes full pipelines of 4.
    assert_eq!(hub.publish("t", "text/plain", b"0").await.0, 200);
    within_30s("the first delivery written", || {
        hub.state.stats().distribution.attempts == 1
    })
    .await;
    for i in 1..N {
        let body = i.to_string();
        assert_eq!(hub.publish("t", "text/plain", body.as_bytes()).await.0, 200);
    }
    gate.send_replace(true);
    within_30s("every delivery ended", || {
        let d = hub.state.stats().distribution;
        d.pending == 0 && d.delivered + d.failed == N
    })
    .await;
    let d = hub.stats().await.distribution;
    let ok = log.ok.lock().unwrap().clone();
    assert_eq!(ok, (0..N).map(|i| (i, 1)).collect::<BTreeMap<_, _>>());
    assert_eq!((d.delivered, d.failed, d.dropped), (N, 0, 0));
    let (failed, lost) = (log.failed.load(SeqCst), log.lost.load(SeqCst));
    // Each body ≡ 2 (mod 5) is answered 500 once: 2, 7, 12, 17, 22, 27.
    assert_eq!(failed, 6);
    let want: BTreeMap<String, u64> = [("500".to_owned(), failed), ("error".to_owned(), lost)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(d.failed_attempts, want);
    // An attempt is a request the callback answered or lost with its connection; those it
    // did not process (after a closing answer) are not attempts.
    assert_eq!(d.attempts, N + failed + lost);
    assert_eq!(d.retried, d.attempts - N);
    // The paths were taken: pipelined requests (fewer writes than attempts, and requests
    // already waiting when the one before was answered), lost ones, not processed ones.
    assert!(d.writes < d.attempts, "{} writes", d.writes);
    assert!(log.pipelined.load(SeqCst) > 0);
    assert!(lost >= KILL.len() as u64, "{lost}");
    assert!(log.ignored.load(SeqCst) > 0);
    hub.stop().await;
}

/// An `http.server` subscriber on a free port (the port on its first stdout line) that
/// answers deliveries 204 and `GET /count` with how many it received.
const PY_CALLBACK: &str = r#"
import http.server, sys, threading
from urllib.parse import urlparse, parse_qs
lock = threading.Lock()
posts = 0
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = sys.argv[1]
    def log_message(self, *a):
        pass
    def do_GET(self):
        q = parse_qs(urlparse(self.path).query)
        with lock:
            body = q["hub.challenge"][0] if "hub.challenge" in q else str(posts)
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        global posts
        self.rfile.read(int(self.headers["Content-Length"]))
        with lock:
            posts += 1
        self.send_response(204)
        self.end_headers()
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

struct Python(Child);

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Python's `http.server` speaking `version`, and its port; `None` without python3
/// (outside CI: CI must have it).
fn python(version: &str) -> Option<(Python, u16)> {
    let child = Command::new("python3")
        .args(["-c", PY_CALLBACK, version])
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => Python(c),
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED: python3 does not start ({e})");
            return None;
        }
        Err(e) => panic!("CI: python3 is required: {e}"),
    };
    let mut line = String::new();
    let out = child.0.stdout.take().unwrap();
    BufReader::new(out).read_line(&mut line).unwrap();
    let port = line.trim().parse().expect("http.server printed its port");
    Some((child, port))
}

/// Python's `http.server` speaking `version` gets every delivery once, and the hub's counts
/// equal its own; `one_per_write`: the server closes after each answer, so each new
/// connection is sent one request and every write carries exactly one.
async fn python_subscriber(version: &str, one_per_write: bool) {
    const N: u64 = 300;
    let Some((_py, port)) = python(version) else {
        return;
    };
    let hub = TestHub::start(config(16)).await;
    hub.register("t").await;
    subscribe(&hub, "t", &format!("http://127.0.0.1:{port}/cb"), &[]).await;
    for i in 0..N {
        let body = i.to_string();
        assert_eq!(hub.publish("t", "text/plain", body.as_bytes()).await.0, 200);
    }
    within_30s("every delivery ended", || {
        hub.state.stats().distribution.pending == 0
    })
    .await;
    let d = hub.stats().await.distribution;
    assert_eq!(
        (d.attempts, d.delivered, d.retried, d.failed, d.dropped),
        (N, N, 0, 0, 0),
        "{:?}",
        d.failed_attempts
    );
    if one_per_write {
        assert_eq!(d.writes, N);
    } else {
        assert!(d.writes <= N, "{} writes", d.writes);
    }
    let addr = ([127, 0, 0, 1], port).into();
    let (status, count) = raw(addr, "GET", "/count", &[], b"").await.unwrap();
    assert_eq!((status, count), (200, N.to_string()));
    hub.stop().await;
}

#[tokio::test]
async fn python_http_server_keeping_the_connection_gets_every_delivery_once() {
    python_subscriber("HTTP/1.1", false).await;
}

#[tokio::test]
async fn python_http_server_closing_after_each_answer_gets_every_delivery_once() {
    python_subscriber("HTTP/1.0", true).await;
}
