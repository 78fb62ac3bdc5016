//! [`SbReceiver`]: the shared Service Bus receive client: one subscription
//! (`<topic>/Subscriptions/<name>`) in peek-lock mode, on its own AMQP connection.
//!
//! It connects like [`crate::SbSender`], attaches with `rcv-settle-mode = second` and the
//! configured credit, and hands out [`Received`] messages to complete, abandon or dead-letter.
//! A lost link or connection is re-attached on the next call, within its deadline, and counted
//! as a restart; every failure is a [`ReceiveError`] (docs/servicebus-receiver.md).

mod message;
mod settle;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fe2o3_amqp::link::receiver::CreditMode;
use fe2o3_amqp::link::{LinkStateError, ReceiverAttachError, RecvError};
use fe2o3_amqp::types::definitions::ReceiverSettleMode;
use fe2o3_amqp::types::messaging::Body;
use fe2o3_amqp::types::primitives::Value;
use fe2o3_amqp::Receiver;
use tokio::time::{timeout_at, Instant};

use crate::connection_string::ConnectionString;
use crate::error::SbError;
use crate::outcome::{classify_condition, condition_str, SendOutcome};
use crate::sender::conn::{link_state, refresh_loop, PooledConn, Shared};
use crate::sender::describe::one_line;
pub use message::Received;

/// How to connect, which subscription, and how long each step may take.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// Where to connect, and the SAS key (which needs Listen rights).
    pub connection: ConnectionString,
    /// The topic.
    pub topic: String,
    /// The subscription of `topic` to receive from.
    pub subscription: String,
    /// Link credit: how many messages the broker may send ahead of `receive` calls
    /// (prefetch). Refilled to this when half of it has been settled. ≥ 1. Each prefetched
    /// message is locked from the moment it is sent, so a large credit on a slow consumer
    /// spends lock time in the buffer (Microsoft's guidance: small for latency, larger for
    /// throughput).
    pub credit: u32,
    /// Bound on opening the connection, a CBS put-token or the link attach.
    pub connect_timeout: Duration,
    /// Bound on one settlement (complete, abandon, dead-letter).
    pub settle_timeout: Duration,
    /// Lifetime of each SAS token (≥ 1 s); tokens are put again every `token_ttl / 2`.
    pub token_ttl: Duration,
    /// Receive from the subscription's dead-letter sub-queue
    /// (`<topic>/Subscriptions/<name>/$DeadLetterQueue`) instead of the subscription.
    pub dead_letter: bool,
}

impl ReceiverConfig {
    /// A configuration with the defaults: credit 16, connect 10 s, settle 5 s, tokens 1 h.
    pub fn new(connection: ConnectionString, topic: &str, subscription: &str) -> Self {
        ReceiverConfig {
            connection,
            topic: topic.to_string(),
            subscription: subscription.to_string(),
            credit: 16,
            connect_timeout: Duration::from_secs(10),
            settle_timeout: Duration::from_secs(5),
            token_ttl: Duration::from_secs(3600),
            dead_letter: false,
        }
    }

    /// The entity path of the subscription, `<topic>/Subscriptions/<name>`, with
    /// `/$DeadLetterQueue` after it for the dead-letter sub-queue (Azure's path form).
    pub fn entity(&self) -> String {
        let dlq = if self.dead_letter {
            "/$DeadLetterQueue"
        } else {
            ""
        };
        format!("{}/Subscriptions/{}{dlq}", self.topic, self.subscription)
    }
}

/// Why a receive or settlement did not happen. One line; never contains the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiveError {
    /// The subscription (or its topic) does not exist: `amqp:not-found`, or CBS 404.
    #[error("Service Bus entity not found: {0}")]
    NotFound(String),
    /// The token was refused (wrong key, or no Listen right).
    #[error("Service Bus refused the SAS token for {0}")]
    Unauthorized(String),
    /// The broker refused the link with `com.microsoft:server-busy`.
    #[error("Service Bus is busy (server-busy)")]
    ServerBusy,
    /// The connection could not be opened, or the link not attached, within the deadline.
    #[error("cannot reach Service Bus: {0}")]
    Connect(String),
    /// The link the message came on is gone (lost, or re-attached since): the broker keeps
    /// the message locked until its lock runs out, then delivers it again.
    #[error("the message's link is gone; the broker delivers it again when its lock expires")]
    LinkLost,
    /// The session (or connection) ended after the settlement was sent and before the broker
    /// confirmed it: the broker may have applied it, or delivers the message again when its
    /// lock expires.
    #[error("the session ended before the broker confirmed the settlement: {0}")]
    SessionEnded(String),
    /// The broker answered the settlement with `com.microsoft:message-lock-lost`: the lock had
    /// run out, and the message is (or will be) delivered again.
    #[error("the broker refused the settlement: the message's lock was lost")]
    LockLost,
    /// The broker settled the delivery with another outcome than the one asked for (a
    /// `rejected` with its condition, or `released` / `modified` for a completion).
    #[error("the broker settled the message otherwise: {0}")]
    Rejected(String),
    /// The broker did not confirm the settlement within the settle timeout.
    #[error("the broker did not confirm the settlement within the settle timeout")]
    Timeout,
    /// Any other refusal, with its AMQP condition.
    #[error("Service Bus refused the receive link: {0}")]
    Refused(String),
}

