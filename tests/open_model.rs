//! Open-model accuracy: the real engine, through the public API, against a raw-TCP hub on
//! 127.0.0.1:0 with a scripted delay and stall; every count reconciled with the server's own.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hubload::report::document::Report;
use hubload::result::Class;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// What the scripted hub does to every request before answering.
#[derive(Debug, Clone, Copy, Default)]
struct Script {
    /// Fixed delay before every answer.
    delay: Duration,
    /// One stall window `(start after the first publish, length)`: every request arriving in
    /// it is held until the window ends.
    stall: Option<(Duration, Duration)>,
}

/// The scripted hub's state and counts.
#[derive(Debug, Default)]
struct Hub {
    script: Script,
    /// Requests per `hub.mode`.
    modes: Mutex<HashMap<String, u64>>,
    /// Requests held by the stall window.
    held: AtomicU64,
    first_publish: OnceLock<Instant>,
}

impl Hub {
    fn count(&self, mode: &str) -> u64 {
        self.modes.lock().unwrap().get(mode).copied().unwrap_or(0)
    }

    /// Wait as scripted for a request of `mode` that has just been read.
    async fn hold(&self, mode: &str) {
        let now = Instant::now();
        if mode == "publish" {
            self.first_publish.get_or_init(|| now);
        }
        if let (Some((after, len)), Some(first)) = (self.script.stall, self.first_publish.get()) {
            let (start, end) = (*first + after, *first + after + len);
            if now >= start && now < end {
                self.held.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep_until(end).await;
            }
        }
        if !self.script.delay.is_zero() {
            tokio::time::sleep(self.script.delay).await;
        }
    }
}

/// Start the scripted hub; returns its `/hub` URL and state.
async fn start_hub(script: Script) -> (String, Arc<Hub>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let hub = Arc::new(Hub {
        script,
        ..Hub::default()
    });
    let h = hub.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve_conn(sock, h.clone()));
        }
    });
    (format!("http://{addr}/hub"), hub)
}

/// `hub.mode` from the query string, else from a form body.
fn mode_of(target: &str, body: &[u8]) -> String {
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let find = |bytes: &[u8]| {
        url::form_urlencoded::parse(bytes)
            .find(|(k, _)| k == "hub.mode")
            .map(|(_, v)| v.into_owned())
    };
    find(query.as_bytes())
        .or_else(|| find(body))
        .unwrap_or_default()
}

