//! Prompt stops, against the real binary and a hub written here that stalls on purpose: a
//! SIGTERM during registration, a level or deregistration ends the run with 130 within 2 s,
//! no request starts after it, the requests in flight are counted `cancelled`, and the
//! partial summary is written. A second SIGTERM exits at once even when the first cannot.

use std::collections::HashMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a stalled request is held (far longer than any test waits).
const STALL: Duration = Duration::from_secs(60);

/// A hub that answers the first `fast[mode]` requests of each `hub.mode` at once with 202
/// and holds every later one for [`STALL`]; it records each request's mode and arrival time.
#[derive(Clone)]
struct StallingHub {
    url: String,
    seen: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl StallingHub {
    async fn start(fast: &[(&str, usize)]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hub", listener.local_addr().unwrap());
        let fast: HashMap<String, usize> = fast.iter().map(|(m, n)| (m.to_string(), *n)).collect();
        let hub = StallingHub {
            url,
            seen: Arc::default(),
        };
        let (seen, fast) = (hub.seen.clone(), Arc::new(fast));
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, seen.clone(), fast.clone()));
            }
        });
        hub
    }

    /// Requests of `mode` seen so far, with their arrival times.
    fn of(&self, mode: &str) -> Vec<Instant> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(m, _)| m == mode)
            .map(|(_, t)| *t)
            .collect()
    }

    /// Wait (bounded) until `n` requests of `mode` have arrived.
    async fn wait_for(&self, mode: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.of(mode).len() < n {
            assert!(
                Instant::now() < deadline,
                "only {} {mode} requests arrived",
                self.of(mode).len()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn serve(
    mut conn: TcpStream,
    seen: Arc<Mutex<Vec<(String, Instant)>>>,
    fast: Arc<HashMap<String, usize>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // One request head (every request hubload sends here has an empty or sized body).
        let (head_len, mode, body_len) = loop {
            // The codec's request parser, as hubload's servers read requests.
            if let Ok(Some(head)) = hubload_http1::request::parse_head(&buf) {
                let n = head.len;
                let path = String::from_utf8_lossy(&buf[head.target]).into_owned();
                let len = match head.framing {
                    hubload_http1::request::Framing::Length(l) => l as usize,
                    hubload_http1::request::Framing::Chunked => 0,
                };
                let mode = path
                    .split(['?', '&'])
                    .find_map(|kv| kv.strip_prefix("hub.mode="))
                    .unwrap_or("")
                    .to_string();
                break (n, mode, len);
            }
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        };
        while buf.len() < head_len + body_len {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        buf.drain(..head_len + body_len);
        let nth = {
            let mut s = seen.lock().unwrap();
            s.push((mode.clone(), Instant::now()));
            s.iter().filter(|(m, _)| *m == mode).count()
        };
        if nth > fast.get(&mode).copied().unwrap_or(usize::MAX) {
            tokio::time::sleep(STALL).await;
        }
        let ok = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
        if conn.write_all(ok).await.is_err() {
            return;
        }
    }
}

fn spawn_hubload(args: &[&str]) -> Child {
    crate::util::hubload_command()
        .args(args)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Send SIGTERM to `child`; returns when `kill` has delivered it.
fn sigterm(child: &Child) -> Instant {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    Instant::now()
}

/// Wait (bounded by 20 s) for `child` to exit; its exit code and when it was seen to exit.
async fn exit_of(child: &mut Child) -> (Option<i32>, Instant) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code(), Instant::now());
        }
        assert!(Instant::now() < deadline, "hubload did not exit");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

/// Signal once `n` requests of `mode` arrived; check the exit (130 within 2 s) and that the
/// hub saw exactly those `n` (none after the signal). Returns the written summary, and the
/// topics' names its `topic_names_file` holds.
async fn stop_during(
    hub: &StallingHub,
    flags: &[&str],
    mode: &str,
    n: usize,
) -> (serde_json::Value, Vec<std::sync::Arc<str>>) {
    let _serial = crate::util::SERIAL.lock().await;
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let mut args = vec!["--quiet", "--hub-url", &hub.url, "--out", dir];
    args.extend_from_slice(flags);
    let mut child = spawn_hubload(&args);
    hub.wait_for(mode, n).await;
    let signalled = sigterm(&child);
    let (code, exited) = exit_of(&mut child).await;
    let took = exited - signalled;
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        took < Duration::from_secs(2),
        "exited {took:?} after the signal"
    );
    let arrivals = hub.of(mode);
    assert_eq!(arrivals.len(), n, "{mode} requests after the signal");
    assert!(arrivals.iter().all(|t| *t < signalled));
    let s = summary(out.path());
    assert_eq!(s["partial"], true);
    (s, crate::util::read_summary(out.path()).topics)
}

/// 200 topics, 4 registrations at a time; the first 10 answered, the next 4 held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_registration_stops_at_once() {
    let hub = StallingHub::start(&[("register", 10)]).await;
    let flags = [
        "--tenants",
        "50",
        "--channels",
        "a,b,c,d",
        "--topics",
        "per-tenant-channel",
        "--register-concurrency",
        "4",
        "--requests",
        "10",
    ];
    let (s, topics) = stop_during(&hub, &flags, "register", 14).await;
    assert_eq!(topics.len(), 200);
    let reg = &s["registration"];
    assert_eq!(reg["counts"]["accepted"], 10, "{reg}");
    assert_eq!(reg["counts"]["cancelled"], 4, "{reg}");
    assert_eq!(hub.of("publish").len(), 0);
    assert_eq!(s["levels"].as_array().unwrap().len(), 0);
}