impl ReceiveError {
    fn of_outcome(o: SendOutcome, reason: String) -> ReceiveError {
        match o {
            SendOutcome::NotFound => ReceiveError::NotFound(reason),
            SendOutcome::Unauthorized => ReceiveError::Unauthorized(reason),
            SendOutcome::Throttled => ReceiveError::ServerBusy,
            SendOutcome::Rejected { condition } => ReceiveError::Refused(condition),
            _ => ReceiveError::Connect(reason),
        }
    }
}

/// The attached link and its generation (bumped by every attach).
#[derive(Debug, Default)]
struct Link {
    receiver: Option<Receiver>,
    generation: u64,
}

/// A peek-lock receiver on one subscription. Not shared: calls take `&mut self`, so one task
/// runs the receive loop and settles what it received.
#[derive(Debug)]
pub struct SbReceiver {
    shared: Arc<Shared>,
    cfg: ReceiverConfig,
    address: String,
    conn: Option<Arc<PooledConn>>,
    link: Link,
    restarts: u64,
    conn_ids: AtomicU64,
}

/// The condition of a remote detach or close over one of Azure's quotas.
fn quota_condition(e: &RecvError) -> Option<String> {
    use fe2o3_amqp::link::LinkStateError as L;
    let RecvError::LinkStateError(L::RemoteDetachedWithError(err) | L::RemoteClosedWithError(err)) =
        e
    else {
        return None;
    };
    let c = condition_str(&err.condition);
    (c == "amqp:resource-limit-exceeded").then_some(c)
}

