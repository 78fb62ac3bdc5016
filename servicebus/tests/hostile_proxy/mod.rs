//! A TCP proxy in front of the emulator that misbehaves in one way on cue, for
//! `hostile.rs` and `hostile_receiver.rs`: it floods empty frames, ends the session, detaches
//! a link, pushes transfers nobody gave credit for, withholds or rewrites its settlements, or
//! goes silent on reconnect; and it records how the client ended its sessions.

// Shared by two test binaries, each using a part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fe2o3_amqp::types::definitions::{self, AmqpError, ErrorCondition, Handle, LinkError};
use fe2o3_amqp::types::messaging::{DeliveryState, Rejected};
use fe2o3_amqp::types::performatives::{Attach, Detach, Disposition, End, Transfer};
use fe2o3_amqp::types::primitives::Binary;
use hubload_servicebus::outcome::condition_str;
use hubload_servicebus::ConnectionString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// What the proxy does once told to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward both ways.
    None,
    /// Stop forwarding the broker's frames and send empty frames without pause (for at
    /// most 5 s).
    EmptyFlood,
    /// End session 0 with `amqp:internal-error` and forward nothing more from the broker;
    /// the connection stays open. Done once, on the first connection that sees it: the fault
    /// then returns to `None`, so a reconnect is served.
    EndSession,
    /// Detach the first `hubload-…` link (a topic's sender link, or the subscription's
    /// receiver link) with `amqp:link:detach-forced` and forward nothing more from the
    /// broker; the session and connection stay open. Done once, as `EndSession` is.
    DetachLink,
    /// Push this many settled transfers on the CBS reply link, then forward as before.
    CreditFlood(u32),
    /// Push this many settled transfers on the first `hubload-…` link (the subscription's
    /// receiver link), then forward as before. Done once, as `EndSession` is.
    LinkFlood(u32),
    /// Close every proxied connection; new ones are accepted and never answered.
    Silent,
    /// Forward everything from the broker but its dispositions: a receiver in
    /// `rcv-settle-mode = second` never sees a settlement confirmed.
    NoEcho,
    /// Forward the broker's dispositions as `rejected` with
    /// `com.microsoft:message-lock-lost`, as Azure answers a settlement whose lock ran out.
    LockLostEcho,
}

