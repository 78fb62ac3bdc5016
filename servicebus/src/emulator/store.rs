//! One message store (a queue, or one subscription of a topic): available messages in
//! sequence order, peek-lock locks, deferral, delivery counts, time-to-live and the
//! dead-letter sub-queue. Pure state: no AMQP, no tasks; callers hold the clock.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fe2o3_amqp::types::messaging::{Body, Message};
use fe2o3_amqp::types::primitives::Value;
use tokio::sync::Notify;

/// A message as the emulator keeps it: decoded once, shared by every subscription it was
/// copied to.
pub type Msg = Arc<Message<Body<Value>>>;

/// A lock token: 16 random bytes, the shape of Azure's (a UUID).
pub type LockToken = [u8; 16];

/// The settings an entity takes from `Config.json` (or the defaults, which are Azure's).
#[derive(Debug, Clone, PartialEq)]
pub struct EntityProps {
    /// How long a peek-lock receive holds a message (Azure's default: 60 s).
    pub lock_duration: Duration,
    /// Deliveries after which an abandoned or expired lock sends the message to the
    /// dead-letter sub-queue (Azure's default: 10).
    pub max_delivery_count: u32,
    /// Time-to-live of a message that sets none itself; `None` = forever (Azure's default).
    pub default_ttl: Option<Duration>,
    /// Whether an expired message goes to the dead-letter sub-queue (Azure's default: no,
    /// it is dropped).
    pub dead_letter_on_expiration: bool,
    /// A subscription's rules: it takes a message any of them matches (none: all).
    pub rules: Vec<super::filter::Filter>,
}

impl Default for EntityProps {
    fn default() -> Self {
        EntityProps {
            lock_duration: Duration::from_secs(60),
            max_delivery_count: 10,
            default_ttl: None,
            dead_letter_on_expiration: false,
            rules: Vec::new(),
        }
    }
}

/// One stored message and its delivery state.
#[derive(Debug, Clone)]
pub struct Stored {
    /// Sequence number in its store, from 1.
    pub seq: i64,
    /// The message.
    pub msg: Msg,
    /// When it was enqueued, unix ms.
    pub enqueued_ms: i64,
    /// When it expires, unix ms (`None`: never).
    pub expires_ms: Option<i64>,
    /// Lock acquisitions so far (Azure's DeliveryCount).
    pub delivery_count: u32,
    /// The current lock: token and expiry (unix ms).
    pub lock: Option<(LockToken, i64)>,
    /// Deferred: only a receive by sequence number reaches it.
    pub deferred: bool,
    /// Why it was dead-lettered (`DeadLetterReason`), in the dead-letter sub-queue.
    pub dead_letter_reason: Option<String>,
}

/// How a peek-lock delivery is settled by its receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// `accepted`: the message is removed.
    Complete,
    /// `modified` / `released`: the lock is dropped and the message is available again (or
    /// dead-lettered once MaxDeliveryCount is reached).
    Abandon,
    /// `rejected`: the message moves to the dead-letter sub-queue.
    DeadLetter(String),
    /// `modified` with undeliverable-here: the message is deferred.
    Defer,
}

/// Counters a store keeps for `/counts`, cumulative since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreStats {
    /// Messages enqueued.
    pub enqueued: u64,
    /// Deliveries made (peek-lock and receive-and-delete), redeliveries included.
    pub delivered: u64,
    /// Deliveries of a message delivered before (after abandon or lock expiry).
    pub redelivered: u64,
    /// Peek-lock deliveries completed.
    pub completed: u64,
    /// Peek-lock deliveries abandoned.
    pub abandoned: u64,
    /// Messages moved to the dead-letter sub-queue (any reason).
    pub dead_lettered: u64,
    /// Messages deferred.
    pub deferred: u64,
    /// Locks that ran out before the message was settled.
    pub lock_expired: u64,
    /// Messages dropped (or dead-lettered) because their time-to-live ran out.
    pub expired: u64,
    /// Messages active now: available, locked or deferred.
    pub active: u64,
    /// Messages in the dead-letter sub-queue now.
    pub dead_letter_now: u64,
}

