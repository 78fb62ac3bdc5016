//! Clients of the emulator that open a connection and then go silent: closed at the idle
//! timeout and counted, while a client that sends heartbeats at the advertised period stays.

use std::sync::Arc;
use std::time::Duration;

use fe2o3_amqp::types::performatives::Open;
use fe2o3_amqp::types::primitives::Symbol;
use fe2o3_amqp::types::sasl::SaslInit;
use hubload_servicebus::emulator::EmulatorConfig;
use hubload_servicebus::{SbSender, SendOutcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::lateness::Lateness;
use super::{closed_after, config, emulator, eventually, local, sends};

/// One frame of `kind` (0 AMQP, 1 SASL) on channel 0 around an encoded performative.
fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut f = (8 + body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(&[2, kind, 0, 0]);
    f.extend_from_slice(body);
    f
}

/// The body of the next frame on `s` (the 8-byte frame header skipped).
async fn read_frame(s: &mut TcpStream) -> Vec<u8> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).await.unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(size) as usize - 4];
    s.read_exact(&mut rest).await.unwrap();
    rest.split_off(4)
}

/// Open an AMQP connection by hand (SASL ANONYMOUS, then `open`) and send nothing more: the
/// socket, when its `open` was written, and the `idle-time-out` (ms) the emulator advertised.
async fn open_then_silent(addr: std::net::SocketAddr) -> (TcpStream, Instant, Option<u32>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut header = [0u8; 8];
    s.write_all(b"AMQP\x03\x01\x00\x00").await.unwrap();
    s.read_exact(&mut header).await.unwrap();
    read_frame(&mut s).await; // sasl-mechanisms
    let init = SaslInit {
        mechanism: Symbol::from("ANONYMOUS"),
        initial_response: None,
        hostname: None,
    };
    s.write_all(&frame(1, &serde_amqp::to_vec(&init).unwrap()))
        .await
        .unwrap();
    read_frame(&mut s).await; // sasl-outcome
    s.write_all(b"AMQP\x00\x01\x00\x00").await.unwrap();
    let open = Open {
        container_id: "silent".into(),
        hostname: None,
        max_frame_size: Default::default(),
        channel_max: Default::default(),
        idle_time_out: None,
        outgoing_locales: None,
        incoming_locales: None,
        offered_capabilities: None,
        desired_capabilities: None,
        properties: None,
    };
    let opened = Instant::now();
    s.write_all(&frame(0, &serde_amqp::to_vec(&open).unwrap()))
        .await
        .unwrap();
    s.read_exact(&mut header).await.unwrap();
    let theirs: Open = serde_amqp::from_slice(&read_frame(&mut s).await).unwrap();
    (s, opened, theirs.idle_time_out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_closed_at_the_idle_timeout_and_active_ones_kept() {
    let idle = Duration::from_millis(300);
    for n in [1u64, 16] {
        let emu = emulator(EmulatorConfig {
            idle_timeout: idle,
            ..EmulatorConfig::default()
        })
        .await;
        // An active client first: hubload's sender, which sends heartbeats at the period
        // the emulator advertises.
        let cs = local(emu.addr().port());
        let sender = Arc::new(
            SbSender::connect(config(cs, Duration::from_secs(5)))
                .await
                .unwrap(),
        );
        assert_eq!(sender.prepare("t").await, SendOutcome::Accepted);
        let lateness = Lateness::watch();
        let mut silent = JoinSet::new();
        for _ in 0..n {
            let (s, opened, advertised) = open_then_silent(emu.addr()).await;
            assert_eq!(advertised, Some(150), "half the idle timeout is advertised");
            silent.spawn(closed_after(s, opened, Duration::from_secs(5)));
        }
        while let Some(took) = silent.join_next().await {
            let took = took.unwrap().expect("closed within 5 s");
            assert!(
                took >= idle && took <= lateness.bound(idle),
                "{n} silent: closed {took:?} after its open, idle timeout {idle:?}, bound {:?}",
                lateness.bound(idle)
            );
        }
        // The sender's connection was idle (but for heartbeats) as long as the silent ones,
        // and more: it is still open, and sends on it.
        let got = sends(&sender, "t", 4).await;
        assert!(
            got.iter().all(|(o, _)| *o == SendOutcome::Accepted),
            "{got:?}"
        );
        // The emulator counts a connection just after closing it: wait for the count.
        assert!(eventually(|| emu.counts().idle_timeouts == n).await);
        let c = emu.counts();
        assert_eq!(
            (c.idle_timeouts, c.connections, c.accepted),
            (n, n + 1, 4),
            "{c:?}"
        );
        assert_eq!(sender.reconnects(), 0, "the active connection was reopened");
        emu.shutdown().await;
    }
}