/// A closed-model level of 4 workers: 20 publishes answered, the next 4 held. They are
/// counted `cancelled`, never as failures of the hub, and the row adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_level_counts_in_flight_attempts_as_cancelled() {
    let hub = StallingHub::start(&[("publish", 20)]).await;
    let flags = ["--tenants", "3", "--concurrency", "4", "--duration", "60s"];
    let (s, _) = stop_during(&hub, &flags, "publish", 24).await;
    let level = &s["levels"][0];
    let counts = level["stats"]["counts"].as_object().unwrap();
    assert_eq!(counts["accepted"], 20, "{level}");
    assert_eq!(counts["cancelled"], 4, "{level}");
    let sum: u64 = counts.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, 24, "{level}");
    assert_eq!(level["samples"], 24);
}

/// `--deregister` after a 10-request level: 5 deregistrations answered, the next 3 held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_deregistration_stops_at_once() {
    let hub = StallingHub::start(&[("deregister", 5)]).await;
    let flags = [
        "--tenants",
        "20",
        "--concurrency",
        "2",
        "--requests",
        "10",
        "--deregister",
        "--register-concurrency",
        "3",
    ];
    let (s, _) = stop_during(&hub, &flags, "deregister", 8).await;
    assert_eq!(s["levels"][0]["stats"]["counts"]["accepted"], 10);
    let dereg = &s["deregistration"];
    assert_eq!(dereg["counts"]["accepted"], 5, "{dereg}");
    assert_eq!(dereg["counts"]["cancelled"], 3, "{dereg}");
}

/// A JTL that nobody reads (a FIFO whose reader never reads) stalls the run so the first
/// signal cannot finish it: the process still exits 130 within 2 s of one signal, and at once
/// after a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_run_exits_within_the_grace_and_at_once_on_a_second_signal() {
    let _serial = crate::util::SERIAL.lock().await;
    for second in [false, true] {
        let hub = StallingHub::start(&[]).await;
        let out = tempfile::tempdir().unwrap();
        let fifo = out.path().join("jtl.fifo");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // Opened for reading (so hubload's open for writing succeeds) and never read.
        let _reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let dir = out.path().join("out");
        let mut child = spawn_hubload(&[
            "--quiet",
            "--hub-url",
            &hub.url,
            "--tenants",
            "3",
            "--concurrency",
            "8",
            "--duration",
            "60s",
            "--jtl",
            fifo.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        // Stalled: no publish for 1.5 s once some have gone out (the JTL queue of 64 Ki rows,
        // its buffer and the pipe are full).
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut last = (0, Instant::now());
        loop {
            let n = hub.of("publish").len();
            if n != last.0 {
                last = (n, Instant::now());
            } else if n > 0 && last.1.elapsed() > Duration::from_millis(1500) {
                break;
            }
            assert!(Instant::now() < deadline, "the JTL never stalled the run");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let first = sigterm(&child);
        let limit = if second {
            tokio::time::sleep(Duration::from_millis(200)).await;
            sigterm(&child);
            // Well before the 1.5 s grace after the first signal.
            Duration::from_millis(1200)
        } else {
            Duration::from_secs(2)
        };
        let (code, exited) = exit_of(&mut child).await;
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert_eq!(code, Some(130), "{stderr}");
        let took = exited - first;
        assert!(
            took < limit,
            "second signal: {second}; exited {took:?} after the first"
        );
        // One signal: the stall held until the grace ran out (so the second case means something).
        assert_eq!(!second, stderr.contains("still stopping"), "{stderr}");
        if !second {
            assert!(took >= Duration::from_millis(1400), "{took:?}");
        }
    }
}