/// Why a lock operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockError {
    /// No such lock: it expired, or the message was settled already (`com.microsoft:message-lock-lost`).
    Lost,
}

#[derive(Debug, Default)]
struct Queue {
    messages: HashMap<i64, Stored>,
    available: BTreeSet<i64>,
    /// (lock expiry unix ms, seq): swept in expiry order.
    lock_expiry: BTreeSet<(i64, i64)>,
    locks: HashMap<LockToken, i64>,
}

impl Queue {
    /// The first available message: (seq, whether its time-to-live ran out).
    fn first_available(&self, now_ms: i64) -> Option<(i64, bool)> {
        self.available
            .iter()
            .map(|s| &self.messages[s])
            .next()
            .map(|m| (m.seq, m.expires_ms.is_some_and(|e| e <= now_ms)))
    }
}

#[derive(Debug, Default)]
struct Inner {
    next_seq: i64,
    main: Queue,
    dlq: Queue,
    stats: StoreStats,
}

/// A queue or a subscription.
#[derive(Debug)]
pub struct Store {
    /// Its path: `queue` or `topic/Subscriptions/name`.
    pub path: String,
    /// Its settings.
    pub props: EntityProps,
    inner: Mutex<Inner>,
    /// Woken when a message may have become available.
    pub ready: Notify,
}

/// A message handed to a receiver.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The stored message (its `delivery_count` already counts this delivery).
    pub stored: Stored,
    /// The lock, when peek-locked.
    pub lock: Option<(LockToken, i64)>,
}

