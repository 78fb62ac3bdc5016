//! AMQP over WebSockets through an HTTP proxy: hubload's sender and receiver through a real
//! tinyproxy (with Basic credentials), reconciled with the emulator's counts and the
//! proxy's own log; `NO_PROXY` bypassing it; its 407 named; and hostile proxies (silent, or
//! an endless answer head), each ending within the connect deadline.
//!
//! Needs `openssl` and `tinyproxy` on PATH (`.ci/run` installs them).

#[path = "../../tests/support/lateness.rs"]
mod lateness;
mod proxy_common;
mod tls_common;

use std::time::{Duration, Instant};

use hubload_http1::proxy::ProxyConfig;
use hubload_servicebus::{
    ConnectionString, OutgoingMessage, ReceiverConfig, SbReceiver, SbSender, SendOutcome,
};
use proxy_common::Tinyproxy;
use tls_common::{emulator, make_certs, sender_config, serve_ws};
use tokio::io::AsyncWriteExt;

/// The proxy password of these tests: it must appear nowhere hubload writes.
const PASSWORD: &str = "pr0xy-s3cret";

/// The proxy settings `--proxy URL` gives, over an empty environment.
fn flag(url: &str) -> ProxyConfig {
    ProxyConfig::resolve(Some(url), None, |_| None).unwrap()
}

/// AMQP over WebSockets to localhost:4443 (never reached) through the "proxy" on `port`.
fn through_hostile(port: u16) -> ConnectionString {
    let mut cs = ConnectionString::new("localhost", Some(4443), "k", "a2V5", false);
    cs.transport = hubload_servicebus::TransportType::AmqpWebSockets;
    cs.with_proxy(&flag(&format!("http://127.0.0.1:{port}")))
}

fn msg<'a>(body: &'a [u8], id: &'a str) -> OutgoingMessage<'a> {
    OutgoingMessage {
        body,
        message_id: id,
        content_type: "application/json",
        properties: &[],
    }
}

/// 30 sends over two tunnelled connections and a receiver over a third: the emulator counts
/// 30 accepted on 3 connections, and tinyproxy's log shows exactly 3 CONNECTs to the
/// emulator's WebSocket port, all established with the credentials given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_through_tinyproxy_reconcile_with_the_emulator_and_the_proxy_log() {
    let Some(tp) = Tinyproxy::start(Some(("hubload", PASSWORD))) else {
        return;
    };
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await;
    let authority = format!("localhost:{}", cs.port.unwrap());
    let url = format!("http://hubload:{PASSWORD}@127.0.0.1:{}", tp.port);
    let cs = cs.with_proxy(&flag(&url));
    assert!(!format!("{cs:?}").contains(PASSWORD), "{cs:?}");
    let mut rx = SbReceiver::connect(ReceiverConfig::new(cs.clone(), "orders", "all"))
        .await
        .unwrap();
    let sender = SbSender::connect(sender_config(cs, Duration::from_secs(5)))
        .await
        .unwrap();
    for i in 0..30 {
        let id = format!("p-{i}");
        let r = sender.send("orders", msg(b"{}", &id)).await;
        assert_eq!(r.outcome, SendOutcome::Accepted, "send {i}");
    }
    let c = emu.counts();
    assert_eq!((c.accepted, c.connections), (30, 3));
    let m = rx
        .receive(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("a message through the proxy");
    rx.complete(&m).await.unwrap();
    assert_eq!(tp.wait_for(3, |t| t.connects(&authority)), 3);
    assert_eq!(tp.wait_for(3, |t| t.established("localhost")), 3);
    assert_eq!(tp.all_connects(), 3);
    sender.close().await;
    rx.close().await;
    emu.shutdown().await;
}

