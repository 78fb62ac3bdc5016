//! The callback server: answers intent verification (GET) and takes deliveries (POST) for every subscriber.
//!
//! The delivery path is lean: each connection is one task of hubload's own server loop
//! (`src/serve/`: the codec reads the head, no HTTP framework, no header map, no body
//! channel, deadlines on every wait), so a delivery allocates nothing here. The path
//! `/cb/<topic>/<index>` is split by hand, the HMAC key is absorbed once for the run, the
//! expected body is regenerated into a per-thread buffer (`receive.rs`), and the
//! subscriber's lock is taken once, after the expensive checks.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use hubload_http1::answer::{self as http1, Persist};
use hubload_http1::request::{Head, Method};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::fleet_shared::{Intent, Shared, Subscriber};
use super::receive::{self, check};
use crate::result::ServerTimings;
use crate::serve::{Handler, ServerDeadlines, ServerStats};

/// The largest delivery body taken (larger ones are answered 413).
pub const MAX_BODY: usize = 2 << 20;
/// The longest `X-Hub-Signature` kept: a valid one (`sha256=` and 64 hex digits) is 71 bytes;
/// a longer value, cut here, still fails the check.
const SIGNATURE_MAX: usize = 96;

/// Serve every callback on `listener` until the returned token is cancelled; connections
/// then finish the request in hand and close. Each connection's waits end at `limits`,
/// counted in `stats`.
pub(crate) fn spawn(
    listener: TcpListener,
    shared: Arc<Shared>,
    limits: ServerDeadlines,
    stats: Arc<ServerStats>,
) -> CancellationToken {
    crate::serve::spawn(listener, shared, limits, stats, "callback server")
}

/// What a request asks, copied out of the read buffer so the buffer can be reused while its
/// body is read.
pub(crate) struct Asked {
    method: Method,
    /// (topic, index) of a callback path.
    route: Option<(usize, usize)>,
    /// The query of a GET (verification).
    query: String,
    signature: Option<([u8; SIGNATURE_MAX], usize)>,
    /// The hub's `Hub-Timing` of a delivery (read inline: no allocation).
    timing: ServerTimings,
    /// When its head was whole, on the tracker's clock.
    received_ns: u64,
}

impl Asked {
    fn new(head: &Head, buf: &[u8], received_ns: u64) -> Asked {
        let target = &buf[head.target.clone()];
        let (path, query) = match target.iter().position(|b| *b == b'?') {
            Some(q) => (&target[..q], &target[q + 1..]),
            None => (target, &[][..]),
        };
        let signature = head.signature.clone().map(|r| {
            let v = &buf[r];
            let n = v.len().min(SIGNATURE_MAX);
            let mut s = [0; SIGNATURE_MAX];
            s[..n].copy_from_slice(&v[..n]);
            (s, n)
        });
        Asked {
            method: head.method,
            route: std::str::from_utf8(path).ok().and_then(route),
            query: if head.method == Method::Get {
                String::from_utf8_lossy(query).into_owned()
            } else {
                String::new()
            },
            signature,
            timing: match &head.hub_timing {
                Some(r) if head.method == Method::Post => {
                    let mut t = ServerTimings::NONE;
                    t.add_header(&buf[r.clone()]);
                    t
                }
                _ => ServerTimings::NONE,
            },
            received_ns,
        }
    }

    fn signature(&self) -> Option<&[u8]> {
        self.signature.as_ref().map(|(s, n)| &s[..*n])
    }
}

impl Handler for Shared {
    type Asked = Asked;
    const MAX_BODY: usize = MAX_BODY;

    fn asked(&self, head: &Head, buf: &[u8]) -> Asked {
        Asked::new(head, buf, receive::now_ns(&self.tracker))
    }

    fn answer(&self, asked: Asked, body: &[u8], out: &mut Vec<u8>, persist: Persist) -> Duration {
        let (status, text) = answer(self, &asked, body, asked.received_ns);
        let answer = http1::Answer {
            status,
            content_type: text.as_ref().map(|_| "text/plain"),
            fields: &[],
            body: text.as_deref().unwrap_or("").as_bytes(),
        };
        http1::write_full(out, &answer, persist);
        if asked.method == Method::Post {
            self.behaviour.latency
        } else {
            Duration::ZERO
        }
    }
}

/// `/cb/<topic>/<index>` → (topic, index).
fn route(path: &str) -> Option<(usize, usize)> {
    let (topic, index) = path.strip_prefix("/cb/")?.split_once('/')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(topic) || !digits(index) {
        return None;
    }
    Some((topic.parse().ok()?, index.parse().ok()?))
}

