//! Tests: a target that renders event bodies itself (from templates, or in pieces) writes
//! byte for byte the requests of bodies rendered in pieces, read off a real socket.

use super::*;
use crate::workload::{Distribution, TopicLayout, WorkloadConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The complete requests at the start of `bytes`, as (head, body) by `Content-Length`.
fn requests(bytes: &[u8]) -> Vec<(&str, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(end) = bytes[at..].windows(4).position(|w| w == b"\r\n\r\n") {
        let head = std::str::from_utf8(&bytes[at..at + end]).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        let body = at + end + 4;
        if bytes.len() < body + len {
            break;
        }
        out.push((head, &bytes[body..body + len]));
        at = body + len;
    }
    out
}

/// Reads every request off one connection (up to `n`), answers each as a hub accepting a
/// publish, and returns the bytes received.
async fn accept_publishes(listener: tokio::net::TcpListener, n: usize) -> Vec<u8> {
    let (mut s, _) = listener.accept().await.unwrap();
    let mut got = Vec::new();
    let mut answered = 0;
    let mut buf = [0u8; 4096];
    while answered < n {
        let k = s.read(&mut buf).await.unwrap();
        assert!(k > 0, "the client closed early");
        got.extend_from_slice(&buf[..k]);
        let complete = requests(&got).len();
        for _ in answered..complete {
            let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\nhub.mode=accepted";
            s.write_all(ok).await.unwrap();
        }
        answered = complete;
    }
    got
}

/// An HTTP/1.1 Ballerina client with `max_conns` connections and `lanes` registrations at
/// once, generous timeouts.
fn ballerina_client(max_conns: usize, lanes: usize) -> WebSubClient {
    WebSubClient {
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(10),
        tls_timeout: Duration::from_secs(10),
        pool_timeout: Duration::from_secs(10),
        max_conns,
        headers: ExtraHeaders::default(),
        dialect: Dialect::Ballerina,
        topic_url_prefix: String::new(),
        wire: HubWire::Http1,
        phase_concurrency: lanes,
    }
}

/// `tenants` tenants of 2 service providers and 5 users, each with a login and a
/// registration topic.
fn login_and_registration(tenants: u32) -> WorkloadConfig {
    WorkloadConfig {
        tenants,
        sps: 2,
        users: 5,
        channels: vec!["login".into(), "registration".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: None,
        seed: 7,
        distribution: Distribution::Uniform,
    }
}

/// The bytes on the wire and the attempts of publishing events 0..n sent at `sent_us(seq)`,
/// with the body rendered in pieces (never from a template) and taken as the event's own,
/// or (`lazy`) rendered by the target where the request is written.
async fn publish(
    workload: &Arc<Workload>,
    n: u64,
    lazy: bool,
    sent_us: fn(u64) -> u64,
) -> (Vec<u8>, Vec<Attempt>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(accept_publishes(listener, n as usize));
    let url = url::Url::parse(&format!("http://{addr}/hub")).unwrap();
    let client = ballerina_client(1, 1);
    let hub = HubEndpoint::at(&url, vec![addr], None).unwrap();
    let mut target = WebSubTarget::new(hub, workload.topics(), &client);
    if lazy {
        target = target.with_workload(workload.clone());
    }
    assert_eq!(target.renders_body(), lazy);
    let mut attempts = Vec::new();
    let mut scratch = Default::default();
    for seq in 0..n {
        let mut event = workload.event_unrendered(seq, sent_us(seq));
        if !lazy {
            let jti = event.jti.hyphenated().to_string().into_bytes();
            let mut body = Vec::new();
            workload.render_body_in_pieces(&event, &jti.try_into().unwrap(), &mut body);
            event.body = body;
        }
        assert_eq!(event.body.is_empty(), lazy);
        let topic = &workload.topics()[event.topic];
        let now = std::time::Instant::now();
        attempts.push(target.send(topic, &event, now, &mut scratch).await);
    }
    (server.await.unwrap(), attempts)
}

/// The requests of a target that renders bodies (from templates where they have one) are
/// byte for byte those of bodies rendered in pieces: with templates for every event, for
/// none (send times before 2001), and for some (numbers past the templates' widths).
#[tokio::test]
async fn a_body_rendered_by_the_target_puts_the_same_bytes_on_the_wire() {
    let login_and_registration = login_and_registration(3);
    let mixed = WorkloadConfig {
        sps: 1_200,
        users: 150_000_000,
        channels: ["registration", "session", "custom-1"]
            .map(String::from)
            .to_vec(),
        payload_bytes: Some(1_500),
        ..login_and_registration.clone()
    };
    let now: fn(u64) -> u64 = |seq| 1_700_000_000_123_000 + seq * 1000;
    let long_ago: fn(u64) -> u64 = |seq| 1_000 + seq * 77_777_777_777;
    for (cfg, sent_us, templated) in [
        (login_and_registration.clone(), now, 20..=20),
        (login_and_registration, long_ago, 0..=0),
        (mixed, now, 1..=19),
    ] {
        let workload = Arc::new(Workload::new(cfg));
        let from_templates = (0..20)
            .filter(|&seq| {
                let e = workload.event_unrendered(seq, sent_us(seq));
                workload.body_template(&e).is_some()
            })
            .count();
        assert!(templated.contains(&from_templates), "{from_templates}");
        same_bytes_on_the_wire(&workload, sent_us).await;
    }
}

async fn same_bytes_on_the_wire(workload: &Arc<Workload>, sent_us: fn(u64) -> u64) {
    let (rendered, a) = publish(workload, 20, false, sent_us).await;
    let (lazy, b) = publish(workload, 20, true, sent_us).await;
    // Byte for byte but the Host header (each run has its own server port).
    let without_host = |bytes: &[u8]| -> Vec<(String, Vec<u8>)> {
        requests(bytes)
            .into_iter()
            .map(|(head, body)| {
                let head: Vec<&str> = head
                    .split("\r\n")
                    .filter(|l| !l.starts_with("Host: "))
                    .collect();
                (head.join("\r\n"), body.to_vec())
            })
            .collect()
    };
    assert_eq!(without_host(&rendered), without_host(&lazy));
    assert_eq!(rendered.len(), lazy.len());
    let facts = |a: &[Attempt]| -> Vec<_> {
        a.iter()
            .map(|a| (a.outcome, a.status, a.bytes_sent, a.bytes_received))
            .collect()
    };
    assert_eq!(facts(&a), facts(&b));
    assert!(b.iter().all(|a| a.outcome == Outcome::Accepted));
    let sent: u64 = b.iter().map(|a| a.bytes_sent).sum();
    assert_eq!(
        sent,
        lazy.len() as u64,
        "bytes_sent counts every byte written"
    );
    // Every body names its event and is that event's body, byte for byte.
    let reqs = requests(&lazy);
    assert_eq!(reqs.len(), 20);
    for (seq, (_, body)) in reqs.iter().enumerate() {
        let (s, sent) = workload.parse_identity(body).unwrap();
        assert_eq!((s, sent), (seq as u64, sent_us(seq as u64)));
        assert_eq!(*body, &workload.event_at(s, sent).body[..]);
    }
}

/// Answers every request on every connection as a hub accepting it, and counts the
/// connections open now and accepted in all.
async fn accept_all(
    listener: tokio::net::TcpListener,
    open: Arc<std::sync::atomic::AtomicUsize>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering::SeqCst;
    while let Ok((mut s, _)) = listener.accept().await {
        accepted.fetch_add(1, SeqCst);
        open.fetch_add(1, SeqCst);
        let open = open.clone();
        tokio::spawn(async move {
            let mut got = Vec::new();
            let mut answered = 0;
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(k) => got.extend_from_slice(&buf[..k]),
                }
                let complete = requests(&got).len();
                for _ in answered..complete {
                    let ok = b"HTTP/1.1 202 Accepted\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\nhub.mode=accepted";
                    if s.write_all(ok).await.is_err() {
                        break;
                    }
                }
                answered = complete;
            }
            open.fetch_sub(1, SeqCst);
        });
    }
}