/// `HTTPS_PROXY` names tinyproxy and `NO_PROXY` names the host: connections go direct and the
/// proxy's log shows no CONNECT. Without `NO_PROXY` the same settings route through it.
#[tokio::test]
async fn no_proxy_bypasses_the_proxy() {
    let Some(tp) = Tinyproxy::start(None) else {
        return;
    };
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await;
    let proxy_url = tp.url();
    let env = |no_proxy: &'static str| {
        let proxy_url = proxy_url.clone();
        move |k: &str| match k {
            "HTTPS_PROXY" => Some(proxy_url.clone()),
            "NO_PROXY" => Some(no_proxy.to_string()),
            _ => None,
        }
    };
    let routed = cs
        .clone()
        .with_proxy(&ProxyConfig::resolve(None, None, env("")).unwrap());
    assert_eq!(routed.proxy.map(|p| p.port()), Some(tp.port));
    let cfg = ProxyConfig::resolve(None, None, env("example.com, localhost")).unwrap();
    let cs = cs.with_proxy(&cfg);
    assert!(cs.proxy.is_none());
    let sender = SbSender::connect(sender_config(cs, Duration::from_secs(5)))
        .await
        .unwrap();
    let r = sender.send("orders", msg(b"{}", "direct")).await;
    assert_eq!(r.outcome, SendOutcome::Accepted);
    assert_eq!(emu.counts().connections, 2);
    assert_eq!(tp.all_connects(), 0);
    sender.close().await;
    emu.shutdown().await;
}

/// A proxy that wants credentials: none gives its 407 named, with the fix; wrong ones its
/// refusal (tinyproxy: 401) without the password anywhere in the error. Nothing reaches the emulator.
#[tokio::test]
async fn a_proxy_that_wants_credentials_fails_with_proxy_407() {
    let Some(tp) = Tinyproxy::start(Some(("hubload", PASSWORD))) else {
        return;
    };
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await;
    let authority = format!("localhost:{}", cs.port.unwrap());
    let none = cs.clone().with_proxy(&flag(&tp.url()));
    let e = SbSender::connect(sender_config(none, Duration::from_secs(5)))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with(&format!(
            "HTTP proxy {} refused CONNECT {authority}: answered 407 Proxy Authentication Required: it wants credentials, give them in the proxy URL (http://user:password@host:port) (proxy_407)",
            tp.url()
        )),
        "{e}"
    );
    let wrong = format!("http://hubload:not-{PASSWORD}@127.0.0.1:{}", tp.port);
    let e = SbSender::connect(sender_config(
        cs.with_proxy(&flag(&wrong)),
        Duration::from_secs(5),
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(
        // tinyproxy answers wrong credentials with 401 (others with 407 again).
        e.ends_with(
            "answered 401 Unauthorized: it refused the credentials in the proxy URL (proxy_401)"
        ),
        "{e}"
    );
    assert!(!e.contains(PASSWORD), "{e}");
    assert_eq!(emu.counts().connections, 0);
    emu.shutdown().await;
}

/// A "proxy" that accepts and never answers: the connect ends at its timeout, not before,
/// within the margin after.
#[tokio::test]
async fn a_silent_proxy_ends_at_the_connect_timeout() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let (s, _) = l.accept().await.unwrap();
            held.push(s);
        }
    });
    let cs = through_hostile(port);
    let timeout = Duration::from_millis(400);
    let lateness = lateness::Lateness::watch();
    let started = Instant::now();
    let e = SbSender::connect(sender_config(cs, timeout))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= timeout && took <= lateness.bound(timeout),
        "ended after {took:?}, bound {:?}",
        lateness.bound(timeout)
    );
    assert!(e.to_string().ends_with("was not open within 400ms"), "{e}");
    server.abort();
}

/// A "proxy" that answers 200 with a head that never ends: the tunnel fails once 64 KiB
/// are read, named, well before the timeout; it would send for ever.
#[tokio::test]
async fn an_endless_answer_head_fails_at_64_kib() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nX-Endless: ").await;
        let chunk = [b'a'; 4096];
        while s.write_all(&chunk).await.is_ok() {}
    });
    let cs = through_hostile(port);
    let timeout = Duration::from_secs(5);
    let started = Instant::now();
    let e = SbSender::connect(sender_config(cs, timeout))
        .await
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < timeout, "{e}");
    assert!(
        e.ends_with(&format!(
            "HTTP proxy http://127.0.0.1:{port} refused CONNECT localhost:4443: sent an answer head past 64 KiB (proxy_head_too_large)"
        )),
        "{e}"
    );
    server.abort();
}

