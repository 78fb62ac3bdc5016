//! `--resolve HOST:PORT:ADDR[,ADDR...]` with real sockets: one name pinned to `127.0.0.1` and
//! `::1`, the hub listening on only one of them, the other refusing. The run (publishes,
//! registrations and subscription requests) uses the one that accepts, its counts equal the
//! hub's, and `summary.json` and the log name that address.

use std::net::{IpAddr, SocketAddr};

use hubload_hub::HubConfig;
use tokio::net::{TcpListener, TcpSocket};

use crate::util::{assert_exit, bin, bin_env, count, read_summary, TestHub, SERIAL};

/// The hub on `listen` (port 0) and a socket holding the same port on `other`, bound but not
/// listening, so a connection there is refused and nothing else can take the port. `None`
/// (with the reason printed) when this machine has no `::1`.
async fn hub_and_refuser(listen: &str, other: &str) -> Option<(TestHub, TcpSocket)> {
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        eprintln!("skipped: this machine has no ::1 ({e})");
        return None;
    }
    // The port is free on `listen`'s address; take it on the other too (retry if taken there).
    for _ in 0..20 {
        let listener = TcpListener::bind((listen, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let addr = SocketAddr::new(other.parse::<IpAddr>().unwrap(), port);
        let refuser = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4(),
            SocketAddr::V6(_) => TcpSocket::new_v6(),
        }
        .unwrap();
        if refuser.bind(addr).is_ok() {
            return Some((TestHub::start_on(listener, HubConfig::default()), refuser));
        }
    }
    panic!("no port free on both {listen} and {other} in 20 tries");
}

/// Run the binary (log at info) against `http://dual.test:PORT/hub` pinned to both loopback
/// addresses, and check everything against the hub on `used`, with `refused` refusing.
async fn run_pinned(hub: &TestHub, used: &str, refused: &str) {
    let _turn = SERIAL.lock().await;
    let port = hub.addr.port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://dual.test:{port}/hub");
    let pin = format!("dual.test:{port}:127.0.0.1,[::1]");
    let args: Vec<String> = [
        "--hub-url",
        &url,
        "--resolve",
        &pin,
        "--tenants",
        "3",
        "--concurrency",
        "1,4",
        "--requests",
        "150",
        "--subscribers",
        "1",
        "--out",
        "r",
    ]
    .map(String::from)
    .to_vec();
    let cwd = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        bin_env(&args, &cwd, &[])
    })
    .await
    .unwrap();
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);

    let r = read_summary(&dir.path().join("r"));
    // The hub counts a delivery when the callback's answer is back: wait for none pending.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let s = loop {
        let s = hub.stats().await;
        if s.distribution.pending == 0 || tokio::time::Instant::now() >= deadline {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let total = r.total.as_ref().unwrap();
    assert_eq!(total.derived.samples, 300);
    assert_eq!(count(total, "accepted"), 300);
    assert_eq!((s.publish.accepted, s.publish.total()), (300, 300));
    // 3 tenants × 4 channels registered, through the same pinned address.
    let reg = r.registration.as_ref().unwrap();
    assert_eq!((reg.result.topics, reg.accepted), (12, 12));
    assert_eq!(s.register.accepted, 12);
    // The subscription requests (12 subscribes, 12 unsubscribes) went the same way, and each
    // publish was delivered once.
    let sub = r.subscription.as_ref().unwrap();
    assert_eq!((sub.requested, sub.verified), (12, 12), "{sub:?}");
    let unsub = r.unsubscription.as_ref().unwrap();
    assert_eq!((unsub.requested, unsub.verified), (12, 12), "{unsub:?}");
    assert_eq!(s.subscribe.accepted, 24);
    let delivered: u64 = r
        .levels
        .iter()
        .map(|l| l.delivery.as_ref().unwrap().counts.delivered)
        .sum();
    assert_eq!((delivered, s.distribution.delivered), (300, 300));
    // Only the address that accepted carries the load, every attempt of it.
    let host = r.hub.as_ref().unwrap();
    let addrs: Vec<(&str, u64)> = host
        .addresses
        .iter()
        .map(|a| (a.address.as_str(), a.attempts))
        .collect();
    assert_eq!(addrs, [(used, 300)]);
    // The log says which address is in use, and which one was skipped.
    let in_use = format!("  hub at    dual.test: {used} (pinned by --resolve)");
    assert!(stderr.contains(&in_use), "{stderr}");
    let skipped = format!("hub dual.test: {refused} refused at start; not used");
    assert!(stderr.contains(&skipped), "{stderr}");
    assert_eq!(r.config["target"]["resolve"], serde_json::json!([pin]));
}

/// The hub on `listen` only, `other` refusing on the same port: the run uses `listen`.
async fn only_one_listens(listen: &str, other: &str) {
    let Some((hub, _refuser)) = hub_and_refuser(listen, other).await else {
        return;
    };
    let at = |ip: &str| SocketAddr::new(ip.parse().unwrap(), hub.addr.port()).to_string();
    run_pinned(&hub, &at(listen), &at(other)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_pinned_to_both_loopbacks_uses_ipv6_when_only_it_listens() {
    only_one_listens("::1", "127.0.0.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_pinned_to_both_loopbacks_uses_ipv4_when_only_it_listens() {
    only_one_listens("127.0.0.1", "::1").await;
}

#[test]
fn a_bad_resolve_is_one_line_naming_the_flag_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, why) in [
        ("dual.test:8080", "is not HOST:PORT:ADDR[,ADDR...]"),
        (
            "dual.test:8080:localhost",
            "`localhost` is not an IP address",
        ),
        ("dual.test:0:127.0.0.1", "the port is not a number"),
    ] {
        let out = bin(&["--resolve", bad, "--requests", "1"], dir.path());
        assert_exit(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        let want = format!("hubload: error: invalid --resolve `{bad}`: {why}");
        assert!(lines[0].starts_with(&want), "{stderr}");
    }
    let help = bin(&["--help"], dir.path());
    assert_exit(&help, 0);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("--resolve <HOST:PORT:ADDR[,ADDR...]>"),
        "{text}"
    );
}