/// Registration leaves no connection open behind it: the phase's pool is idle for the whole
/// load, and the hub would close its connections first and leave them in CLOSE-WAIT here.
#[tokio::test]
async fn registration_closes_its_connections_when_it_is_done() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (open, accepted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    tokio::spawn(accept_all(listener, open.clone(), accepted.clone()));
    let workload = Workload::new(login_and_registration(4));
    let url = url::Url::parse(&format!("http://{addr}/hub")).unwrap();
    let client = ballerina_client(4, 4);
    let hub = HubEndpoint::at(&url, vec![addr], None).unwrap();
    let target = WebSubTarget::new(hub, workload.topics(), &client);
    let cancel = CancellationToken::new();
    let done = target.prepare(workload.topics(), &cancel).await;
    assert_eq!(workload.topics().len(), 8);
    assert_eq!(done.counts.get(Class::Accepted), 8, "{done:?}");
    let Transport::Http1(pool) = &target.pool else {
        panic!("an HTTP/1.1 target")
    };
    assert_eq!(pool.idle_count(), 0);
    // Four lanes, so more than one connection was used, and every one of them is closed.
    assert!((2..=4).contains(&accepted.load(SeqCst)), "{accepted:?}");
    let until = Instant::now() + Duration::from_secs(5);
    while open.load(SeqCst) > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(open.load(SeqCst), 0, "the server still holds connections");
}
