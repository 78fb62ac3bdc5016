//! A local Service Bus stand-in that Microsoft's own SDKs accept, speaking real AMQP 1.0
//! (fe2o3-amqp's acceptor): its configuration, shared state, counts and handle. The entity
//! model is in `namespace` and `store`, the AMQP nodes in `conn`, `cbs`, `inbound`,
//! `outbound` and `management`, throttling in `tier`.
//!
//! Generic brokers cannot stand in: they do not answer CBS (docs/protocol.md §6).

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
pub mod store;
pub mod tier;
pub mod ws;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fe2o3_amqp::acceptor::{ConnectionAcceptor, SaslAnonymousMechanism};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::connection_string::ConnectionString;
use config_file::Declared;
use namespace::Namespace;
use store::{EntityProps, StoreStats};
use tier::{Budget, Tier};

/// Key name the emulator accepts unless told otherwise.
pub const DEV_KEY_NAME: &str = "RootManageSharedAccessKey";
/// A development key for tests (never a real secret).
pub const DEV_KEY: &str = "aHVibG9hZC1lbXVsYXRvci1kZXYta2V5LW5vdC1hLXNlY3JldA==";
/// Largest message the emulator's links accept, bytes (the Standard tier's 256 KiB).
pub const MAX_MESSAGE_SIZE: u64 = 256 * 1024;

/// How the emulator behaves.
#[derive(Clone)]
pub struct EmulatorConfig {
    /// The SAS key name tokens must carry (`skn`).
    pub key_name: String,
    /// The SAS key tokens must be signed with.
    pub key: String,
    /// Reject every Nth transfer (counted over all topics, from 1) with `server-busy`.
    pub throttle_every: Option<u64>,
    /// Reject this fraction (0–1) of the other transfers with `server-busy`, chosen by a hash
    /// of (`seed`, transfer number), so a run is repeatable.
    pub throttle_ratio: f64,
    /// Delay before each settlement (deliveries still pipeline).
    pub latency: Duration,
    /// Seed of the throttling hash.
    pub seed: u64,
    /// Entities declared up front (from a `Config.json`).
    pub declared: Option<Declared>,
    /// Refuse undeclared entities with `amqp:not-found` (otherwise they are made on first use).
    pub strict: bool,
    /// The tier's throttling budget.
    pub tier: Tier,
    /// Settings of entities made on first use (Azure's defaults unless set).
    pub entity_defaults: EntityProps,
    /// Concurrent receive requests allowed per entity, a topic's subscriptions summed
    /// (Azure's 5,000 unless set; smaller for tests).
    pub receive_limit: usize,
    /// Bound on a new connection's handshake: the protocol headers, SASL and `open`. A
    /// client that has not finished by then is closed and counted
    /// (`handshake_timeouts`).
    pub handshake_timeout: Duration,
    /// Connections open at once, handshaking ones included; one more is closed as soon as
    /// it is accepted and counted (`over_limit`).
    pub max_connections: usize,
}

/// [`EmulatorConfig::handshake_timeout`] unless set.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// [`EmulatorConfig::max_connections`] unless set.
pub const MAX_CONNECTIONS: usize = 10_000;

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            key_name: DEV_KEY_NAME.to_string(),
            key: DEV_KEY.to_string(),
            throttle_every: None,
            throttle_ratio: 0.0,
            latency: Duration::ZERO,
            seed: 0,
            declared: None,
            strict: false,
            tier: Tier::Unlimited,
            entity_defaults: EntityProps::default(),
            receive_limit: namespace::MAX_RECEIVERS_PER_ENTITY,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

impl std::fmt::Debug for EmulatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatorConfig")
            .field("key_name", &self.key_name)
            .field("key", &"<redacted>")
            .field("throttle_every", &self.throttle_every)
            .field("throttle_ratio", &self.throttle_ratio)
            .field("latency", &self.latency)
            .field("seed", &self.seed)
            .field("declared", &self.declared)
            .field("strict", &self.strict)
            .field("tier", &self.tier)
            .field("entity_defaults", &self.entity_defaults)
            .field("receive_limit", &self.receive_limit)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

