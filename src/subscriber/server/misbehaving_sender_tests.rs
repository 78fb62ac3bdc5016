//! The callback server's deadlines against misbehaving clients (never sends, trickled head, trickled body over TCP; a slow reader over a pipe) at 1 and 16 connections, while real deliveries still count.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::tests::{event, fleet_with, post};
use crate::serve::misbehave_tests::{assert_on_time, many, settled, slow_readers, Misbehaviour};
use crate::serve::{End, ServerCounts, ServerDeadlines};
use crate::subscriber::fleet_shared::Intent;
use crate::test_lateness::Lateness;

const LIMITS: ServerDeadlines = ServerDeadlines {
    idle: Duration::from_millis(250),
    exchange: Duration::from_millis(400),
    max_connections: 10_000,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wait_ends_at_its_deadline_and_deliveries_still_count() {
    for n in [1, 16] {
        let lateness = Lateness::watch();
        let (fleet, w) = fleet_with(LIMITS).await;
        let addr = fleet.local_addr();
        // A hub that behaves: deliveries 20 ms apart, all along, each on its own connection
        // (a kept-alive one could reach its idle deadline on a busy machine).
        const GOOD: u64 = 60;
        let bodies: Vec<_> = (0..GOOD)
            .map(|s| post("Connection: close\r\n", &event(&fleet, &w, s)))
            .collect();
        let good = tokio::spawn(async move {
            let mut ok = 0;
            for b in bodies {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                s.write_all(&b).await.unwrap();
                let mut answer = Vec::new();
                s.read_to_end(&mut answer).await.unwrap();
                ok += u64::from(answer.starts_with(b"HTTP/1.1 200"));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            ok
        });
        let delivery = post("", &event(&fleet, &w, GOOD));
        let body_at = delivery.len() - event(&fleet, &w, GOOD).len();
        let took = many(addr, Misbehaviour::NeverSends, n, b"", 0).await;
        assert_on_time(&took, LIMITS.idle, &lateness, &format!("never sends, {n}"));
        let took = many(addr, Misbehaviour::TrickledHead, n, &delivery, 0).await;
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("trickled head, {n}"),
        );
        let took = many(addr, Misbehaviour::TrickledBody, n, &delivery, body_at).await;
        assert_on_time(
            &took,
            LIMITS.exchange,
            &lateness,
            &format!("trickled body, {n}"),
        );
        // A verification echoing an 8 kB challenge, its answer read slowly.
        fleet.shared.subs[0].set_intent(Intent::Subscribing);
        let verify = format!(
            "GET /cb/0/0?hub.mode=subscribe&hub.topic=t&hub.challenge={} HTTP/1.1\r\n\r\n",
            "c".repeat(8192)
        );
        let ended = slow_readers(fleet.shared.clone(), LIMITS, n, verify.as_bytes()).await;
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
                .all(|(_, end, read)| *end == End::WriteLate && *read < 8192),
            "{ended:?}"
        );
        assert_eq!(
            good.await.unwrap(),
            GOOD,
            "{n}: the good deliveries answered 200"
        );
        let counts = settled(|| fleet.server_counts()).await;
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
        let c = fleet.close_level(Duration::ZERO).await.counts;
        assert_eq!((c.received, c.delivered), (GOOD, GOOD), "{n}");
    }
}