/// A proxy that opens the first `open` tunnels (to 127.0.0.1 at the port asked for) and
/// answers every later CONNECT 407. Returns its port, the tunnels' tasks (abort one to break
/// its connection) and the count of refusals it answered.
async fn proxy_that_stops_admitting(
    open: usize,
) -> (
    u16,
    std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering::Relaxed;
    use tokio::io::AsyncReadExt;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let tunnels = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (t, r) = (tunnels.clone(), refused.clone());
    tokio::spawn(async move {
        let mut seen = 0;
        while let Ok((mut s, _)) = l.accept().await {
            seen += 1;
            let mut head = Vec::new();
            let mut b = [0u8; 1024];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                match s.read(&mut b).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            if seen > open {
                let no = b"HTTP/1.1 407 Proxy Authentication Required\r\n\
                    Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n";
                let _ = s.write_all(no).await;
                r.fetch_add(1, Relaxed);
                continue;
            }
            let line = String::from_utf8_lossy(&head).to_string();
            let authority = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string();
            let to = authority
                .rsplit_once(':')
                .unwrap()
                .1
                .parse::<u16>()
                .unwrap();
            let mut up = tokio::net::TcpStream::connect(("127.0.0.1", to))
                .await
                .unwrap();
            s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .unwrap();
            t.lock().unwrap().push(tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut s, &mut up).await;
            }));
        }
    });
    (port, tunnels, refused)
}

/// A connection that breaks mid-run and whose proxy then refuses the new tunnel: the send
/// ends `ProxyRefused` with the proxy's status (hubload counts it `conn_refused`, reason
/// `proxy`), within the send's deadline, and the proxy counted each refusal it answered.
#[tokio::test]
async fn a_tunnel_refused_on_reconnect_ends_the_send_with_the_proxys_status() {
    let certs = make_certs();
    let emu = emulator().await;
    let cs = serve_ws(&emu, &certs).await;
    let (port, tunnels, refused) = proxy_that_stops_admitting(1).await;
    let cs = cs.with_proxy(&flag(&format!("http://127.0.0.1:{port}")));
    let mut cfg = sender_config(cs, Duration::from_secs(5));
    cfg.connections = 1;
    let sender = SbSender::connect(cfg).await.unwrap();
    let r = sender.send("orders", msg(b"{}", "before")).await;
    assert_eq!(r.outcome, SendOutcome::Accepted);
    for t in tunnels.lock().unwrap().drain(..) {
        t.abort();
    }
    // The send that finds the connection gone may end as that loss; a later one reconnects,
    // and the proxy's 407 is its outcome (a bounded number of tries).
    let mut outcomes = Vec::new();
    let lateness = lateness::Lateness::watch();
    for i in 0..5 {
        let started = Instant::now();
        let r = sender
            .send("orders", msg(b"{}", &format!("after-{i}")))
            .await;
        assert!(started.elapsed() <= lateness.bound(Duration::from_secs(5)));
        let done = matches!(r.outcome, SendOutcome::ProxyRefused { .. });
        outcomes.push(r.outcome);
        if done {
            break;
        }
    }
    assert_eq!(
        outcomes.last(),
        Some(&SendOutcome::ProxyRefused { status: 407 }),
        "{outcomes:?}"
    );
    assert!(
        outcomes[..outcomes.len() - 1]
            .iter()
            .all(|o| *o == SendOutcome::ConnectionError),
        "{outcomes:?}"
    );
    assert_eq!(refused.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(emu.counts().accepted, 1);
    sender.close().await;
    emu.shutdown().await;
}
