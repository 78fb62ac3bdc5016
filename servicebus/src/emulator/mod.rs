//! A local Service Bus stand-in that Microsoft's own SDKs accept, speaking real AMQP 1.0
//! (fe2o3-amqp's acceptor): its handle and accept loop. The configuration, shared state and
//! counts are in `shared`, the entity model in `namespace` and `store`, the AMQP nodes in
//! `conn`, `cbs`, `inbound`, `outbound` and `management`, throttling in `tier`.
//!
//! Generic brokers cannot stand in: they do not answer CBS (docs/protocol.md §6).

pub mod admin;
mod amqp_errors;
pub(crate) mod cbs;
pub mod cli;
pub(crate) mod clock;
mod config_error;
pub mod config_file;
mod conn;
mod deleted;
pub mod filter;
pub(crate) mod inbound;
mod management;
pub mod namespace;
mod outbound;
pub mod rights;
mod shared;
pub mod store;
pub mod tier;
pub mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fe2o3_amqp::acceptor::{ConnectionAcceptor, SaslAnonymousMechanism};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::connection_string::ConnectionString;

pub(crate) use shared::Shared;
pub use shared::{
    EmulatorConfig, EmulatorCounts, DEV_KEY, DEV_KEY_NAME, HANDSHAKE_TIMEOUT, MAX_CONNECTIONS,
    MAX_MESSAGE_SIZE,
};

/// The emulator: [`Emulator::start`] it on a bound listener.
#[derive(Debug)]
pub struct Emulator;

/// A running emulator.
#[derive(Debug)]
pub struct EmulatorHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    drop_conns: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Emulator {
    /// Serve AMQP on `listener` until [`EmulatorHandle::shutdown`].
    pub async fn start(
        listener: TcpListener,
        cfg: EmulatorConfig,
    ) -> std::io::Result<EmulatorHandle> {
        if !(0.0..=1.0).contains(&cfg.throttle_ratio) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "throttle_ratio must be between 0 and 1",
            ));
        }
        let addr = listener.local_addr()?;
        let shared = Arc::new(
            Shared::new(cfg)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?,
        );
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (drop_conns, drop_rx) = watch::channel(0u64);
        let task = tokio::spawn(accept_loop(listener, shared.clone(), shutdown_rx, drop_rx));
        Ok(EmulatorHandle {
            addr,
            shared,
            shutdown,
            drop_conns,
            task,
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    drop_rx: watch::Receiver<u64>,
) {
    let acceptor = Arc::new(amqp_acceptor(shared.cfg.idle_timeout));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors (EMFILE), say: accepting again at once would spin.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                if conns.len() >= shared.cfg.max_connections {
                    shared.count(|c| c.over_limit += 1);
                    drop(stream);
                    continue;
                }
                let _ = stream.set_nodelay(true);
                conns.spawn(conn::serve(stream, acceptor.clone(), shared.clone(), drop_rx.clone()));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// The AMQP connection acceptor of every port: SASL ANONYMOUS, authorisation by CBS; a
/// connection silent for `idle` is closed (the vendored fe2o3 advertises half of it).
fn amqp_acceptor(idle: Duration) -> ConnectionAcceptor<(), SaslAnonymousMechanism> {
    let idle_ms = u32::try_from(idle.as_millis()).unwrap_or(u32::MAX);
    ConnectionAcceptor::builder()
        .container_id("hubload-servicebus-emulator")
        .idle_time_out(idle_ms)
        .sasl_acceptor(SaslAnonymousMechanism::new())
        .build()
}

impl EmulatorHandle {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A connection string for this emulator (`UseDevelopmentEmulator=true`, its own key).
    pub fn connection_string(&self) -> String {
        self.connection_string_parsed().expose()
    }

    /// [`Self::connection_string`], parsed.
    pub fn connection_string_parsed(&self) -> ConnectionString {
        ConnectionString::new(
            self.addr.ip().to_string(),
            Some(self.addr.port()),
            self.shared.cfg.key_name.clone(),
            self.shared.cfg.key.clone(),
            true,
        )
    }

    /// The shared state, for the administration API.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A snapshot of the counts, with every queue's and subscription's figures.
    pub fn counts(&self) -> EmulatorCounts {
        let mut c = self.shared.counts.lock().expect("counts lock").clone();
        let now = clock::unix_ms();
        for s in self.shared.ns.stores() {
            c.entities.insert(s.path.clone(), s.stats(now));
        }
        c
    }

    /// Concurrent receive requests the emulator counts now on a queue or topic (a topic's
    /// subscriptions summed): receiver links with credit outstanding. `None`: no such entity.
    pub fn receive_requests(&self, entity: &str) -> Option<usize> {
        self.shared.ns.receive_requests(entity)
    }

    /// Close every open connection with `amqp:connection:forced` (as Azure does on
    /// maintenance); new connections are still accepted. For reconnect tests.
    pub fn drop_connections(&self) {
        self.drop_conns.send_modify(|n| *n += 1);
    }

    /// Detach every open topic link with `amqp:link:detach-forced`; connections stay open.
    /// For link re-attach tests.
    pub fn drop_links(&self) {
        self.shared.link_drops.send_modify(|n| *n += 1);
    }

    /// Stop accepting and drop every connection (its listener closes soon after), keeping the
    /// counts readable: a broker that went away, for restart tests.
    pub fn stop(&self) {
        let _ = self.shutdown.send(true);
    }

    /// Stop accepting, drop every connection and wait for the tasks to end.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(every: Option<u64>, ratio: f64, seed: u64) -> Shared {
        Shared::new(EmulatorConfig {
            throttle_every: every,
            throttle_ratio: ratio,
            seed,
            ..EmulatorConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn throttle_every_nth() {
        let s = shared(Some(10), 0.0, 0);
        let hits: Vec<u64> = (1..=35).filter(|&n| s.throttle(n)).collect();
        assert_eq!(hits, vec![10, 20, 30]);
        assert!(!(1..=100).any(|n| shared(None, 0.0, 0).throttle(n)));
    }

    #[test]
    fn throttle_ratio_is_seeded_and_close() {
        let a = shared(None, 0.25, 7);
        let b = shared(None, 0.25, 7);
        let c = shared(None, 0.25, 8);
        let pick = |s: &Shared| (1..=20_000).filter(|&n| s.throttle(n)).collect::<Vec<_>>();
        let (pa, pb, pc) = (pick(&a), pick(&b), pick(&c));
        assert_eq!(pa, pb);
        assert_ne!(pa, pc);
        // 20,000 draws at p = 0.25: sd ≈ 61, so ±600 is a ~10 sd margin.
        assert!((4_400..=5_600).contains(&pa.len()), "{}", pa.len());
        assert_eq!(pick(&shared(None, 1.0, 1)).len(), 20_000);
    }

    #[test]
    fn debug_redacts_key() {
        let d = format!("{:?}", EmulatorConfig::default());
        assert!(!d.contains(DEV_KEY));
    }
}
