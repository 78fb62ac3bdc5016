//! The reference hub over TLS (`--tls-cert`, `--tls-key`): hubload publishes to it over h2
//! chosen by ALPN (`--http-version 2` over https is refused before any load when the server
//! does not choose h2), trusting a throw-away CA, and the hub's counts equal hubload's.
//!
//! Needs `openssl` on PATH for the CA (`.ci/run` installs it).

use crate::support::tls_hub::TlsHub;
use crate::util::{count, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_hub_serves_h2_over_tls() {
    let Some(hub) = TlsHub::start().await else {
        return;
    };
    let url = hub.url();
    let ca = hub.ca();
    let out = hub.dir.path().join("out");
    let o = run(&[
        "--hub-url",
        &url,
        "--ca-cert",
        ca.to_str().unwrap(),
        "--http-version",
        "2",
        "--pool-per-host",
        "2",
        "--h2-streams",
        "8",
        "--tenants",
        "2",
        "--concurrency",
        "12",
        "--requests",
        "300",
        "--deregister",
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    let total = o.report.total.as_ref().unwrap();
    assert_eq!(
        (total.derived.samples, count(total, "accepted")),
        (300, 300)
    );
    let topics = o.report.topics.len() as u64;
    let reg = o.report.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (topics, topics));
    let s = hub.state.stats();
    assert_eq!((s.publish.accepted, s.publish.total()), (300, 300));
    assert_eq!(s.register.accepted, topics);
    assert_eq!(s.deregister.accepted, topics);
    // Two connections, each one TLS handshake.
    let handshakes = o.report.hub.as_ref().unwrap().tls_handshakes.as_ref();
    assert_eq!(handshakes.map(|h| h.count), Some(2));
    hub.stop().await;
}