impl SbReceiver {
    /// Open the connection and attach the receiver link, within `connect_timeout` each.
    /// Against the emulator (without `--strict`) the attach creates the subscription if it
    /// does not exist; Azure answers not-found, and the subscription must be created first
    /// (portal, ARM or the administration API).
    pub async fn connect(cfg: ReceiverConfig) -> Result<SbReceiver, SbError> {
        if cfg.credit == 0 {
            return Err(SbError::Config("receiver credit must be at least 1".into()));
        }
        if cfg.token_ttl < Duration::from_secs(1) {
            return Err(SbError::Config("token TTL must be at least 1 s".into()));
        }
        if cfg.connect_timeout.is_zero() || cfg.settle_timeout.is_zero() {
            return Err(SbError::Config("timeouts must be above zero".into()));
        }
        if cfg.topic.is_empty() || cfg.subscription.is_empty() {
            return Err(SbError::Config(
                "receiver topic and subscription must not be empty".into(),
            ));
        }
        let tls = if cfg.connection.uses_tls() {
            Some(crate::sender::tls_connector(&cfg.connection)?)
        } else {
            None
        };
        let address = cfg.connection.entity_address(&cfg.entity());
        let mut r = SbReceiver {
            shared: Arc::new(Shared {
                cs: cfg.connection.clone(),
                tls,
                connect_timeout: cfg.connect_timeout,
                token_ttl: cfg.token_ttl,
            }),
            address,
            cfg,
            conn: None,
            link: Link::default(),
            restarts: 0,
            conn_ids: AtomicU64::new(0),
        };
        let by = Instant::now() + r.cfg.connect_timeout * 2;
        let attached = match r.ensure_link(by).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(ReceiveError::Connect("connect timed out".into())),
            Err(e) => Err(e),
        };
        if let Err(e) = attached {
            let endpoint = format!("{}:{}", r.shared.cs.host, r.shared.cs.amqp_port());
            return Err(match e {
                ReceiveError::NotFound(audience) => SbError::NotFound { audience },
                ReceiveError::Unauthorized(audience) => SbError::Unauthorized {
                    audience,
                    status: 401,
                },
                ReceiveError::Connect(reason) => SbError::Connect { endpoint, reason },
                other => SbError::Amqp(other.to_string()),
            });
        }
        Ok(r)
    }

    /// The next message, waiting at most `wait` for one. `Ok(None)` when none came in
    /// time. A lost link or connection is re-attached (a restart) within the same `wait`;
    /// if that fails the error is returned and the next call tries again.
    pub async fn receive(&mut self, wait: Duration) -> Result<Option<Received>, ReceiveError> {
        let deadline = Instant::now() + wait;
        loop {
            if !self.ensure_link(deadline).await? {
                return Ok(None);
            }
            let conn = self.conn.clone().expect("attached above");
            let receiver = self.link.receiver.as_mut().expect("attached above");
            let got = tokio::select! {
                biased;
                r = timeout_at(deadline, receiver.recv::<Body<Value>>()) => r,
                _ = conn.stopped() => {
                    conn.mark_broken();
                    self.link.receiver = None;
                    continue;
                }
            };
            match got {
                Err(_) => return Ok(None),
                // Taken from the link's buffer after its session ended: it can no longer be
                // settled, and the broker delivers it again once its lock expires. Not handed
                // out (a caller would act on a message it cannot complete).
                Ok(Ok(_)) if conn.stop_now().is_some() => {
                    conn.mark_broken();
                    self.link.receiver = None;
                }
                Ok(Ok(delivery)) => {
                    let (info, msg) = delivery.into_parts();
                    return Ok(Some(Received::from_amqp(info, msg, self.link.generation)));
                }
                Ok(Err(e)) => {
                    tracing::debug!(
                        entity = %self.cfg.entity(),
                        "receive link lost: {}",
                        one_line(&e.to_string())
                    );
                    let link = self.link.receiver.take();
                    // The session (or the connection) may have stopped under the link, whether
                    // or not the link's error says so: its channel can close before the
                    // session has recorded why. Then the connection is replaced.
                    let session_stopped = matches!(
                        e,
                        RecvError::LinkStateError(LinkStateError::SessionStopped(_))
                    );
                    if session_stopped || conn.stop_now().is_some() {
                        conn.mark_broken();
                    } else if let Some(r) = link {
                        // Answer the broker's detach, so the session frees the link's handle:
                        // a link dropped without it leaves the next attach on this session
                        // hanging until the connect timeout.
                        let by = Instant::now() + Duration::from_millis(500);
                        let _ = timeout_at(by.min(deadline), r.close()).await;
                    }
                    // Over Azure's quota of concurrent receive requests the broker detaches
                    // the link with resource-limit-exceeded: said to the caller, as the SDKs
                    // raise it, rather than re-attached at once (the next call re-attaches).
                    if let Some(c) = quota_condition(&e) {
                        return Err(ReceiveError::Refused(c));
                    }
                    if Instant::now() >= deadline {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Whether the link is attached on a live connection, as far as this side knows: when it
    /// is not, the next [`Self::receive`] re-attaches first. A caller that may cancel a
    /// receive (to settle something meanwhile) lets one that re-attaches run to its end, as an
    /// attach cut off midway leaves the session unsure of the link.
    pub fn attached(&self) -> bool {
        self.link.receiver.is_some() && self.conn.as_ref().is_some_and(|c| !c.is_broken())
    }

    /// Link re-attaches and connection reopens after a loss, since [`Self::connect`].
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The subscription's entity path, `<topic>/Subscriptions/<name>`.
    pub fn entity(&self) -> String {
        self.cfg.entity()
    }

    /// Detach the link and close the connection, each step within a second. Messages
    /// received and not settled are delivered again when their locks expire.
    pub async fn close(mut self) {
        let t = Duration::from_secs(1);
        if let Some(r) = self.link.receiver.take() {
            let _ = tokio::time::timeout(t, r.close()).await;
        }
        if let Some(c) = self.conn.take() {
            c.mark_broken();
            c.close().await;
        }
    }

    /// A live connection and an attached link, (re)made within `deadline` and the connect
    /// timeout: `Ok(false)` when `deadline` came first (the next call starts again). Every
    /// attach after the first is a restart. A kept connection whose session turns out to have
    /// ended is replaced once within the same call, as a send replaces it.
    async fn ensure_link(&mut self, deadline: Instant) -> Result<bool, ReceiveError> {
        if self.attached() {
            return Ok(true);
        }
        let kept = self
            .conn
            .as_ref()
            .is_some_and(|c| c.stop_now().is_none() && !c.is_broken());
        match self.try_attach(deadline).await {
            Err(_) if kept && self.conn.as_ref().is_some_and(|c| c.is_broken()) => {
                self.try_attach(deadline).await
            }
            r => r,
        }
    }

    /// One try of [`Self::ensure_link`]: the kept connection if it is live, else a new one,
    /// and the link attached on it.
    async fn try_attach(&mut self, deadline: Instant) -> Result<bool, ReceiveError> {
        let connect_by = Instant::now() + self.cfg.connect_timeout;
        let by = deadline.min(connect_by);
        let live = self
            .conn
            .clone()
            .filter(|c| c.stop_now().is_none() && !c.is_broken());
        let conn = match live {
            Some(c) => c,
            None => {
                self.link.receiver = None;
                let id = self.conn_ids.fetch_add(1, Ordering::Relaxed);
                let opened = timeout_at(by, PooledConn::open(id, self.shared.clone())).await;
                let c = match opened {
                    Ok(Ok(c)) => c,
                    Ok(Err(f)) => return Err(ReceiveError::of_outcome(f.outcome, f.reason)),
                    Err(_) if by < connect_by => return Ok(false),
                    Err(_) => return Err(ReceiveError::Connect("connect timed out".into())),
                };
                if let Some(old) = self.conn.replace(c.clone()) {
                    old.mark_broken();
                    let _ = tokio::time::timeout(Duration::from_millis(100), old.close()).await;
                }
                tokio::spawn(refresh_loop(Arc::downgrade(&c), self.shared.token_ttl / 2));
                c
            }
        };
        // A session the broker ends meanwhile never answers the token put or the attach.
        let attached = tokio::select! {
            biased;
            r = timeout_at(by, self.attach(&conn)) => r,
            stopped = conn.stopped() => {
                conn.mark_broken();
                let why = match stopped {
                    SendOutcome::SessionEnded { condition } => {
                        format!("the broker ended the session ({condition})")
                    }
                    _ => "the connection closed".to_string(),
                };
                return Err(ReceiveError::Connect(format!(
                    "attach of the receive link to {} failed: {why}",
                    self.cfg.entity()
                )));
            }
        };
        match attached {
            Ok(Ok(r)) => {
                if self.link.generation > 0 {
                    self.restarts += 1;
                }
                self.link.generation += 1;
                self.link.receiver = Some(r);
                Ok(true)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => {
                // An attach cut off midway leaves the session in an unknown state.
                conn.mark_broken();
                if by < connect_by {
                    return Ok(false);
                }
                Err(ReceiveError::Connect(format!(
                    "attach of the receive link to {} (CBS put-token, then attach) was not answered within {:?}",
                    self.cfg.entity(),
                    self.cfg.connect_timeout
                )))
            }
        }
    }

    async fn attach(&self, conn: &PooledConn) -> Result<Receiver, ReceiveError> {
        conn.put_token(&self.address).await.map_err(|f| {
            // Not-found and unauthorized name the entity; anything else says what failed.
            let said = match f.outcome {
                SendOutcome::NotFound | SendOutcome::Unauthorized => self.address.clone(),
                _ => f.reason,
            };
            ReceiveError::of_outcome(f.outcome, said)
        })?;
        let name = format!(
            "hubload-rx-{}-{}-{}",
            std::process::id(),
            conn.id,
            self.link.generation
        );
        let mut session = conn.session.lock().await;
        Receiver::builder()
            .name(name)
            .source(self.address.clone())
            .receiver_settle_mode(ReceiverSettleMode::Second)
            .credit_mode(CreditMode::Auto(self.cfg.credit))
            .attach(&mut *session)
            .await
            .map_err(|e| match &e {
                ReceiverAttachError::RemoteClosedWithError(err) => {
                    let c = condition_str(&err.condition);
                    ReceiveError::of_outcome(classify_condition(&c), self.cfg.entity())
                }
                ReceiverAttachError::SessionStopped(reason) => {
                    conn.mark_broken();
                    let why = link_state(&LinkStateError::SessionStopped(reason.clone()));
                    ReceiveError::Connect(format!(
                        "attach of the receive link to {} failed: {why}",
                        self.cfg.entity()
                    ))
                }
                ReceiverAttachError::SessionNotMapped => {
                    conn.mark_broken();
                    ReceiveError::Connect(format!(
                        "attach of the receive link to {} failed: the session has ended",
                        self.cfg.entity()
                    ))
                }
                _ => ReceiveError::Connect(one_line(&e.to_string())),
            })
    }
}