impl Store {
    /// An empty store.
    pub fn new(path: String, props: EntityProps) -> Self {
        Store {
            path,
            props,
            inner: Mutex::new(Inner {
                next_seq: 1,
                ..Inner::default()
            }),
            ready: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("store lock")
    }

    /// Enqueue a message (sent to this queue, or copied to this subscription).
    pub fn enqueue(&self, msg: Msg, now_ms: i64) {
        let ttl = msg
            .header
            .as_ref()
            .and_then(|h| h.ttl)
            .map(|ms| Duration::from_millis(u64::from(ms)))
            .or(self.props.default_ttl);
        let mut g = self.lock();
        let seq = g.next_seq;
        g.next_seq += 1;
        let stored = Stored {
            seq,
            msg,
            enqueued_ms: now_ms,
            expires_ms: ttl.map(|t| now_ms.saturating_add(t.as_millis() as i64)),
            delivery_count: 0,
            lock: None,
            deferred: false,
            dead_letter_reason: None,
        };
        g.main.messages.insert(seq, stored);
        g.main.available.insert(seq);
        g.stats.enqueued += 1;
        drop(g);
        self.ready.notify_waiters();
    }

    /// Take the next available message: locked for `LockDuration` when `peek_lock`, removed
    /// otherwise. `dead_letter` reads the dead-letter sub-queue instead.
    pub fn take(
        &self,
        peek_lock: bool,
        dead_letter: bool,
        now_ms: i64,
        token: LockToken,
    ) -> Option<Delivered> {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        loop {
            let q = if dead_letter { &g.dlq } else { &g.main };
            let (seq, expired) = q.first_available(now_ms)?;
            if expired {
                expire(g, &self.props, seq, dead_letter);
                continue;
            }
            let q = if dead_letter { &mut g.dlq } else { &mut g.main };
            q.available.remove(&seq);
            let until = now_ms.saturating_add(self.props.lock_duration.as_millis() as i64);
            let (stored, lock) = if peek_lock {
                let m = q.messages.get_mut(&seq).expect("available is stored");
                m.delivery_count += 1;
                m.lock = Some((token, until));
                q.lock_expiry.insert((until, seq));
                q.locks.insert(token, seq);
                (m.clone(), Some((token, until)))
            } else {
                let mut m = q.messages.remove(&seq).expect("available is stored");
                m.delivery_count += 1;
                (m, None)
            };
            g.stats.delivered += 1;
            if stored.delivery_count > 1 {
                g.stats.redelivered += 1;
            }
            return Some(Delivered { stored, lock });
        }
    }

    /// Lock a deferred message by its sequence number (a receive by sequence number through
    /// `$management`); it stays deferred if abandoned.
    pub fn take_deferred(&self, seq: i64, token: LockToken, now_ms: i64) -> Option<Delivered> {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        let until = now_ms.saturating_add(self.props.lock_duration.as_millis() as i64);
        let m = g.main.messages.get_mut(&seq)?;
        if !m.deferred || m.lock.is_some() {
            return None;
        }
        m.delivery_count += 1;
        m.lock = Some((token, until));
        let stored = m.clone();
        g.main.lock_expiry.insert((until, seq));
        g.main.locks.insert(token, seq);
        g.stats.delivered += 1;
        g.stats.redelivered += u64::from(stored.delivery_count > 1);
        Some(Delivered {
            stored,
            lock: Some((token, until)),
        })
    }

    /// Give back a message [`Self::take`] handed out that never reached the client (no credit
    /// came, or the link went): as if it had not been taken, nothing counted.
    pub fn untake(&self, d: Delivered, dead_letter: bool) {
        let mut guard = self.lock();
        let g = &mut *guard;
        let q = if dead_letter { &mut g.dlq } else { &mut g.main };
        let seq = d.stored.seq;
        let was_redelivery = d.stored.delivery_count > 1;
        match d.lock {
            Some((token, until)) => {
                if q.locks.remove(&token).is_none() {
                    return; // the lock ran out meanwhile: the sweep gave it back already
                }
                q.lock_expiry.remove(&(until, seq));
                if let Some(m) = q.messages.get_mut(&seq) {
                    m.lock = None;
                    m.delivery_count -= 1;
                }
            }
            None => {
                let mut m = d.stored;
                m.delivery_count -= 1;
                q.messages.insert(seq, m);
            }
        }
        q.available.insert(seq);
        g.stats.delivered -= 1;
        if was_redelivery {
            g.stats.redelivered -= 1;
        }
        drop(guard);
        self.ready.notify_waiters();
    }

    /// Settle a peek-locked message by its lock token.
    pub fn settle(&self, token: &LockToken, how: Settle, now_ms: i64) -> Result<(), LockError> {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        let (dead_letter, seq) = match (g.main.locks.remove(token), g.dlq.locks.remove(token)) {
            (Some(seq), _) => (false, seq),
            (None, Some(seq)) => (true, seq),
            (None, None) => return Err(LockError::Lost),
        };
        let q = if dead_letter { &mut g.dlq } else { &mut g.main };
        let m = q.messages.get_mut(&seq).expect("locked is stored");
        let (_, until) = m.lock.take().expect("a locked message has its lock");
        q.lock_expiry.remove(&(until, seq));
        match how {
            Settle::Complete => {
                q.messages.remove(&seq);
                g.stats.completed += 1;
            }
            Settle::Abandon => {
                g.stats.abandoned += 1;
                release(g, &self.props, seq, dead_letter);
            }
            Settle::DeadLetter(reason) => {
                if dead_letter {
                    // Azure refuses to dead-letter from the dead-letter queue; it stays there.
                    g.dlq.available.insert(seq);
                } else {
                    to_dead_letter(g, seq, reason);
                }
            }
            Settle::Defer => {
                if let Some(m) = q.messages.get_mut(&seq) {
                    m.deferred = true;
                }
                g.stats.deferred += 1;
            }
        }
        drop(guard);
        self.ready.notify_waiters();
        Ok(())
    }

    /// Renew a lock for another `LockDuration`; returns the new expiry (unix ms).
    pub fn renew(&self, token: &LockToken, now_ms: i64) -> Result<i64, LockError> {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        let until = now_ms.saturating_add(self.props.lock_duration.as_millis() as i64);
        for q in [&mut g.main, &mut g.dlq] {
            if let Some(&seq) = q.locks.get(token) {
                let m = q.messages.get_mut(&seq).expect("locked is stored");
                let old = m.lock.expect("locked").1;
                m.lock = Some((*token, until));
                q.lock_expiry.remove(&(old, seq));
                q.lock_expiry.insert((until, seq));
                return Ok(until);
            }
        }
        Err(LockError::Lost)
    }

    /// Up to `max` active messages from sequence number `from` on, without locking them.
    pub fn peek(&self, from: i64, max: usize, dead_letter: bool, now_ms: i64) -> Vec<Stored> {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        let q = if dead_letter { &g.dlq } else { &g.main };
        let mut seqs: Vec<i64> = q.messages.keys().copied().filter(|&s| s >= from).collect();
        seqs.sort_unstable();
        seqs.truncate(max);
        seqs.iter().map(|s| q.messages[s].clone()).collect()
    }

    /// The counters, with the current sizes filled in.
    pub fn stats(&self, now_ms: i64) -> StoreStats {
        let mut guard = self.lock();
        let g = &mut *guard;
        sweep(g, &self.props, now_ms);
        let mut s = g.stats;
        s.active = g.main.messages.len() as u64;
        s.dead_letter_now = g.dlq.messages.len() as u64;
        s
    }

    /// When the next lock runs out (unix ms), so a waiting receiver can wake for it.
    pub fn next_lock_expiry(&self) -> Option<i64> {
        let g = self.lock();
        [g.main.lock_expiry.first(), g.dlq.lock_expiry.first()]
            .into_iter()
            .flatten()
            .map(|&(t, _)| t)
            .min()
    }
}

/// Locks that ran out return their message (or dead-letter it at MaxDeliveryCount).
fn sweep(g: &mut Inner, props: &EntityProps, now_ms: i64) {
    for dead_letter in [false, true] {
        loop {
            let q = if dead_letter { &mut g.dlq } else { &mut g.main };
            let Some(&(until, seq)) = q.lock_expiry.first() else {
                break;
            };
            if until > now_ms {
                break;
            }
            q.lock_expiry.pop_first();
            if let Some(m) = q.messages.get_mut(&seq) {
                if let Some((token, _)) = m.lock.take() {
                    q.locks.remove(&token);
                }
            }
            g.stats.lock_expired += 1;
            release(g, props, seq, dead_letter);
        }
    }
}

/// A lock ended without completion: available again, or dead-lettered once the message
/// has been delivered MaxDeliveryCount times.
fn release(g: &mut Inner, props: &EntityProps, seq: i64, dead_letter: bool) {
    let count = if dead_letter { &g.dlq } else { &g.main }
        .messages
        .get(&seq)
        .map(|m| m.delivery_count);
    match count {
        Some(n) if !dead_letter && n >= props.max_delivery_count => {
            to_dead_letter(g, seq, "MaxDeliveryCountExceeded".to_string());
        }
        Some(_) => {
            let q = if dead_letter { &mut g.dlq } else { &mut g.main };
            // A deferred message stays deferred: only a receive by sequence number reaches it.
            if !q.messages[&seq].deferred {
                q.available.insert(seq);
            }
        }
        None => {}
    }
}

fn expire(g: &mut Inner, props: &EntityProps, seq: i64, dead_letter: bool) {
    let q = if dead_letter { &mut g.dlq } else { &mut g.main };
    q.available.remove(&seq);
    g.stats.expired += 1;
    if props.dead_letter_on_expiration && !dead_letter {
        to_dead_letter(g, seq, "TTLExpiredException".to_string());
    } else {
        let q = if dead_letter { &mut g.dlq } else { &mut g.main };
        q.messages.remove(&seq);
    }
}

fn to_dead_letter(g: &mut Inner, seq: i64, reason: String) {
    g.main.available.remove(&seq);
    let Some(mut m) = g.main.messages.remove(&seq) else {
        return;
    };
    m.lock = None;
    m.deferred = false;
    m.dead_letter_reason = Some(reason);
    m.expires_ms = None;
    g.dlq.messages.insert(seq, m);
    g.dlq.available.insert(seq);
    g.stats.dead_lettered += 1;
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