/// The answer to one request: status, and a `text/plain` body (a verification's challenge).
fn answer(sh: &Shared, asked: &Asked, body: &[u8], received_ns: u64) -> (u16, Option<String>) {
    let Some((topic, index)) = asked.route else {
        return (404, None);
    };
    if asked.method == Method::Other {
        return (405, None);
    }
    let Some(sub) = sh.sub(topic, index) else {
        return (404, None);
    };
    if asked.method == Method::Get {
        return verify(sh, sub, &asked.query);
    }
    let answer = deliver(
        sh,
        sub,
        Some(asked.signature()),
        body,
        received_ns,
        &asked.timing,
    );
    (answer.status(), None)
}

/// Intent verification (WebSub §5.3): echo `hub.challenge` exactly when the hub asks about
/// what this subscriber requested; record a denial.
fn verify(sh: &Shared, sub: &Subscriber, query: &str) -> (u16, Option<String>) {
    let (mut mode, mut hub_topic, mut challenge) = (None, None, None);
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "hub.mode" => mode = Some(v),
            "hub.topic" => hub_topic = Some(v),
            "hub.challenge" => challenge = Some(v),
            _ => {}
        }
    }
    if hub_topic.as_deref() != Some(sub.hub_topic.as_str()) {
        return (404, None);
    }
    let intent = sub.intent();
    let next = match mode.as_deref() {
        Some("subscribe") if matches!(intent, Intent::Subscribing | Intent::Verified) => {
            Intent::Verified
        }
        Some("unsubscribe") if matches!(intent, Intent::Unsubscribing | Intent::Unsubscribed) => {
            Intent::Unsubscribed
        }
        Some("denied") if matches!(intent, Intent::Subscribing | Intent::Verified) => {
            sub.set_intent(Intent::Denied);
            sh.intents.notify_waiters();
            return (200, None);
        }
        _ => return (404, None),
    };
    let Some(challenge) = challenge else {
        return (404, None);
    };
    // Deliveries from now until a subscribe is verified come after an unsubscribe (churn).
    sub.state().after_unsub = next == Intent::Unsubscribed;
    sub.set_intent(next);
    sh.intents.notify_waiters();
    (200, Some(challenge.into_owned()))
}

/// A delivery (WebSub §7, or a broker subscriber's message): match it to its event, count
/// it; the answer the behaviour says. `signature` is the `X-Hub-Signature` to check (WebSub);
/// `None` checks none (a broker message carries no signature). `timing` is the hub's
/// `Hub-Timing`, recorded for a delivery counted delivered.
pub(super) fn deliver(
    sh: &Shared,
    sub: &Subscriber,
    signature: Option<Option<&[u8]>>,
    body: &[u8],
    received_ns: u64,
    timing: &ServerTimings,
) -> super::behaviour::Answer {
    let base = sh.base.load(Relaxed);
    let c = check(
        &sh.workload,
        &sh.tracker,
        sub.topic,
        base,
        signature.is_some().then_some(&sh.key),
        signature.flatten(),
        body,
    );
    let sent = match c {
        receive::Check::Event { seq, .. } => sh.tracker.sent(seq),
        _ => None,
    };
    let id = (sub.topic as u64) << 20 | sub.index as u64;
    let seq = match c {
        receive::Check::Event { seq, .. } => Some(seq),
        _ => None,
    };
    let mut st = sub.state();
    let delivered = st.counts.delivered;
    // Under the subscriber's lock, as every delivery's recording is (never the other way round).
    let mut hists = sh.hists.slot(sub.topic * sh.per_topic + sub.index);
    let answer = st.receive(
        id,
        &sh.behaviour,
        c,
        sent,
        received_ns,
        &sh.delivered_per_second,
        &mut hists,
    );
    if st.counts.delivered > delivered {
        let e2e_us = st.last_e2e_us;
        super::stages::record_stages(&mut hists.stages, timing, e2e_us);
    }
    drop(hists);
    if st.counts.delivered > delivered && seq.is_some_and(|s| st.closes_gap(s)) {
        // Owed again from here: what was published before this delivery stays in the gap.
        let now = sh.tracker.published_snapshot();
        st.close_gap(&now);
    }
    // Subscription churn: a delivery after a verified unsubscribe, or the first one
    // acknowledged since a re-verification.
    let after_unsub = st.after_unsub;
    let first = match st.counts.delivered > delivered {
        true => st.first_from_ns.take(),
        false => None,
    };
    drop(st);
    if after_unsub || first.is_some() {
        let mut churn = sh.churn_stats();
        churn.after_unsubscribe += u64::from(after_unsub);
        if let Some(from) = first {
            crate::stats::record(
                &mut churn.time_to_first_delivery,
                received_ns.saturating_sub(from) / 1000,
            );
        }
    }
    if sh.closing.load(Relaxed) {
        sh.delivered.notify_one();
    }
    answer
}

#[cfg(test)]
mod misbehaving_sender_tests;
#[cfg(test)]
mod tests;
