//! HTTP/2 against servers that break the protocol on purpose (`support/h2_raw.rs`), one way
//! each: every attempt ends in the class and reason that name the fault, within 50 ms of its
//! timeout (plus the machine's wake-up lateness, `support/lateness.rs`), at concurrency 1 and
//! 16, and hubload's counts equal the server's (heads it read, streams it answered or
//! refused). The family is listed in docs/deadlines.md.

use std::time::Duration;

use crate::support::h2_raw::{Fault, RawH2};
use crate::support::lateness::Lateness;
use crate::util::{count, read_summary, try_run};

/// The attempts' timeout in these tests.
const TIMEOUT_MS: u64 = 400;

/// How every attempt against `fault` ends: its class and, for the classes that carry one,
/// its reason.
fn expected(fault: Fault) -> (&'static str, Option<&'static str>) {
    match fault {
        Fault::Answer => ("accepted", None),
        Fault::HugeHead | Fault::HpackBomb => ("other", Some("other.head_too_large")),
        Fault::ManyFields | Fault::ManyTrailers => ("other", Some("other.too_many_headers")),
        Fault::EndlessInterim => ("other", Some("other.unexpected_1xx")),
        Fault::PingFlood => ("protocol_error", Some("protocol_error.ping_flood")),
        Fault::SettingsFlood => ("protocol_error", Some("protocol_error.settings_flood")),
        Fault::UnknownFlood | Fault::PriorityFlood => {
            ("protocol_error", Some("protocol_error.frame_flood"))
        }
        // Streams sent before the server's SETTINGS arrived are refused (counted apart).
        Fault::StreamLimitZero => ("timeout_pool_wait", None),
        Fault::OversizedFrame => ("protocol_error", Some("protocol_error.frame_size")),
        Fault::BadHpack => ("protocol_error", Some("protocol_error.compression")),
        Fault::WindowOverflow | Fault::BadInitialWindow => {
            ("protocol_error", Some("protocol_error.flow_control"))
        }
        // h2's own limit on empty DATA frames (100 a connection) ends it before the flood
        // guard's 1,000 a second would.
        Fault::EmptyDataFlood => ("protocol_error", Some("protocol_error.enhance_your_calm")),
        Fault::ConnectionField | Fault::PushPromise => {
            ("protocol_error", Some("protocol_error.protocol"))
        }
        Fault::GoAway => ("goaway", Some("goaway.protocol_error")),
        Fault::GoAwayCalm => ("goaway", Some("goaway.enhance_your_calm")),
        Fault::EndlessHeaderBlock | Fault::Silent | Fault::NoRead => ("timeout_response", None),
        Fault::Http11 => ("protocol_error", Some("protocol_error.not_h2")),
    }
}

/// A run over h2c against `url`, writing into `out`, with `flags`; bounded, so a deadline that
/// does not hold fails the test instead of hanging it.
async fn run_h2(url: &str, out: &tempfile::TempDir, flags: &[&str]) -> anyhow::Result<()> {
    let mut args = vec!["--hub-url", url, "--http-version", "2", "--out"];
    args.push(out.path().to_str().unwrap());
    args.extend_from_slice(flags);
    let run = tokio::time::timeout(Duration::from_secs(60), try_run(&args));
    run.await.expect("the run ends").map(|_| ())
}

/// `requests` publishes at `concurrency` over h2c (one connection, as many streams) to a fresh
/// `fault` server, no registration; checks the classes, reasons, deadlines and counts.
async fn publish_to(fault: Fault, concurrency: u64, requests: u64) {
    let server = RawH2::start(fault).await;
    let dir = tempfile::tempdir().unwrap();
    let lateness = Lateness::watch();
    // The well-behaved server is the control: it has no deadline to prove, and on a machine
    // beside busy loops this in-process server took over 400 ms to answer some of 32 streams.
    let timeout_ms = if fault == Fault::Answer {
        10_000
    } else {
        TIMEOUT_MS
    };
    let (c, n, t) = (
        concurrency.to_string(),
        requests.to_string(),
        format!("{timeout_ms}ms"),
    );
    let flags = [
        "--register",
        "never",
        "--topics",
        "shared",
        "--pool-per-host",
        "1",
        "--h2-streams",
        &c,
        "--concurrency",
        &c,
        "--requests",
        &n,
        "--timeout",
        &t,
    ];
    run_h2(&server.url, &dir, &flags)
        .await
        .expect("the run succeeds");
    let s = read_summary(dir.path());
    let level = &s.levels[0];
    let bound = lateness.bound(Duration::from_millis(timeout_ms));
    let why = format!(
        "{fault:?} at concurrency {concurrency}: counts {:?}, reasons {:?}, max {} µs, bound {bound:?}",
        level.stats.counts.nonzero_map(),
        level.stats.reasons,
        level.derived.latency_us.max
    );
    eprintln!("{why}");
    assert_eq!(level.derived.samples, requests, "{why}");
    let (class, reason) = expected(fault);
    let refused = count(level, "refused_stream");
    assert_eq!(refused, server.refused(), "{why}");
    assert_eq!(count(level, class) + refused, requests, "{why}");
    // Every failure names its fault, a stream that raced h2's teardown of the connection too
    // (vendor/h2/PATCHED.md): no reason but the expected one.
    let want: Vec<(&str, u64)> = reason.map(|r| (r, requests)).into_iter().collect();
    let reasons = level.stats.reasons.to_map();
    let got: Vec<(&str, u64)> = reasons.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(got, want, "{why}");
    assert_eq!(count(level, "accepted"), server.answered(), "{why}");
    assert!(
        level.derived.latency_us.max <= bound.as_micros() as u64,
        "ended late: {why}"
    );
    // The server read every request that reached it; h2 never opens more streams than
    // there were attempts, and an HTTP/1.1 server reads no HTTP/2 head at all.
    assert!(server.heads() <= requests, "{why}");
}