/// A TCP proxy to `upstream` that misbehaves when [`Proxy::fault`] is set. It runs on a
/// thread and runtime of its own, as a separate broker would, so that a flood it sends is
/// not slowed by the client it floods.
pub struct Proxy {
    port: u16,
    fault: Arc<watch::Sender<Fault>>,
    ends: Ends,
    sent: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The condition of each `end` the client sent, in order (`none`: it carried no error).
type Ends = Arc<Mutex<Vec<String>>>;

impl Drop for Proxy {
    fn drop(&mut self) {
        // Ends the proxy's runtime and every connection task on it.
        let _ = self.stop.take().map(|s| s.send(()));
    }
}

impl Proxy {
    pub async fn start(upstream: std::net::SocketAddr) -> Proxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (fault, rx) = watch::channel(Fault::None);
        let fault = Arc::new(fault);
        let ends = Ends::default();
        let sent = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (once, client_ends, client_sent) = (fault.clone(), ends.clone(), sent.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                let mut conns = JoinSet::new();
                let accept = async {
                    while let Ok((client, _)) = listener.accept().await {
                        let rx = rx.clone();
                        if *rx.borrow() == Fault::Silent {
                            // Read and discard; never answer.
                            conns.spawn(async move {
                                let mut client = client;
                                let mut sink = [0u8; 1024];
                                while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
                            });
                            continue;
                        }
                        let up = Upstream {
                            addr: upstream,
                            once: once.clone(),
                            ends: client_ends.clone(),
                            sent: client_sent.clone(),
                        };
                        conns.spawn(proxy_conn(client, up, rx));
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        Proxy {
            port,
            fault,
            ends,
            sent,
            stop: Some(stop),
        }
    }

    pub fn fault(&self, f: Fault) {
        self.fault.send_replace(f);
    }

    /// The condition of each `end` the client sent so far, in order (`none`: no error).
    pub fn client_ends(&self) -> Vec<String> {
        self.ends.lock().unwrap().clone()
    }

    /// Transfers the client has sent on its topic links (`hubload-…`) so far, every one of
    /// them forwarded to the broker.
    pub fn client_transfers(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// A connection string for the emulator behind the proxy, aimed at the proxy.
    pub fn connection_string(&self) -> ConnectionString {
        super::local(self.port)
    }
}

/// This process's resident set, bytes (`VmRSS` of /proc/self/status).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap();
    kb * 1024
}

/// The length of the first whole protocol header or frame in `buf`, if it holds one.
fn next_unit(buf: &[u8]) -> Option<usize> {
    if buf.len() >= 4 && &buf[..4] == b"AMQP" {
        return (buf.len() >= 8).then_some(8);
    }
    let size = u32::from_be_bytes(buf.get(..4)?.try_into().unwrap()) as usize;
    (buf.len() >= size).then_some(size)
}

/// An AMQP frame on `channel` around an encoded performative (and payload).
fn frame(channel: u16, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + body.len());
    f.extend_from_slice(&(8 + body.len() as u32).to_be_bytes());
    f.extend_from_slice(&[2, 0]);
    f.extend_from_slice(&channel.to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// The broker's handle of a link, if `unit` is the broker's attach of a link whose name
/// `named` accepts.
fn attach_handle(unit: &[u8], named: impl Fn(&str) -> bool) -> Option<u32> {
    // An AMQP frame (type 0) whose body is an attach (descriptor 0x12).
    let body = unit.get(8..)?;
    if unit.get(5) != Some(&0) || body.get(..3) != Some(&[0x00, 0x53, 0x12]) {
        return None;
    }
    let attach: Attach = serde_amqp::from_slice(body).ok()?;
    named(&attach.name).then_some(attach.handle.0)
}

/// The broker's handle of the CBS reply link, if `unit` is the broker's attach of it.
fn cbs_reply_handle(unit: &[u8]) -> Option<u32> {
    attach_handle(unit, |name| name.ends_with("-mgmt-receiver"))
}

/// The broker's handle of a topic's sender link (hubload names them `hubload-…`), if `unit`
/// is the broker's attach of one.
fn topic_link_handle(unit: &[u8]) -> Option<u32> {
    attach_handle(unit, |name| name.starts_with("hubload-"))
}

/// The handle of a transfer, if `unit` is one (an AMQP frame whose body is a transfer,
/// descriptor 0x14): the first field of its list, read by hand, since the message follows
/// the performative in the same frame.
fn transfer_handle(unit: &[u8]) -> Option<u32> {
    let body = unit.get(8..)?;
    if unit.get(5) != Some(&0) || body.get(..3) != Some(&[0x00, 0x53, 0x14]) {
        return None;
    }
    // list8 (size, count: a byte each) or list32 (four bytes each), then the handle, a uint.
    let first = match *body.get(3)? {
        0xc0 => 6,
        0xd0 => 12,
        _ => return None,
    };
    match *body.get(first)? {
        0x43 => Some(0),
        0x52 => body.get(first + 1).map(|b| u32::from(*b)),
        0x70 => Some(u32::from_be_bytes(
            body.get(first + 1..first + 5)?.try_into().ok()?,
        )),
        _ => None,
    }
}

/// The condition of the client's `end`, if `unit` is one (an AMQP frame whose body is an
/// end, descriptor 0x17).
fn end_condition(unit: &[u8]) -> Option<String> {
    let body = unit.get(8..)?;
    if unit.get(5) != Some(&0) || body.get(..3) != Some(&[0x00, 0x53, 0x17]) {
        return None;
    }
    let end: End = serde_amqp::from_slice(body).ok()?;
    Some(
        end.error
            .map_or_else(|| "none".to_string(), |e| condition_str(&e.condition)),
    )
}

/// The broker's disposition in `unit`, if it is one (an AMQP frame whose body is a
/// disposition, descriptor 0x15), with its channel.
fn disposition(unit: &[u8]) -> Option<(u16, Disposition)> {
    let body = unit.get(8..)?;
    if unit.get(5) != Some(&0) || body.get(..3) != Some(&[0x00, 0x53, 0x15]) {
        return None;
    }
    let channel = u16::from_be_bytes([unit[6], unit[7]]);
    Some((channel, serde_amqp::from_slice(body).ok()?))
}

/// `unit` as `fault` lets it through to the client: `None` to drop it.
fn let_through(fault: Fault, unit: Vec<u8>) -> Option<Vec<u8>> {
    match (fault, disposition(&unit)) {
        (Fault::NoEcho, Some(_)) => None,
        (Fault::LockLostEcho, Some((channel, mut d))) => {
            let lost = definitions::Error::new(
                ErrorCondition::Custom("com.microsoft:message-lock-lost".into()),
                Some("the proxy says the lock was lost".into()),
                None,
            );
            d.state = Some(DeliveryState::Rejected(Rejected { error: Some(lost) }));
            Some(frame(channel, &serde_amqp::to_vec(&d).unwrap()))
        }
        _ => Some(unit),
    }
}

/// Where a proxied connection goes, and what it reports back.
struct Upstream {
    addr: std::net::SocketAddr,
    /// To put the fault back to `None` once a one-off fault is done.
    once: Arc<watch::Sender<Fault>>,
    ends: Ends,
    /// Transfers the client sent on its topic links, once forwarded.
    sent: Arc<AtomicU64>,
}

/// Forward the client's bytes to the broker as they come, noting each `end` the client sends
/// and counting its transfers on topic links.
async fn client_to_broker(
    mut client_r: tokio::net::tcp::OwnedReadHalf,
    mut up_w: tokio::net::tcp::OwnedWriteHalf,
    ends: Ends,
    sent: Arc<AtomicU64>,
) {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    // The client's handles of its topic links (`hubload-…`).
    let mut topic_links: Vec<u32> = Vec::new();
    loop {
        let n = match client_r.read(&mut chunk).await {
            Ok(n) if n > 0 => n,
            _ => return,
        };
        if up_w.write_all(&chunk[..n]).await.is_err() {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some(len) = next_unit(&buf) {
            let unit = &buf[..len];
            if let Some(c) = end_condition(unit) {
                ends.lock().unwrap().push(c);
            }
            topic_links.extend(topic_link_handle(unit));
            if transfer_handle(unit).is_some_and(|h| topic_links.contains(&h)) {
                sent.fetch_add(1, Ordering::SeqCst);
            }
            buf.drain(..len);
        }
    }
}

/// Settled transfers of 1 KiB on `handle`, numbered `ids`, as one buffer.
fn transfers(handle: u32, ids: std::ops::Range<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for id in ids {
        let t = Transfer {
            handle: Handle(handle),
            delivery_id: Some(1_000_000 + id),
            delivery_tag: Some(Binary::from(id.to_be_bytes().to_vec())),
            message_format: Some(0),
            settled: Some(true),
            more: false,
            rcv_settle_mode: None,
            state: None,
            resume: false,
            aborted: false,
            batchable: false,
        };
        let mut body = serde_amqp::to_vec(&t).unwrap();
        // A data section of 1 KiB.
        body.extend_from_slice(&[0x00, 0x53, 0x75, 0xb0]);
        body.extend_from_slice(&1024u32.to_be_bytes());
        body.extend_from_slice(&[b'x'; 1024]);
        out.extend_from_slice(&frame(0, &body));
    }
    out
}

async fn proxy_conn(client: TcpStream, upstream: Upstream, mut rx: watch::Receiver<Fault>) {
    let Ok(up) = TcpStream::connect(upstream.addr).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = up.set_nodelay(true);
    let (client_r, mut client_w) = client.into_split();
    let (mut up_r, up_w) = up.into_split();
    let to_broker = tokio::spawn(client_to_broker(
        client_r,
        up_w,
        upstream.ends.clone(),
        upstream.sent.clone(),
    ));
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut cbs_handle = None;
    let mut topic_handle = None;
    let mut forwarding = true;
    'conn: loop {
        tokio::select! {
            n = up_r.read(&mut chunk) => match n {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => break,
            },
            changed = rx.changed() => if changed.is_err() { break },
        }
        while let Some(len) = next_unit(&buf) {
            let unit: Vec<u8> = buf.drain(..len).collect();
            cbs_handle = cbs_handle.or_else(|| cbs_reply_handle(&unit));
            topic_handle = topic_handle.or_else(|| topic_link_handle(&unit));
            let Some(unit) = let_through(*rx.borrow(), unit) else {
                continue;
            };
            if forwarding && client_w.write_all(&unit).await.is_err() {
                break 'conn;
            }
        }
        let fault = *rx.borrow_and_update();
        match fault {
            Fault::None => {}
            Fault::EmptyFlood if forwarding => {
                forwarding = false;
                let empties: Vec<u8> = (0..8192).flat_map(|_| frame(0, &[])).collect();
                let until = Instant::now() + Duration::from_secs(5);
                while Instant::now() < until {
                    if client_w.write_all(&empties).await.is_err() {
                        // The client gave up on the connection. What it sent before it did
                        // still reaches the broker, as it would through a real network: the
                        // forwarder reads on to the client's close (bounded), not cut off.
                        drop(client_w);
                        let mut to_broker = to_broker;
                        if tokio::time::timeout(Duration::from_secs(5), &mut to_broker)
                            .await
                            .is_err()
                        {
                            to_broker.abort();
                        }
                        return;
                    }
                }
            }
            Fault::EndSession if forwarding => {
                forwarding = false;
                upstream.once.send_replace(Fault::None);
                let end = End {
                    error: Some(definitions::Error::new(
                        AmqpError::InternalError,
                        Some("the proxy ended the session".into()),
                        None,
                    )),
                };
                let _ = client_w
                    .write_all(&frame(0, &serde_amqp::to_vec(&end).unwrap()))
                    .await;
            }
            Fault::DetachLink if forwarding => {
                forwarding = false;
                upstream.once.send_replace(Fault::None);
                let Some(handle) = topic_handle else { continue };
                let detach = Detach {
                    handle: Handle(handle),
                    closed: true,
                    error: Some(definitions::Error::new(
                        LinkError::DetachForced,
                        Some("the proxy detached the link".into()),
                        None,
                    )),
                };
                let _ = client_w
                    .write_all(&frame(0, &serde_amqp::to_vec(&detach).unwrap()))
                    .await;
            }
            Fault::CreditFlood(n) => {
                rx.borrow_and_update();
                let Some(handle) = cbs_handle else { continue };
                for from in (0..n).step_by(1000) {
                    let batch = transfers(handle, from..n.min(from + 1000));
                    if client_w.write_all(&batch).await.is_err() {
                        break 'conn;
                    }
                }
                // Once: forward as before until told again.
                let _ = rx.borrow_and_update();
            }
            Fault::LinkFlood(n) => {
                let Some(handle) = topic_handle else { continue };
                upstream.once.send_replace(Fault::None);
                rx.borrow_and_update();
                for from in (0..n).step_by(1000) {
                    let batch = transfers(handle, from..n.min(from + 1000));
                    if client_w.write_all(&batch).await.is_err() {
                        break 'conn;
                    }
                }
            }
            Fault::Silent => break,
            _ => {}
        }
    }
    to_broker.abort();
}
