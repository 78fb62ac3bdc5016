//! The topic server's deadlines against misbehaving clients (never sends, trickled head, trickled body over TCP; a slow reader over a pipe) at 1 and 16 connections, while real fetches still count.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{TopicServer, TopicServerConfig};
use crate::serve::misbehave_tests::{assert_on_time, many, settled, slow_readers, Misbehaviour};
use crate::serve::{End, ServerCounts, ServerDeadlines};
use crate::test_lateness::Lateness;
use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};

pub(super) const LIMITS: ServerDeadlines = ServerDeadlines {
    idle: Duration::from_millis(250),
    exchange: Duration::from_millis(400),
    max_connections: 10_000,
};

/// Events of 64 kB: one answer is more than a slow reader's pipe holds.
const EVENT_BYTES: usize = 64 * 1024;

/// The workload of these tests: two topics, events of `event_bytes` (`workload(n)` is the
/// `event_bytes` of [`serve_with_a_good_client`]).
pub(super) fn workload(event_bytes: usize) -> Arc<Workload> {
    Arc::new(Workload::new(WorkloadConfig {
        tenants: 2,
        sps: 1,
        users: 1,
        channels: vec!["login".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: Some(event_bytes),
        seed: 5,
        distribution: Distribution::Uniform,
    }))
}

/// A topic server on 127.0.0.1 with [`LIMITS`], `good` events of topic 0 published and one
/// of topic 1; and a hub that behaves, started: `good` fetches of topic 0, 20 ms apart, each
/// on its own connection and read whole, counting the answers that are 200 and longer than
/// an event (the misbehaving clients ask for topic 1, whose path is returned).
pub(super) async fn serve_with_a_good_client(
    w: &Arc<Workload>,
    event_bytes: usize,
    good: u64,
) -> (TopicServer, String, tokio::task::JoinHandle<u64>) {
    let ts = TopicServer::start(
        TopicServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            hub_url: "http://hub.example/hub".into(),
            topic_url_prefix: None,
            queue_cap: 1024,
            deadlines: LIMITS,
        },
        w.clone(),
    )
    .await
    .unwrap();
    let addr = ts.local_addr();
    let path = |t: usize| {
        let url = ts.topic_url(t).unwrap();
        url::Url::parse(&url).unwrap().path().to_owned()
    };
    for seq in 0..good {
        ts.note_published(0, seq, 1_000_000 + seq);
    }
    ts.note_published(1, good, 1_000_000);
    let fetch = format!("GET {} HTTP/1.1\r\nConnection: close\r\n\r\n", path(0));
    let client = tokio::spawn(async move {
        let mut ok = 0;
        for _ in 0..good {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            s.write_all(fetch.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            s.read_to_end(&mut answer).await.unwrap();
            ok += u64::from(answer.starts_with(b"HTTP/1.1 200") && answer.len() > event_bytes);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ok
    });
    let other = path(1);
    (ts, other, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wait_ends_at_its_deadline_and_fetches_still_count() {
    let w = workload(EVENT_BYTES);
    for n in [1, 16] {
        let lateness = Lateness::watch();
        const GOOD: u64 = 40;
        let (ts, other, good) = serve_with_a_good_client(&w, EVENT_BYTES, GOOD).await;
        let addr = ts.local_addr();
        let head = format!("GET {other} HTTP/1.1\r\nHost: hubload-topics\r\n\r\n");
        let with_body = format!(
            "GET {other} HTTP/1.1\r\nContent-Length: 100\r\n\r\n{}",
            "x".repeat(100)
        );
        let took = many(addr, Misbehaviour::NeverSends, n, b"", 0).await;
        assert_on_time(&took, LIMITS.idle, &lateness, &format!("never sends, {n}"));
        let took = many(addr, Misbehaviour::TrickledHead, n, head.as_bytes(), 0).await;
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("trickled head, {n}"),
        );
        let body_at = with_body.len() - 100;
        let took = many(
            addr,
            Misbehaviour::TrickledBody,
            n,
            with_body.as_bytes(),
            body_at,
        )
        .await;
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("trickled body, {n}"),
        );
        // A fetch of a 64 kB event, its answer read slowly.
        let ended = slow_readers(ts.shared.clone(), LIMITS, n, head.as_bytes()).await;
        let took: Vec<_> = ended.iter().map(|(t, _, read)| (*t, *read)).collect();
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("slow reader, {n}"),
        );
        assert!(
            ended
                .iter()
                .all(|(_, end, read)| *end == End::WriteLate && *read < EVENT_BYTES),
            "{ended:?}"
        );
        assert_eq!(
            good.await.unwrap(),
            GOOD,
            "{n}: every good fetch got its event"
        );
        let counts = settled(|| ts.server_counts()).await;
        let n = n as u64;
        assert_eq!(
            counts,
            ServerCounts {
                accepted: 3 * n + GOOD,
                ended: 3 * n + GOOD,
                answered: GOOD,
                idle_closed: n,
                read_late: 2 * n,
                write_late: 0,
                over_limit: 0,
            }
        );
        let st = ts.take_stats();
        // Topic 0: exactly the good fetches, each a new event; topic 1: one per slow reader.
        assert_eq!(
            (st.by_topic[0], st.by_topic[1], st.fetched_new),
            (GOOD, n, GOOD + 1),
            "{n}"
        );
    }
}