async fn every_fault_at(concurrency: u64, requests: u64) {
    publish_to(Fault::Answer, concurrency, requests).await;
    for fault in Fault::HOSTILE {
        publish_to(fault, concurrency, requests).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_h2_server_is_named_and_cut_off_at_concurrency_1() {
    every_fault_at(1, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_h2_server_is_named_and_cut_off_at_concurrency_16() {
    every_fault_at(16, 32).await;
}

/// `flow_control` only for a window that stayed shut: against a server that opens every
/// window wide and then reads nothing, a 2 MB body that cannot leave (the socket is full) is
/// a plain response timeout, at its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_held_by_the_socket_not_the_window_is_a_plain_response_timeout() {
    let server = RawH2::start(Fault::NoRead).await;
    let dir = tempfile::tempdir().unwrap();
    let lateness = Lateness::watch();
    let t = format!("{TIMEOUT_MS}ms");
    let flags = [
        "--register",
        "never",
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--payload-bytes",
        "2000000",
        "--timeout",
        &t,
    ];
    run_h2(&server.url, &dir, &flags)
        .await
        .expect("the run succeeds");
    let level = &read_summary(dir.path()).levels[0];
    assert_eq!(
        count(level, "timeout_response"),
        2,
        "{:?}",
        level.stats.counts
    );
    assert!(level.stats.reasons.is_empty(), "{:?}", level.stats.reasons);
    assert!(level.derived.latency_us.min >= TIMEOUT_MS * 1000);
    let bound = lateness.bound(Duration::from_millis(TIMEOUT_MS));
    assert!(
        level.derived.latency_us.max <= bound.as_micros() as u64,
        "{} µs > {bound:?}",
        level.derived.latency_us.max
    );
}

/// Registration goes through the same client: against each server whose fault has a reason,
/// every registration fails at once (no timeout to wait out) and the run stops with one line
/// naming that reason. An HTTP/1.1-only server on `http://` with `--http-version 2` is told
/// to use `--http-version 1.1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_names_each_fault_in_one_line() {
    for fault in Fault::HOSTILE {
        let (_, Some(reason)) = expected(fault) else {
            continue;
        };
        let server = RawH2::start(fault).await;
        let dir = tempfile::tempdir().unwrap();
        // A timeout far longer than any busy machine takes to fail at once: ending before it
        // shows that nothing waited it out (at 1 s, a machine with a load of 10 took longer).
        let flags = ["--register", "always", "--tenants", "1", "--timeout", "60s"];
        let started = std::time::Instant::now();
        let err = format!("{:#}", run_h2(&server.url, &dir, &flags).await.unwrap_err());
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{fault:?}: {err}"
        );
        assert!(!err.contains('\n'), "{fault:?}: {err}");
        assert!(
            err.starts_with("cannot register topics at the hub"),
            "{err}"
        );
        assert!(err.contains(reason), "{fault:?}: {err}");
        assert_eq!(server.answered(), 0, "{fault:?}");
        if fault == Fault::Http11 {
            assert!(err.contains("does not speak HTTP/2"), "{err}");
            assert!(err.contains("use --http-version 1.1"), "{err}");
            assert_eq!(server.heads(), 0);
        }
    }
}

/// The peak resident memory of the hubload binary run with `args`, in KiB (its `VmHWM`, read
/// every 10 ms until it exits: only the last 10 ms, its exit, go unseen), and its exit code.
fn peak_rss_kib(args: &[&str]) -> (u64, Option<i32>) {
    let mut child = crate::util::hubload_command()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(exit) = child.try_wait().unwrap() {
            return (peak, exit.code());
        }
        let hwm = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
        peak = peak.max(hwm.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A server whose answers would decode to 16 MB (or 1 MiB) per response, or that floods
/// PINGs, leaves hubload's memory where a well-behaved one does: bounded by the header limits,
/// not by what the server sends. The checker's bound: 64 MB at concurrency 4 with a 1 s
/// timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_bounded_whatever_the_server_sends() {
    const BOUND_KIB: u64 = 64 * 1024;
    for fault in [Fault::HpackBomb, Fault::HugeHead, Fault::PingFlood] {
        let server = RawH2::start(fault).await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_str().unwrap().to_string();
        let url = server.url.clone();
        let (rss, code) = tokio::task::spawn_blocking(move || {
            peak_rss_kib(&[
                "--hub-url",
                &url,
                "--register",
                "never",
                "--topics",
                "shared",
                "--http-version",
                "2",
                "--concurrency",
                "4",
                "--requests",
                "200",
                "--timeout",
                "1s",
                "--out",
                &out,
            ])
        })
        .await
        .unwrap();
        eprintln!("{fault:?}: peak RSS {rss} KiB, exit {code:?}");
        assert_eq!(code, Some(0), "{fault:?}");
        assert!(rss <= BOUND_KIB, "{fault:?}: peak RSS {rss} KiB");
        let s = read_summary(dir.path());
        let (class, _) = expected(fault);
        let level = &s.levels[0];
        let seen = level.stats.counts.nonzero_map();
        assert_eq!(
            count(level, class),
            200,
            "{fault:?}: {seen:?} {:?}",
            level.stats.reasons
        );
        // None answered; and the server read at most one head per attempt (not exactly: a
        // stream sent as the client closes a connection it failed may never be read).
        assert_eq!(server.answered(), 0, "{fault:?}");
        assert!(server.heads() <= 200, "{fault:?}");
    }
}