/// One keep-alive HTTP/1.1 connection: read a request (head + Content-Length body), count its
/// mode, wait as scripted, answer `hub.mode=accepted`; repeat until the client closes.
async fn serve_conn(mut sock: TcpStream, hub: Arc<Hub>) {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    loop {
        let (head_len, target, body_len) = loop {
            // The codec's request parser, as hubload's servers read requests.
            match hubload_http1::request::parse_head(&buf) {
                Ok(Some(head)) => {
                    let hubload_http1::request::Framing::Length(cl) = head.framing else {
                        return;
                    };
                    let target = String::from_utf8_lossy(&buf[head.target]).into_owned();
                    break (head.len, target, cl as usize);
                }
                Ok(None) => match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                },
                Err(_) => return,
            }
        };
        while buf.len() < head_len + body_len {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        let mode = mode_of(&target, &buf[head_len..head_len + body_len]);
        buf.drain(..head_len + body_len);
        *hub.modes.lock().unwrap().entry(mode.clone()).or_insert(0) += 1;
        hub.hold(&mode).await;
        let body = "hub.mode=accepted";
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if sock.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Run hubload in-process against `url` with `args` (one topic, quiet, reports in a temp dir).
async fn run(url: &str, args: &[&str]) -> Report {
    let out = tempfile::tempdir().unwrap();
    let mut argv = vec![
        "--hub-url",
        url,
        "--tenants",
        "1",
        "--channels",
        "login",
        "--out",
        out.path().to_str().unwrap(),
    ];
    argv.extend_from_slice(args);
    let outcome = crate::util::run(&argv).await;
    assert!(!outcome.interrupted);
    outcome.report
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Open model, 200/s for 3 s after a 1 s warm-up; the hub stalls for 1 s starting 2 s after the
/// first (warm-up) publish, i.e. about 1 s into the measured time.
///
/// The relation: for every attempt, corrected = raw + (actual start − intended start), so
/// corrected ≥ raw attempt by attempt, hence at every percentile. This engine never delays a
/// scheduled send (it drops it when `--max-inflight` is reached), and raw latency includes any
/// wait for a pooled connection; so with 400 in flight and 400 connections, the ~200 sends
/// scheduled during the stall go out on time and are held by the hub: they carry the stall in
/// raw *and* corrected latency (uniform over 0–1 s), and the two differ only by the pacer →
/// worker hand-off (well under 50 ms here). The 400 sends outside the stall are fast. A third
/// of the attempts waiting up to 1 s puts the p99 near 0.97 s. Compare
/// `closed_model_hides_the_stall`: there the stall hides in one slow request (coordinated
/// omission), and the p99 stays small.
///
/// The warm-up absorbs the engine's start-up: each of the `--max-inflight` workers allocates
/// its own histograms when the level starts (about 1 ms per worker in a debug build), which
/// would otherwise delay the first sends (see the report to the lead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_model_sees_the_stall_in_corrected_latency() {
    let (url, hub) = start_hub(Script {
        delay: Duration::ZERO,
        stall: Some((Duration::from_secs(2), Duration::from_secs(1))),
    })
    .await;
    let report = run(
        &url,
        &[
            "--rate",
            "200",
            "--warmup",
            "1s",
            "--duration",
            "3s",
            "--max-inflight",
            "400",
            "--pool-per-host",
            "400",
        ],
    )
    .await;
    let level = &report.levels[0];
    let corrected = level
        .derived
        .corrected_latency_us
        .as_ref()
        .expect("open model");
    let raw = &level.derived.latency_us;
    eprintln!("raw {raw:?}\ncorrected {corrected:?}");
    assert_eq!(level.derived.samples, 600, "k·5 ms < 3 s for k = 0..599");
    // The server also saw the warm-up publishes: 200 scheduled, fewer if some were dropped.
    let warm = hub.count("publish") - level.derived.samples;
    assert!(warm <= 200, "warm-up publishes {warm}");
    assert_eq!(hub.count("register"), 1);
    assert_eq!(level.stats.dropped, 0);
    let held = hub.held.load(Ordering::Relaxed);
    assert!((180..=220).contains(&held), "held by the stall: {held}");
    // The stall is in the corrected tail…
    assert!(
        ms(corrected.p99) >= 900.0,
        "corrected p99 {}",
        ms(corrected.p99)
    );
    assert!(ms(corrected.max) >= 900.0 && ms(corrected.max) <= 1100.0);
    // …attempt by attempt corrected ≥ raw, and with no client-side queue they are close.
    for (c, r) in [
        (corrected.p50, raw.p50),
        (corrected.p90, raw.p90),
        (corrected.p99, raw.p99),
        (corrected.max, raw.max),
    ] {
        assert!(c >= r, "corrected {c} µs < raw {r} µs");
        assert!(c - r < 50_000, "corrected {c} µs vs raw {r} µs");
    }
    // Two thirds of the sends missed the stall, so the raw median is below it (however busy
    // the machine, the 1 ms service time is far from the 1 s stall).
    assert!(ms(raw.p50) < 900.0, "raw median {}", ms(raw.p50));
}

/// The same stall against the closed model with one publisher: it waits out the stall in one
/// request and sends nothing else meanwhile, so the stall is a single sample among thousands
/// and the p99 stays near the 1 ms service time — the coordinated omission the open model's
/// corrected latency avoids (p99 ≥ 0.9 s above). The max still shows the stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_model_hides_the_stall() {
    let (url, hub) = start_hub(Script {
        delay: Duration::from_millis(1),
        stall: Some((Duration::from_secs(1), Duration::from_secs(1))),
    })
    .await;
    let report = run(&url, &["--concurrency", "1", "--duration", "3s"]).await;
    let level = &report.levels[0];
    assert_eq!(hub.count("publish"), level.derived.samples);
    assert_eq!(hub.held.load(Ordering::Relaxed), 1);
    eprintln!(
        "closed: {} samples, p99 {} ms, max {} ms",
        level.derived.samples, level.derived.p99_ms, level.derived.max_ms
    );
    // Enough samples that the one stalled request lies beyond the p99 (needs > 100).
    assert!(level.derived.samples > 200, "{}", level.derived.samples);
    assert!(
        level.derived.p99_ms < 100,
        "closed p99 {} ms",
        level.derived.p99_ms
    );
    assert!(
        level.derived.max_ms >= 900,
        "closed max {} ms",
        level.derived.max_ms
    );
    assert!(level.derived.corrected_latency_us.is_none());
}

/// A fast hub: the achieved rate is within 5% of the target, nothing dropped.
///
/// The warm-up absorbs the workers' start-up (see above): without it, on a loaded machine the
/// first sends went out late and in a burst (throughput over the span 556/s) or were dropped
/// because no worker had started yet (40 drops with 200 in flight).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn achieved_rate_matches_the_target_on_a_fast_hub() {
    let (url, hub) = start_hub(Script::default()).await;
    let report = run(
        &url,
        &[
            "--rate",
            "500",
            "--warmup",
            "1s",
            "--duration",
            "2s",
            "--max-inflight",
            "100",
        ],
    )
    .await;
    let check = &report.rate_checks[0];
    assert_eq!(check.scheduled, 1000, "k·2 ms < 2 s for k = 0..999");
    assert_eq!(check.dropped, 0);
    // The hub also saw the warm-up sends: 500 scheduled, fewer if some found no free worker
    // (warm-up drops are not counted anywhere).
    let warm = hub.count("publish") - 1000;
    assert!(warm <= 500, "warm-up publishes {warm}");
    assert_eq!(report.levels[0].derived.samples, 1000);
    eprintln!("achieved {}/s", check.achieved);
    let off = (check.achieved - 500.0).abs() / 500.0;
    assert!(off < 0.05, "achieved {} /s", check.achieved);
    assert!(!check.below_target);
    // `achieved` divides the events by the level's duration, so without drops it is the target
    // by construction. The pacing itself shows in when the attempts ran: the throughput over
    // first start → last end, and the attempts finishing in each second of the level.
    let level = &report.levels[0];
    let thr_off = (level.derived.throughput - 500.0).abs() / 500.0;
    assert!(thr_off < 0.05, "throughput {} /s", level.derived.throughput);
    for (sec, b) in level.stats.timeline.iter().take(2).enumerate() {
        assert!((475..=525).contains(&b.count), "second {sec}: {}", b.count);
    }
}

