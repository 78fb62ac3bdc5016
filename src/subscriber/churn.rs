//! Subscription churn (`--subscriber-churn RATE`): while a level runs, that many subscribers per second unsubscribe and subscribe again, each verified by the hub.
//!
//! A cycle marks when its subscriber stops being owed events (its unsubscribe request goes
//! out) and when it is owed them again (its re-subscription is verified); what was accepted in
//! between is `ambiguous`, never lost (docs/delivery.md, "Subscription churn"). The counts and
//! latencies of a level go into the fleet's [`super::ChurnStats`].

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::churn_stats::ChurnSeconds;
use super::fleet::Fleet;
use super::fleet_shared::{Intent, Shared};
use super::subscribe::{form, PhaseSettings};
use crate::stats::record;

/// How long a churned subscriber stays unsubscribed before it subscribes again.
const DWELL: Duration = Duration::from_millis(50);

/// The churn of one level, running; [`ChurnRunner::stop`] ends it.
#[derive(Debug)]
pub struct ChurnRunner {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl ChurnRunner {
    /// Start no further cycle and wait for those in flight to finish (each request and each
    /// verification wait is bounded by the phase timeout), so the level closes on settled
    /// subscribers. Once `cancel` fires (the run is stopped) the cycles in flight are
    /// abandoned instead: their gaps stay open to the level's end.
    pub async fn stop(mut self, cancel: &CancellationToken) {
        self.stop.cancel();
        tokio::select! {
            _ = &mut self.task => {}
            _ = cancel.cancelled() => self.task.abort(),
        }
    }
}

impl Fleet {
    /// Start churning `rate` subscribers per second (round robin over those verified and not
    /// gone), until [`ChurnRunner::stop`]. Between `open_level` and `close_level` only.
    pub fn start_churn(&self, rate: f64, p: &PhaseSettings) -> ChurnRunner {
        let sh = self.shared.clone();
        sh.churn_on
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let stop = CancellationToken::new();
        let task = tokio::spawn(schedule(sh, Arc::new(p.clone()), rate, stop.clone()));
        ChurnRunner { stop, task }
    }
}

/// Ticks `rate` times a second on a fixed schedule (a slow cycle does not slow the rate); each
/// takes the next subscriber, round robin, that is listening and not already in a cycle.
async fn schedule(sh: Arc<Shared>, p: Arc<PhaseSettings>, rate: f64, stop: CancellationToken) {
    crate::engine::rotate(
        sh.subs.len(),
        rate,
        stop,
        |i| sh.subs[i].listening(&sh.subs[i].state()),
        || sh.churn_stats().skipped += 1,
        |i| cycle(sh.clone(), p.clone(), i),
    )
    .await;
}

/// One subscriber out and back in: unsubscribe, then subscribe again, each verified.
async fn cycle(sh: Arc<Shared>, p: Arc<PhaseSettings>, i: usize) {
    let s = &sh.subs[i];
    // From the moment the unsubscribe request goes out, newly accepted events are not owed.
    // A gap still open from an earlier cycle (no delivery has closed it yet) goes on from
    // where it began.
    let before = sh.tracker.accepted_snapshot();
    {
        let mut st = s.state();
        st.gap_from.get_or_insert(before);
        st.reverified = None;
    }
    let out = request(&sh, &p, i, false).await;
    // Out for a moment before coming back: a hub applies a verification when it has read the
    // echo, so a re-subscription sent at once can be verified before a slow unsubscribe is
    // applied, which then removes the new subscription.
    tokio::time::sleep(DWELL).await;
    let asked = Instant::now();
    let back = request(&sh, &p, i, true).await;
    let second = |at: Instant| {
        let ns = sh.tracker.ns(at.into_std());
        (ns.saturating_sub(sh.origin_ns.load(Relaxed)) / 1_000_000_000) as usize
    };
    let mut c = sh.churn_stats();
    if let Some(at) = out {
        c.unsubscribed += 1;
        ChurnSeconds::bump(&mut c.per_second.unsubscribed, second(at), 1);
    }
    match (out, back) {
        (Some(_), Some(verified)) => {
            c.resubscribed += 1;
            ChurnSeconds::bump(&mut c.per_second.resubscribed, second(verified), 1);
            record(
                &mut c.subscribe_latency,
                verified.saturating_duration_since(asked).as_micros() as u64,
            );
            drop(c);
            // The hub takes the verification in after reading the echo, at an instant hubload
            // cannot see: the gap closes at the first delivery of an event published after
            // now (the callback handler does it), which the hub fanned out with it in force.
            let now = sh.tracker.published_snapshot();
            let mut st = s.state();
            st.reverified = Some(now);
            st.first_from_ns = Some(sh.tracker.ns(verified.into_std()));
        }
        // Left open: nothing accepted from the unsubscribe request on is owed to it this level.
        _ => c.failed += 1,
    }
}

/// Ask the hub to (un)subscribe subscriber `i` and wait for its verification; the instant it
/// was seen, or `None` when refused, denied or not verified within the phase timeout.
pub(super) async fn request(
    sh: &Shared,
    p: &PhaseSettings,
    i: usize,
    subscribe: bool,
) -> Option<Instant> {
    let s = &sh.subs[i];
    let (pending, done) = match subscribe {
        true => (Intent::Subscribing, Intent::Verified),
        false => (Intent::Unsubscribing, Intent::Unsubscribed),
    };
    s.set_intent(pending);
    let body = form(sh, s, subscribe);
    let deadline = Instant::now() + p.timeout;
    let r = p.post(&body).await;
    if !r.is_ok_and(|r| (200..300).contains(&r.status)) {
        // Refused: a subscribe leaves it unsubscribed; an unsubscribe, still subscribed.
        s.set_intent(if subscribe {
            Intent::None
        } else {
            Intent::Verified
        });
        return None;
    }
    sh.wait_intents(
        || s.intent() == pending,
        deadline,
        &CancellationToken::new(),
    )
    .await;
    (s.intent() == done).then(Instant::now)
}
