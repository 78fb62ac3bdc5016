//! HTTP/2 against a server that misbehaves on purpose (`support/h2_server.rs`, the `h2` crate's server
//! side): a stream window that never opens is a response timeout with reason `flow_control`,
//! a reset with a code is `stream_reset` with that code, and credentials arrive as HTTP/2
//! fields (lowercase names, no connection-specific ones). Counts equal the server's exactly.

use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::support::h2_server::{Behaviour, H2Server};
use crate::util::{count, run};

/// A run over h2c at `url`: one shared topic, `n` publishes, 4 at once on one connection,
/// and `flags`; bounded so a deadline that does not hold fails the test instead of hanging it.
async fn run_h2(url: &str, n: &str, flags: &[&str]) -> hubload::RunOutcome {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec!["--hub-url", url, "--topics", "shared", "--out", out];
    args.extend_from_slice(&["--http-version", "2", "--pool-per-host", "1"]);
    args.extend_from_slice(&["--h2-streams", "4", "--concurrency", "4", "--requests", n]);
    args.extend_from_slice(flags);
    tokio::time::timeout(Duration::from_secs(60), run(&args))
        .await
        .expect("the run ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_that_never_opens_is_a_response_timeout_for_flow_control() {
    let server = H2Server::start(Behaviour::Hold).await;
    let started = Instant::now();
    let o = run_h2(&server.url, "12", &["--timeout", "300ms"]).await;
    assert_eq!(o.report.registration.as_ref().unwrap().accepted, 1);
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(total.derived.samples, 12);
    assert_eq!(count(total, "timeout_response"), 12);
    // Every attempt ended at its deadline: 3 rounds of 4 at once, 300 ms each.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        total.derived.latency_us.min >= 295_000,
        "{}",
        total.derived.latency_us.min
    );
    assert!(
        total.derived.latency_us.max < 1_300_000,
        "{}",
        total.derived.latency_us.max
    );
    // The server saw the registration (on a pool of its own) and each publish's fields.
    let seen = server.seen();
    assert_eq!(seen.len(), 13);
    let publishes: Vec<_> = seen
        .iter()
        .filter(|s| s.path.contains("hub.mode=publish"))
        .collect();
    assert_eq!(publishes.len(), 12);
    // The client's first streams on the load's connection may go before the server's SETTINGS
    // (window 0) reach it (RFC 9113 §6.9.2: until then the window is 65,535): their bodies
    // arrive and they wait for an answer, a plain response timeout. Every other body never
    // left: `flow_control`, exactly as many as the server received no body for.
    let bodies = publishes.iter().filter(|s| s.body > 0).count() as u64;
    assert!(bodies <= 4, "{bodies} bodies arrived after the first round");
    let reasons = total.stats.reasons.to_map();
    let flow = reasons.get("timeout_response.flow_control").copied();
    assert_eq!(flow, Some(12 - bodies), "{reasons:?}");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_is_stream_reset_with_its_code_as_the_reason() {
    for (code, reason, n) in [
        (
            h2::Reason::ENHANCE_YOUR_CALM,
            "stream_reset.enhance_your_calm",
            10,
        ),
        (h2::Reason::INTERNAL_ERROR, "stream_reset.internal_error", 7),
    ] {
        let server = H2Server::start(Behaviour::Reset(code)).await;
        let o = run_h2(&server.url, &n.to_string(), &["--register", "never"]).await;
        let total = o.report.total.as_ref().unwrap();
        assert_eq!(total.derived.samples, n, "{reason}");
        assert_eq!(count(total, "stream_reset"), n, "{reason}");
        let reasons = total.stats.reasons.to_map();
        assert_eq!(reasons[reason], n, "{reasons:?}");
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert_eq!(server.seen().len() as u64, n, "{reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_arrive_as_lowercase_fields_without_connection_fields() {
    let server = H2Server::start(Behaviour::Answer).await;
    // User info in the URL becomes Basic credentials, as over HTTP/1.1.
    let url = server.url.replace("http://", "http://al%69ce:p%40ss@");
    let o = run_h2(&url, "30", &["--header", "X-Api-Key: k1"]).await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(count(total, "accepted"), 30);
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:p@ss")
    );
    let seen = server.seen();
    // One registration and exactly 30 publishes.
    assert_eq!(seen.len(), 31);
    let publishes: Vec<_> = seen
        .iter()
        .filter(|s| s.path.starts_with("/hub?hub.mode=publish&"))
        .collect();
    assert_eq!(publishes.len(), 30);
    for s in &seen {
        let names: Vec<&str> = s.fields.iter().map(|(n, _)| n.as_str()).collect();
        let field = |name: &str| {
            s.fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(field("authorization"), Some(basic.as_str()), "{names:?}");
        assert_eq!(field("x-api-key"), Some("k1"), "{names:?}");
        for dropped in ["host", "connection", "keep-alive", "transfer-encoding"] {
            assert!(!names.contains(&dropped), "{names:?}");
        }
        assert!(
            names.iter().all(|n| *n == n.to_ascii_lowercase()),
            "{names:?}"
        );
        assert!(!s.path.contains("alice"));
        // The length field and the body agree.
        assert_eq!(field("content-length"), Some(s.body.to_string().as_str()));
    }
    for s in &publishes {
        let names: Vec<&str> = s.fields.iter().map(|(n, _)| n.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(
            sorted,
            [
                "accept",
                "activityid",
                "authorization",
                "content-length",
                "content-type",
                "user-agent",
                "x-api-key"
            ]
        );
        assert!(s.body > 0);
    }
}