/// `--max-inflight 1` against a 100 ms hub at 50/s for 2 s: every send that finds the one slot
/// taken is dropped, and the counts reconcile exactly.
///
/// 100 sends are scheduled (every 20 ms). Each send holds the slot for the 100 ms delay plus a
/// little, so the slot frees just after the 5th following tick: one send in six goes out
/// (ticks 0, 6, 12, … 96: 17 sends, 83 drops). Timer jitter can cost an extra tick now and then
/// but never gives one back, so drops lie in 83 ± a few; accepted range 75..=92.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drops_are_counted_exactly_when_the_generator_saturates() {
    let (url, hub) = start_hub(Script {
        delay: Duration::from_millis(100),
        stall: None,
    })
    .await;
    let report = run(
        &url,
        &["--rate", "50", "--duration", "2s", "--max-inflight", "1"],
    )
    .await;
    let level = &report.levels[0];
    let check = &report.rate_checks[0];
    let sent = level.derived.events.total;
    eprintln!(
        "sent {sent}, dropped {}, achieved {}/s",
        level.stats.dropped, check.achieved
    );
    assert_eq!(check.scheduled, 100);
    assert_eq!(sent + level.stats.dropped, check.scheduled);
    assert_eq!(hub.count("publish"), sent);
    assert_eq!(sent, level.derived.samples);
    assert_eq!(level.stats.dropped, check.dropped);
    assert!(
        (75..=92).contains(&level.stats.dropped),
        "dropped {}",
        level.stats.dropped
    );
    assert!(check.below_target);
}

/// Closed model with a request count: the hub saw exactly that many publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_model_request_count_reconciles() {
    let (url, hub) = start_hub(Script::default()).await;
    let report = run(&url, &["--requests", "500", "--concurrency", "8"]).await;
    assert_eq!(hub.count("publish"), 500);
    assert_eq!(report.levels[0].derived.samples, 500);
    assert_eq!(report.levels[0].stats.counts.get(Class::Accepted), 500);
    assert_eq!(hub.count("register"), 1);
}
