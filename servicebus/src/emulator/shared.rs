//! The emulator's shared state and its settings: what every connection task reads
//! (`Shared`), the configuration it was started with and the counts it keeps.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use super::config_file::Declared;
use super::namespace::{self, Namespace};
use super::rights::Rights;
use super::store::{EntityProps, StoreStats};
use super::tier::{Budget, Tier};

/// Key name the emulator accepts unless told otherwise.
pub const DEV_KEY_NAME: &str = "RootManageSharedAccessKey";
/// A development key for tests (never a real secret).
pub const DEV_KEY: &str = "aHVibG9hZC1lbXVsYXRvci1kZXYta2V5LW5vdC1hLXNlY3JldA==";
/// Largest message the emulator's links accept, bytes, unless it plays Premium (the Basic
/// and Standard tiers' 256 KiB; [`Tier::max_message_size`]).
pub const MAX_MESSAGE_SIZE: u64 = super::tier::STANDARD_MAX_MESSAGE_SIZE;

/// How the emulator behaves.
#[derive(Clone)]
pub struct EmulatorConfig {
    /// The SAS key name tokens must carry (`skn`).
    pub key_name: String,
    /// The SAS key tokens must be signed with.
    pub key: String,
    /// What the key's policy may do ([`Rights::ALL`] unless set): a link or request that
    /// needs a right it lacks is refused with `amqp:unauthorized-access` (401 on the
    /// administration API).
    pub key_rights: Rights,
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
    /// A connection that sends no frame for this long once open is closed and counted
    /// (`idle_timeouts`); half of it is advertised as the `open`'s `idle-time-out`, so a
    /// client that sends heartbeats as AMQP asks is never cut off.
    pub idle_timeout: Duration,
}

/// [`EmulatorConfig::handshake_timeout`] unless set.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// [`EmulatorConfig::idle_timeout`] unless set.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// [`EmulatorConfig::max_connections`] unless set.
pub const MAX_CONNECTIONS: usize = 10_000;

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            key_name: DEV_KEY_NAME.to_string(),
            key: DEV_KEY.to_string(),
            key_rights: Rights::ALL,
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
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for EmulatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatorConfig")
            .field("key_name", &self.key_name)
            .field("key", &"<redacted>")
            .field("key_rights", &self.key_rights)
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
            .field("idle_timeout", &self.idle_timeout)
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
    /// Connections closed because they sent no frame for the idle timeout once open.
    pub idle_timeouts: u64,
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