/// What the emulator has seen: the server-side truth tests reconcile against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmulatorCounts {
    /// Messages accepted, per entity (the address path after the host); a batch transfer
    /// counts each of its messages.
    pub accepted_per_topic: BTreeMap<String, u64>,
    /// Messages accepted (a batch counts each of its messages).
    pub accepted: u64,
    /// Accepted transfers that carried a batch (message format 0x80013700).
    pub batches: u64,
    /// Transfers rejected with `com.microsoft:server-busy`, and management requests
    /// answered 503 for the same reason.
    pub throttled: u64,
    /// Transfers rejected as malformed (`amqp:decode-error`).
    pub rejected: u64,
    /// Undeclared entities named in strict mode: CBS put-tokens answered 404, and links
    /// refused at attach with `amqp:not-found`.
    pub not_found: u64,
    /// `amqp:resource-limit-exceeded` (Azure's quotas): links refused at attach (2,000
    /// subscriptions per topic), and receive requests rejected over the per-entity quota
    /// (their link detached).
    pub limit_exceeded: u64,
    /// `$management` requests.
    pub management: u64,
    /// Dispositions that arrived after their lock had run out.
    pub lock_lost: u64,
    /// Per queue or subscription (`topic/Subscriptions/name`): what was stored, delivered
    /// and settled there.
    pub entities: BTreeMap<String, StoreStats>,
    /// Transfers rejected, or receive links refused, with `amqp:unauthorized-access` (no
    /// valid token for the address).
    pub unauthorized: u64,
    /// CBS put-tokens answered 202.
    pub cbs_ok: u64,
    /// CBS put-tokens answered 401.
    pub cbs_denied: u64,
    /// AMQP connections accepted (their handshake finished).
    pub connections: u64,
    /// Connections closed because their handshake (headers, SASL, `open`) did not finish
    /// within the handshake timeout.
    pub handshake_timeouts: u64,
    /// Connections whose handshake failed (a wrong protocol header, a malformed or
    /// oversized frame, the client closing).
    pub handshake_failures: u64,
    /// Connections closed at once because `max_connections` were open.
    pub over_limit: u64,
    /// Connections that ended in an error after their handshake (a malformed or oversized
    /// frame, a session ended for a protocol error, a peer that ignored link credit).
    pub protocol_errors: u64,
    /// Requests answered by the administration API (docs/servicebus-admin.md), any status.
    pub admin_requests: u64,
    /// Queues, topics and subscriptions created through the administration API.
    pub entity_creates: u64,
    /// Queues, topics and subscriptions deleted through the administration API.
    pub entity_deletes: u64,
}

/// State shared by every connection task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: EmulatorConfig,
    pub counts: Mutex<EmulatorCounts>,
    /// Transfers that reached the throttling decision, numbered from 1.
    pub seq: AtomicU64,
    /// Bumped to detach every topic link with `amqp:link:detach-forced`.
    pub link_drops: watch::Sender<u64>,
    /// Bumped after an entity is deleted: links whose entity is gone detach with
    /// `amqp:not-found`.
    pub deletions: watch::Sender<u64>,
    /// The entities.
    pub ns: Namespace,
    /// The tier's budget.
    pub budget: Budget,
}

impl Shared {
    /// The state of a new emulator, with the declared entities made.
    pub fn new(cfg: EmulatorConfig) -> Result<Self, String> {
        let mut ns = Namespace::new(cfg.strict, cfg.entity_defaults.clone());
        ns.receive_limit = cfg.receive_limit;
        if let Some(d) = &cfg.declared {
            for q in &d.queues {
                ns.declare_queue(&q.name, q.props.clone());
            }
            for t in &d.topics {
                let topic = ns.declare_topic(&t.name);
                for s in &t.subscriptions {
                    ns.declare_subscription(&topic, &s.name, s.props.clone())
                        .map_err(|e| format!("{e:?}"))?;
                }
            }
        }
        Ok(Shared {
            budget: Budget::new(cfg.tier),
            ns,
            cfg,
            counts: Mutex::new(EmulatorCounts::default()),
            seq: AtomicU64::new(0),
            link_drops: watch::channel(0).0,
            deletions: watch::channel(0).0,
        })
    }

    /// Whether transfer number `n` (from 1) is throttled.
    pub fn throttle(&self, n: u64) -> bool {
        if let Some(k) = self.cfg.throttle_every {
            if k > 0 && n % k == 0 {
                return true;
            }
        }
        self.cfg.throttle_ratio > 0.0 && unit_hash(self.cfg.seed, n) < self.cfg.throttle_ratio
    }

    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn count(&self, f: impl FnOnce(&mut EmulatorCounts)) {
        f(&mut self.counts.lock().expect("counts lock"));
    }
}

/// SplitMix64's finaliser of (seed, n), mapped to [0, 1).
fn unit_hash(seed: u64, n: u64) -> f64 {
    hubload_rng::unit(hubload_rng::mix(seed ^ n.wrapping_mul(hubload_rng::GAMMA)))
}

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
    let acceptor = Arc::new(amqp_acceptor());
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

/// The AMQP connection acceptor of every port: SASL ANONYMOUS, authorisation by CBS.
fn amqp_acceptor() -> ConnectionAcceptor<(), SaslAnonymousMechanism> {
    ConnectionAcceptor::builder()
        .container_id("hubload-servicebus-emulator")
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
