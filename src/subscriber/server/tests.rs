//! The callback server over a scripted connection (every split of a request corpus) and over TCP.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::{route, MAX_BODY};
use crate::secret::Secret;
use crate::serve::{serve, End, ServerDeadlines};
use crate::subscriber::receive::test_signature;
use crate::subscriber::{Behaviour, DeliveryTracker, Fleet, FleetConfig};
use crate::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};
use hubload_http1::answer::CONTINUE;

#[test]
fn only_callback_paths_route() {
    assert_eq!(route("/cb/3/0"), Some((3, 0)));
    assert_eq!(route("/cb/12/345"), Some((12, 345)));
    for bad in [
        "/cb/3",
        "/cb/3/",
        "/cb//0",
        "/cb/+3/0",
        "/cb/3/0/x",
        "/x/3/0",
        "/cb/a/0",
    ] {
        assert_eq!(route(bad), None, "{bad}");
    }
}

/// A connection whose input arrives in the given pieces, one per read, then ends.
struct Script {
    reads: VecDeque<Vec<u8>>,
    written: Vec<u8>,
}

impl AsyncRead for Script {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(mut piece) = self.reads.pop_front() {
            let n = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..n]);
            if n < piece.len() {
                self.reads.push_front(piece.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Script {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.written.extend_from_slice(b);
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

const SECRET: &[u8] = b"k";

fn sign(b: &[u8]) -> String {
    test_signature(SECRET, b)
}

/// A fleet of one subscriber (topic 0, `hub.topic` t) with events 0.. published to it.
async fn fleet() -> (Fleet, Arc<Workload>) {
    fleet_with(ServerDeadlines::default()).await
}

/// [`fleet`], its callback server's connections bounded by `deadlines`.
pub(super) async fn fleet_with(deadlines: ServerDeadlines) -> (Fleet, Arc<Workload>) {
    let w = Arc::new(Workload::new(WorkloadConfig {
        tenants: 1,
        sps: 1,
        users: 1,
        channels: vec!["login".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: None,
        seed: 3,
        distribution: Distribution::Uniform,
    }));
    let fleet = Fleet::start(
        FleetConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            callback_url: None,
            per_topic: 1,
            topics: vec![(0, "t".into())],
            secret: Some(Secret::new(String::from_utf8(SECRET.to_vec()).unwrap())),
            lease_seconds: 60,
            behaviour: Behaviour::default(),
            deadlines,
        },
        w.clone(),
        Arc::new(DeliveryTracker::new(64)),
    )
    .await
    .unwrap();
    fleet.open_level(0);
    (fleet, w)
}

pub(super) fn event(fleet: &Fleet, w: &Workload, seq: u64) -> Vec<u8> {
    fleet.tracker().note_published(seq, 0, Instant::now());
    w.event_at(seq, 1_000_000).body
}

/// A signed delivery of `body` to subscriber 0/0, `extra` header lines (each ending in CRLF) added.
pub(super) fn post(extra: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nX-Hub-Signature: {}\r\nContent-Length: {}\r\n{extra}\r\n",
        sign(body),
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn chunked(pieces: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Every `date:` value replaced by `D`.
fn undated(s: &str) -> String {
    s.split("\r\n")
        .map(|l| {
            if l.starts_with("date: ") {
                "date: D"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[tokio::test]
async fn every_split_of_a_pipelined_corpus_gets_the_same_answers() {
    let (fleet, w) = fleet().await;
    let (a, b, c) = (
        event(&fleet, &w, 0),
        event(&fleet, &w, 1),
        event(&fleet, &w, 2),
    );
    let mut corpus = post("", &a);
    // Chunked, with an extension and a trailer.
    corpus.extend_from_slice(
        format!(
            "POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Hub-Signature: {}\r\n\r\n",
            sign(&b)
        )
        .as_bytes(),
    );
    let (b1, b2) = b.split_at(100);
    let body = chunked(&[b1, b2]);
    let body = String::from_utf8(body)
        .unwrap()
        .replacen("\r\n", ";ext=1\r\n", 1);
    corpus.extend_from_slice(body.trim_end_matches("\r\n").as_bytes());
    corpus.extend_from_slice(b"\r\nX-Trailer: 1\r\n\r\n");
    let continue_at = corpus.len();
    let third = post("Expect: 100-continue\r\n", &c);
    let continue_span = continue_at + third.len() - c.len()..continue_at + third.len();
    corpus.extend_from_slice(&third);
    corpus.extend_from_slice(
        b"GET /cb/0/0?hub.mode=subscribe&hub.topic=t&hub.challenge=x HTTP/1.1\r\n\r\n",
    );
    corpus.extend_from_slice(b"PUT /cb/0/0 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    corpus.extend_from_slice(b"POST /nope HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
    let again = post("Connection: keep-alive\r\n", &a);
    corpus.extend_from_slice(&[b"POST /cb/0/0 HTTP/1.0".as_slice(), &again[21..]].concat());
    corpus.extend_from_slice(
        b"POST /cb/0/0 HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
    );
    // After `Connection: close`: never answered.
    corpus.extend_from_slice(b"GET /cb/0/0 HTTP/1.1\r\n\r\n");

    let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\ndate: D\r\n\r\n";
    let not_found = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\ndate: D\r\n\r\n";
    let expected = [
        ok,
        ok,
        ok,
        not_found, // not subscribing: the challenge is not echoed
        "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\ndate: D\r\n\r\n",
        not_found,
        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\ndate: D\r\nconnection: keep-alive\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\ndate: D\r\nconnection: close\r\n\r\n",
    ]
    .concat();
    let sh = fleet.shared.clone();
    let stop = CancellationToken::new();
    let mut runs = 0;
    let mut run = |pieces: Vec<Vec<u8>>, label: String| {
        runs += 1;
        let sh = sh.clone();
        let stop = stop.clone();
        async move {
            let mut io = Script {
                // A read of 0 bytes is the end of input: no empty pieces.
                reads: pieces.into_iter().filter(|p| !p.is_empty()).collect(),
                written: Vec::new(),
            };
            let mut answered = 0;
            assert_eq!(
                serve(
                    &mut io,
                    &*sh,
                    &ServerDeadlines::default(),
                    &stop,
                    &mut answered
                )
                .await
                .unwrap(),
                End::Done,
                "{label}"
            );
            assert_eq!(answered, 8, "{label}");
            String::from_utf8(io.written).unwrap()
        }
    };
    let cont = std::str::from_utf8(CONTINUE).unwrap();
    for i in 0..=corpus.len() {
        let (x, y) = corpus.split_at(i);
        let out = run(vec![x.to_vec(), y.to_vec()], format!("split at {i}")).await;
        // 100 Continue exactly when the third head has arrived without all of its body.
        let wants_continue = continue_span.contains(&i);
        let third_ok = out.match_indices(ok.split("date").next().unwrap()).nth(2);
        assert_eq!(out.contains(cont), wants_continue, "split at {i}");
        if let (Some(at), Some((third, _))) = (out.find(cont), third_ok) {
            assert!(
                at < third,
                "100 Continue before the third answer, split at {i}"
            );
        }
        assert_eq!(undated(&out.replace(cont, "")), expected, "split at {i}");
    }
    let bytes = corpus.chunks(1).map(<[u8]>::to_vec).collect();
    let out = run(bytes, "byte by byte".into()).await;
    assert_eq!(out.matches(cont).count(), 1);
    assert_eq!(undated(&out.replace(cont, "")), expected);
    let c = fleet.close_level(Duration::ZERO).await.counts;
    // Per run: a, b, c, a again and an unsigned {}; only the first run's a, b, c are new.
    assert_eq!(
        (
            c.received,
            c.delivered,
            c.duplicates,
            c.bad_signature,
            c.body_mismatch
        ),
        (5 * runs, 3, 4 * runs - 3, runs, 0)
    );
}

/// A request on its own connection: the answer, read to the server's close.
async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The server may answer (413) and close before taking all of it.
    let _ = s.write_all(request).await;
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn bodies_are_checked_whole_and_oversized_ones_refused() {
    let (fleet, w) = fleet().await;
    let addr = fleet.local_addr();
    let send = |head: String, body: &[u8]| {
        let mut r = format!("{head}\r\nConnection: close\r\n\r\n").into_bytes();
        r.extend_from_slice(body);
        async move { exchange(addr, &r).await[9..12].to_owned() }
    };
    let chunked_head = |sig: &str| {
        format!("POST /cb/0/0 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Hub-Signature: {sig}")
    };
    // Event 0 in three chunks: joined, it is the event.
    let b0 = event(&fleet, &w, 0);
    let (a, rest) = b0.split_at(7);
    let (b, c) = rest.split_at(200);
    assert_eq!(
        send(chunked_head(&sign(&b0)), &chunked(&[a, b, c])).await,
        "200"
    );
    // Event 1 with one byte changed (signed as sent): a body mismatch.
    let mut b1 = event(&fleet, &w, 1);
    let n = b1.len() - 2;
    b1[n] ^= 1;
    let (a, b) = b1.split_at(300);
    assert_eq!(
        send(chunked_head(&sign(&b1)), &chunked(&[a, b])).await,
        "200"
    );
    // Past MAX_BODY: refused by its Content-Length, or once the chunks add up to more.
    let head = format!("POST /cb/0/0 HTTP/1.1\r\nContent-Length: {}", MAX_BODY + 1);
    assert_eq!(send(head, &[]).await, "413");
    let half = vec![b' '; MAX_BODY / 2 + 1];
    assert_eq!(
        send(chunked_head("x"), &chunked(&[&half, &half])).await,
        "413"
    );
    // Exactly MAX_BODY is taken (and, not signed, counted as a bad signature).
    let head = format!("POST /cb/0/0 HTTP/1.1\r\nContent-Length: {MAX_BODY}");
    assert_eq!(send(head, &vec![b' '; MAX_BODY]).await, "200");
    // A malformed head and an unknown coding: refused, nothing counted.
    assert_eq!(
        send("POST /cb/0/0 HTTP/1.1\r\nContent-Length: x".into(), b"").await,
        "400"
    );
    let gzip = "POST /cb/0/0 HTTP/1.1\r\nTransfer-Encoding: gzip".into();
    assert_eq!(send(gzip, b"").await, "501");
    let c = fleet.close_level(Duration::ZERO).await.counts;
    assert_eq!(
        (c.received, c.delivered, c.body_mismatch, c.bad_signature),
        (3, 1, 1, 1)
    );
}

#[tokio::test]
async fn a_client_waiting_for_100_continue_gets_it() {
    let (fleet, w) = fleet().await;
    let body = event(&fleet, &w, 0);
    let mut s = tokio::net::TcpStream::connect(fleet.local_addr())
        .await
        .unwrap();
    let req = post("Expect: 100-continue\r\n", &body);
    s.write_all(&req[..req.len() - body.len()]).await.unwrap();
    let mut got = vec![0; CONTINUE.len()];
    tokio::time::timeout(Duration::from_secs(30), s.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, CONTINUE);
    s.write_all(&body).await.unwrap();
    let mut answer = [0; 12];
    s.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    drop(s);
    assert_eq!(fleet.close_level(Duration::ZERO).await.counts.delivered, 1);
}

#[tokio::test]
async fn stopping_closes_an_idle_keep_alive_connection() {
    let (fleet, w) = fleet().await;
    let body = event(&fleet, &w, 0);
    let mut s = tokio::net::TcpStream::connect(fleet.local_addr())
        .await
        .unwrap();
    s.write_all(&post("", &body)).await.unwrap();
    let mut answer = [0; 12];
    s.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200");
    drop(fleet);
    // The rest of the answer, then the end of the connection (no `connection: close`: it was idle).
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert!(rest.ends_with(b"\r\n\r\n") && !rest.windows(5).any(|w| w == b"close"));
}
