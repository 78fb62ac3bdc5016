//! [`SbSender`]: a pool of AMQP connections that sends messages to Service Bus topics.
//!
//! Each connection has one session, one CBS client and a sender link per topic, created
//! lazily and cached. Sends round-robin over the pool; many tasks share one link: the
//! transfer is written under the link's lock and its settlement awaited outside it, so
//! deliveries pipeline. A dropped link is re-attached and a dropped connection reopened on
//! the next send, inside that send's deadline; both count as reconnects. Per-send failures
//! are [`SendOutcome`]s.

pub(crate) mod conn;
pub(crate) mod describe;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use fe2o3_amqp::link::ErrorRecovery;
use tokio::sync::Mutex;
use tokio::time::{timeout, timeout_at, Instant};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::connection_string::ConnectionString;
use crate::error::SbError;
use crate::message::OutgoingMessage;
use crate::outcome::{classify_send_error, classify_settlement, SendOutcome, SendResult};
use conn::{refresh_loop, Fail, PooledConn, Shared};

/// How to connect and how long to wait.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Where to connect, and the SAS key.
    pub connection: ConnectionString,
    /// Connections in the pool (≥ 1).
    pub connections: usize,
    /// Bound on opening a connection, a CBS put-token or a link attach.
    pub connect_timeout: Duration,
    /// Bound on one send: reopening its connection when it broke (also bounded by
    /// `connect_timeout`), waiting for the link, writing the transfer and its settlement.
    pub send_timeout: Duration,
    /// Lifetime of each SAS token (≥ 1 s); tokens are put again every `token_ttl / 2`.
    pub token_ttl: Duration,
}

#[derive(Debug, Default)]
struct Slot {
    current: StdMutex<Option<Arc<PooledConn>>>,
    /// Serialises (re)opening so one failure does not open many connections.
    opening: Mutex<()>,
}

#[derive(Debug)]
struct Inner {
    shared: Arc<Shared>,
    slots: Vec<Slot>,
    next: AtomicUsize,
    reconnects: AtomicU64,
    conn_ids: AtomicU64,
    send_timeout: Duration,
}

/// A pooled Service Bus sender. Cheap to share by reference across tasks.
#[derive(Debug)]
pub struct SbSender {
    inner: Arc<Inner>,
}

/// The TLS connector for Azure (webpki roots, ring, and the connection's extra CA PEMs);
/// shared with the receiver.
pub fn tls_connector(cs: &ConnectionString) -> Result<TlsConnector, SbError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    crate::transport::add_pems(&mut roots, &cs.ca_pems).map_err(SbError::Config)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SbError::Config(format!("TLS set-up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

impl SbSender {
    /// Open every connection of the pool and validate the key with one CBS put-token
    /// (for `EntityPath`, or the namespace). A 401 is [`SbError::Unauthorized`].
    pub async fn connect(cfg: SenderConfig) -> Result<SbSender, SbError> {
        let sender = Self::open(cfg).await?;
        sender.validate().await?;
        Ok(sender)
    }

    /// Open every connection of the pool without validating the key: a wrong key then
    /// shows as [`SendOutcome::Unauthorized`] on every send. Prefer [`Self::connect`].
    pub async fn open(cfg: SenderConfig) -> Result<SbSender, SbError> {
        if cfg.connections == 0 {
            return Err(SbError::Config("connections must be at least 1".into()));
        }
        if cfg.token_ttl < Duration::from_secs(1) {
            return Err(SbError::Config("token TTL must be at least 1 s".into()));
        }
        if cfg.connect_timeout.is_zero() || cfg.send_timeout.is_zero() {
            return Err(SbError::Config("timeouts must be above zero".into()));
        }
        let tls = if cfg.connection.uses_tls() {
            Some(tls_connector(&cfg.connection)?)
        } else {
            None
        };
        let endpoint = format!("{}:{}", cfg.connection.host, cfg.connection.amqp_port());
        let inner = Arc::new(Inner {
            shared: Arc::new(Shared {
                cs: cfg.connection,
                tls,
                connect_timeout: cfg.connect_timeout,
                token_ttl: cfg.token_ttl,
            }),
            slots: (0..cfg.connections).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            reconnects: AtomicU64::new(0),
            conn_ids: AtomicU64::new(0),
            send_timeout: cfg.send_timeout,
        });
        for slot in &inner.slots {
            let opened = timeout(inner.shared.connect_timeout, inner.conn(slot)).await;
            let reason = match opened {
                Ok(Ok(_)) => continue,
                Ok(Err(f)) => f.reason,
                Err(_) => format!(
                    "the connection (TCP, AMQP open, session and CBS link) was not open within {:?}",
                    inner.shared.connect_timeout
                ),
            };
            return Err(SbError::Connect { endpoint, reason });
        }
        Ok(SbSender { inner })
    }

    /// One CBS put-token for the validation audience on the first connection.
    async fn validate(&self) -> Result<(), SbError> {
        let inner = &self.inner;
        let endpoint = format!("{}:{}", inner.shared.cs.host, inner.shared.cs.amqp_port());
        let first = inner.slots[0]
            .current
            .lock()
            .expect("slot lock")
            .clone()
            .expect("opened above");
        let audience = inner.shared.cs.validation_audience();
        if let Err(f) = first.put_token(&audience).await {
            return Err(match (f.outcome, f.status) {
                (SendOutcome::Unauthorized, status) => SbError::Unauthorized {
                    audience,
                    status: status.unwrap_or(401),
                },
                (SendOutcome::NotFound, _) => SbError::NotFound { audience },
                (SendOutcome::Connect, _) => SbError::Connect {
                    endpoint,
                    reason: f.reason,
                },
                _ => SbError::Amqp(f.reason),
            });
        }
        Ok(())
    }

    /// Send one message to `topic` and wait for its settlement. Never panics; every failure
    /// is a classified [`SendOutcome`].
    pub async fn send(&self, topic: &str, msg: OutgoingMessage<'_>) -> SendResult {
        let inner = &self.inner;
        let fail = |outcome| SendResult {
            outcome,
            bytes_sent: 0,
        };
        // One deadline for the whole send: a connection reopened here is reopened inside it.
        let deadline = Instant::now() + inner.send_timeout;
        let slot = &inner.slots[inner.next.fetch_add(1, Ordering::Relaxed) % inner.slots.len()];
        let open_by = deadline.min(Instant::now() + inner.shared.connect_timeout);
        let conn = match timeout_at(open_by, inner.conn(slot)).await {
            Ok(Ok(c)) => c,
            Ok(Err(f)) => return fail(f.outcome),
            Err(_) => return fail(SendOutcome::ConnectTimeout),
        };
        let link = conn.link_slot(topic);
        let Ok(mut guard) = timeout_at(deadline, link.lock()).await else {
            return fail(SendOutcome::Timeout);
        };
        if let Err(f) = inner
            .ensure_link(&conn, &mut guard, topic, Some(deadline))
            .await
        {
            return fail(f.outcome);
        }
        let generation = guard.generation;
        let message = msg.to_amqp();
        let sender = guard.sender.as_mut().expect("attached above");
        let written = match timeout_at(deadline, sender.send_batchable(message)).await {
            Err(_) => return fail(SendOutcome::Timeout),
            Ok(Err(e)) => {
                let outcome = classify_send_error(&e);
                drop_broken(&conn, &mut guard, e.recovery());
                return fail(outcome);
            }
            Ok(Ok(fut)) => fut,
        };
        drop(guard);
        let bytes_sent = msg.body.len() as u64;
        let settled = tokio::select! {
            biased;
            r = timeout_at(deadline, written) => r,
            stopped = conn.stopped() => {
                conn.mark_broken();
                // Within the deadline: a link held by another send (attaching, say) is left
                // to that send, which finds the connection broken itself.
                if let Ok(mut guard) = timeout_at(deadline, link.lock()).await {
                    if guard.generation == generation {
                        guard.sender = None;
                    }
                }
                return SendResult {
                    outcome: stopped,
                    bytes_sent: msg.body.len() as u64,
                };
            }
        };
        let outcome = match settled {
            Err(_) => SendOutcome::Timeout,
            Ok(Ok(settled)) => classify_settlement(&settled),
            Ok(Err(e)) => {
                let outcome = classify_send_error(&e);
                // Another send may already have replaced the link; one holding it past the
                // deadline handles it itself.
                if let Ok(mut guard) = timeout_at(deadline, link.lock()).await {
                    if guard.generation == generation {
                        drop_broken(&conn, &mut guard, e.recovery());
                    }
                }
                outcome
            }
        };
        SendResult {
            outcome,
            bytes_sent,
        }
    }

    /// Open `topic`'s sender link (token put, link attached) on every pooled connection, so
    /// the first sends do not pay for it. `Accepted` when all are ready, else the first
    /// failure's class.
    pub async fn prepare(&self, topic: &str) -> SendOutcome {
        match self.prepare_why(topic).await {
            Ok(()) => SendOutcome::Accepted,
            Err(f) => f.0,
        }
    }

    /// [`Self::prepare`], with a one-line sentence saying what failed (the connection, the
    /// CBS put-token or the attach) and why.
    pub async fn prepare_why(&self, topic: &str) -> Result<(), (SendOutcome, String)> {
        let inner = &self.inner;
        let limit = inner.shared.connect_timeout;
        for slot in &inner.slots {
            let conn = match timeout(limit, inner.conn(slot)).await {
                Ok(Ok(c)) => c,
                Ok(Err(f)) => return Err((f.outcome, f.reason)),
                Err(_) => {
                    let why = format!("the connection was not open within {limit:?}");
                    return Err((SendOutcome::ConnectTimeout, why));
                }
            };
            let link = conn.link_slot(topic);
            let mut guard = link.lock().await;
            inner
                .ensure_link(&conn, &mut guard, topic, None)
                .await
                .map_err(|f| (f.outcome, f.reason))?;
        }
        Ok(())
    }

    /// The largest message the broker takes on `topic`'s link (the `max-message-size` of its
    /// attach: 256 KiB on Basic and Standard, up to 100 MiB on Premium), once
    /// [`Self::prepare`] attached it; `None` before, or when the broker sets no limit.
    pub async fn max_message_size(&self, topic: &str) -> Option<u64> {
        let conn = self.inner.slots[0]
            .current
            .lock()
            .expect("slot lock")
            .clone()?;
        let link = conn.link_slot(topic);
        let guard = link.lock().await;
        guard.sender.as_ref().and_then(|s| s.max_message_size())
    }

    /// Links re-attached plus connections reopened after a drop.
    pub fn reconnects(&self) -> u64 {
        self.inner.reconnects.load(Ordering::Relaxed)
    }

    /// CBS put-tokens done by the connections currently in the pool (first puts and
    /// refreshes).
    pub fn token_puts(&self) -> u64 {
        self.inner
            .slots
            .iter()
            .filter_map(|s| s.current.lock().expect("slot lock").clone())
            .map(|c| c.puts.load(Ordering::Relaxed))
            .sum()
    }

    /// Close every connection (each step bounded to a second).
    pub async fn close(self) {
        for slot in &self.inner.slots {
            let c = slot.current.lock().expect("slot lock").take();
            if let Some(c) = c {
                c.mark_broken();
                c.close().await;
            }
        }
    }
}

/// After a failed send, forget the link (and the connection if its session stopped).
fn drop_broken(conn: &PooledConn, guard: &mut conn::LinkState, recovery: ErrorRecovery) {
    match recovery {
        ErrorRecovery::UseLink => {}
        ErrorRecovery::ReconnectSession | ErrorRecovery::ReconnectConnection => {
            guard.sender = None;
            conn.mark_broken();
        }
        _ => guard.sender = None,
    }
}

impl Inner {
    /// Attach the topic's link if it has none (a re-attach counts as a reconnect). An attach
    /// is bounded as a connect is, and never past a send's `deadline`: one cut off by the
    /// deadline is the send's timeout, and the next send attaches again.
    async fn ensure_link(
        &self,
        conn: &PooledConn,
        guard: &mut conn::LinkState,
        topic: &str,
        deadline: Option<Instant>,
    ) -> Result<(), Fail> {
        if guard.sender.is_some() {
            return Ok(());
        }
        let connect_by = Instant::now() + self.shared.connect_timeout;
        let by = deadline.map_or(connect_by, |d| d.min(connect_by));
        // A connection or session the broker ended (no send has seen it yet) never answers
        // the token put or the attach: without the race the send waited out its timeout.
        let attached = tokio::select! {
            biased;
            r = timeout_at(by, conn.attach(topic)) => r,
            stopped = conn.stopped() => {
                conn.mark_broken();
                let why = format!("attach of the sender link to {topic} failed: {}", match &stopped {
                    SendOutcome::SessionEnded { condition } => format!("the broker ended the session ({condition})"),
                    _ => "the connection closed".to_string(),
                });
                return Err(Fail { outcome: stopped, reason: why, status: None });
            }
        };
        match attached {
            Ok(Ok(s)) => {
                guard.sender = Some(s);
                if guard.generation > 0 {
                    self.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                guard.generation += 1;
                Ok(())
            }
            Ok(Err(f)) => Err(f),
            Err(_) if by < connect_by => Err(Fail {
                outcome: SendOutcome::Timeout,
                reason: format!("attach of the sender link to {topic} did not finish in time"),
                status: None,
            }),
            Err(_) => {
                conn.mark_broken();
                Err(Fail {
                    outcome: SendOutcome::ConnectTimeout,
                    reason: format!(
                        "attach of the sender link to {topic} (CBS put-token, then attach) was not answered within {:?}",
                        self.shared.connect_timeout
                    ),
                    status: None,
                })
            }
        }
    }

    /// The slot's live connection, opening a new one if it has none or it broke.
    async fn conn(&self, slot: &Slot) -> Result<Arc<PooledConn>, Fail> {
        let live = |s: &Slot| {
            s.current
                .lock()
                .expect("slot lock")
                .clone()
                .filter(|c| !c.is_broken())
        };
        if let Some(c) = live(slot) {
            return Ok(c);
        }
        let _opening = slot.opening.lock().await;
        if let Some(c) = live(slot) {
            return Ok(c);
        }
        let id = self.conn_ids.fetch_add(1, Ordering::Relaxed);
        let c = PooledConn::open(id, self.shared.clone()).await?;
        let old = slot.current.lock().expect("slot lock").replace(c.clone());
        if old.is_some() {
            self.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        tokio::spawn(refresh_loop(Arc::downgrade(&c), self.shared.token_ttl / 2));
        Ok(c)
    }
}
