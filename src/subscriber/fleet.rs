//! The subscriber fleet: N subscribers per topic, their state, and the level lifecycle (open, close).
//!
//! One HTTP server (`server.rs`) serves every callback; each subscriber is its own path,
//! `/cb/<topic index>/<subscriber index>`. The publisher side feeds the shared
//! [`DeliveryTracker`]; `close_level` waits for the expected deliveries (up to the grace, or
//! until the run is stopped) and turns every subscriber's state into one [`DeliveryLevelStats`].

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::behaviour::Behaviour;
use super::fleet_shared::{Intent, Shared, Subscriber};
use super::live_levels::close_level;
use super::live_view::DeliveryView;
use super::receive::SignatureKey;
use super::stats::DeliveryLevelStats;
use super::tracker::DeliveryTracker;
use crate::secret::Secret;
use crate::serve::{ServerCounts, ServerDeadlines, ServerStats};
use crate::workload::Workload;

/// What the fleet is and where it listens.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    /// Where the callback server binds (e.g. `127.0.0.1:0`).
    pub listen: SocketAddr,
    /// How the hub reaches the callback server, e.g. `http://hubload-callbacks:8080`;
    /// `None`: `http://<bound address>`.
    pub callback_url: Option<String>,
    /// Subscribers per topic (≥ 1).
    pub per_topic: usize,
    /// The topics to subscribe: (workload topic index, the `hub.topic` to send).
    pub topics: Vec<(usize, String)>,
    /// `hub.secret`; `None` generates one for the run.
    pub secret: Option<Secret>,
    /// `hub.lease_seconds`.
    pub lease_seconds: u64,
    /// How subscribers answer.
    pub behaviour: Behaviour,
    /// How long the callback server's connections may wait and take (docs/deadlines.md).
    pub deadlines: ServerDeadlines,
}

/// A generated per-run secret: 256 random bits, hex.
fn generated_secret() -> Secret {
    Secret::new(format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// The running fleet; dropping it (or [`Fleet::shutdown`]) stops the callback server.
#[derive(Debug)]
pub struct Fleet {
    pub(crate) shared: Arc<Shared>,
    local_addr: SocketAddr,
    stop: CancellationToken,
    server_stats: Arc<ServerStats>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Fleet {
    /// Bind the callback server and start serving (on the current runtime).
    pub async fn start(
        cfg: FleetConfig,
        workload: Arc<Workload>,
        tracker: Arc<DeliveryTracker>,
    ) -> std::io::Result<Fleet> {
        let listener = tokio::net::TcpListener::bind(cfg.listen).await?;
        let local_addr = listener.local_addr()?;
        let shared = Self::shared(&cfg, local_addr, workload, tracker);
        let server_stats = Arc::new(ServerStats::default());
        let stop = super::server::spawn(
            listener,
            shared.clone(),
            cfg.deadlines,
            server_stats.clone(),
        );
        Ok(Fleet {
            shared,
            local_addr,
            stop,
            server_stats,
        })
    }

    /// A fleet without a callback server: broker subscribers (`broker.rs`) feed its
    /// deliveries. `cfg.listen`, `callback_url`, `secret` and `lease_seconds` are unused.
    pub fn without_server(
        cfg: FleetConfig,
        workload: Arc<Workload>,
        tracker: Arc<DeliveryTracker>,
    ) -> Fleet {
        let shared = Self::shared(&cfg, cfg.listen, workload, tracker);
        Fleet {
            shared,
            local_addr: cfg.listen,
            stop: CancellationToken::new(),
            server_stats: Arc::new(ServerStats::default()),
        }
    }

    fn shared(
        cfg: &FleetConfig,
        local_addr: SocketAddr,
        workload: Arc<Workload>,
        tracker: Arc<DeliveryTracker>,
    ) -> Arc<Shared> {
        let mut first_sub = vec![u32::MAX; workload.topics().len()];
        let per_topic = cfg.per_topic.max(1);
        let mut subs = Vec::with_capacity(cfg.topics.len() * per_topic);
        for (topic, hub_topic) in &cfg.topics {
            let Some(slot) = first_sub.get_mut(*topic).filter(|s| **s == u32::MAX) else {
                continue; // unknown or repeated topic
            };
            *slot = subs.len() as u32;
            subs.extend((0..per_topic).map(|index| Subscriber::new(*topic, index, hub_topic)));
        }
        let callback_base = cfg
            .callback_url
            .clone()
            .unwrap_or_else(|| format!("http://{local_addr}"))
            .trim_end_matches('/')
            .to_owned();
        let secret = cfg.secret.clone().unwrap_or_else(generated_secret);
        Arc::new(Shared {
            workload,
            tracker,
            subs,
            first_sub,
            per_topic,
            key: SignatureKey::new(secret.expose().as_bytes()),
            secret,
            lease_seconds: cfg.lease_seconds,
            behaviour: cfg.behaviour.clone(),
            base: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            delivered: Notify::new(),
            intents: Notify::new(),
            churn_on: AtomicBool::new(false),
            churn: Default::default(),
            origin_ns: AtomicU64::new(0),
            delivered_per_second: Default::default(),
            hists: Default::default(),
            live: Default::default(),
            callback_base,
        })
    }

    /// The callback server's connection counts so far (deadlines reached among them).
    pub fn server_counts(&self) -> ServerCounts {
        self.server_stats.counts()
    }

    /// The bound address of the callback server.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Mark the subscribers whose topic `quiet` names as a quiet tenant's (a surge runs):
    /// their deliveries also count by the second their event was sent in.
    pub fn mark_quiet(&self, quiet: impl Fn(usize) -> bool) {
        for s in &self.shared.subs {
            s.state().quiet = quiet(s.topic);
        }
    }

    /// The tracker the publisher feeds.
    pub fn tracker(&self) -> &Arc<DeliveryTracker> {
        &self.shared.tracker
    }

    /// Subscribers in the fleet.
    pub fn len(&self) -> usize {
        self.shared.subs.len()
    }

    /// Whether the fleet has no subscriber.
    pub fn is_empty(&self) -> bool {
        self.shared.subs.is_empty()
    }

    /// The callback URL of subscriber `index` of workload topic `topic`.
    pub fn callback_url(&self, topic: usize, index: usize) -> Option<String> {
        let s = self.shared.sub(topic, index)?;
        Some(self.shared.callback(s))
    }

    /// Stop the callback server.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }

    /// Start a level whose sequence numbers are `first_seq` and above, its seconds counted
    /// from now. Between levels only.
    pub fn open_level(&self, first_seq: u64) {
        self.open_level_at(first_seq, Instant::now());
    }

    /// Start a level whose measured start (second 0 of its per-second series) is `origin`.
    pub fn open_level_at(&self, first_seq: u64, origin: Instant) {
        let sh = &self.shared;
        sh.tracker.open_level(first_seq);
        sh.base.store(first_seq, Relaxed);
        let origin = origin.into_std();
        sh.origin_ns.store(sh.tracker.ns(origin), Relaxed);
        let mut fanout = vec![0u32; sh.first_sub.len()];
        for s in &sh.subs {
            let mut st = s.state();
            fanout[s.topic] += u32::from(s.listening(&st));
            st.reset(first_seq);
            st.origin_ns = sh.tracker.ns(origin);
        }
        sh.tracker.count_owed(origin, &fanout);
        sh.live.opened();
    }

    /// The handle the live page reads the levels' deliveries with.
    pub fn live_view(&self) -> DeliveryView {
        DeliveryView::new(self.shared.clone())
    }

    /// End the level: wait until every listening subscriber has every accepted event of its
    /// topic, or until `grace` has passed (call right after the level's last publish), then
    /// count what is missing as lost and hand back the level's stats. The next level starts
    /// with [`Fleet::open_level`].
    pub async fn close_level(&self, grace: Duration) -> DeliveryLevelStats {
        self.close_level_or_stop(grace, &CancellationToken::new())
            .await
    }

    /// [`Fleet::close_level`], but once `stop` fires (at once if it already has) the wait
    /// ends: what has not arrived by then is counted `not_yet_delivered`, not lost.
    pub async fn close_level_or_stop(
        &self,
        grace: Duration,
        stop: &CancellationToken,
    ) -> DeliveryLevelStats {
        let sh = &self.shared;
        let deadline = Instant::now() + grace;
        sh.closing.store(true, Relaxed);
        let expected = self.expected();
        loop {
            // Cheap test first (counts), the exact one only when the counts say "done".
            let maybe_done = sh.subs.iter().zip(&expected).all(|(s, e)| {
                let st = s.state();
                !s.listening(&st) || st.acked.ones() + st.dead.ones() >= *e
            });
            if maybe_done && self.missing() == 0 {
                break;
            }
            let tick = (Instant::now() + Duration::from_millis(50)).min(deadline);
            if Instant::now() >= deadline || stop.is_cancelled() {
                break;
            }
            tokio::select! {
                _ = sh.delivered.notified() => {}
                _ = tokio::time::sleep_until(tick) => {}
                _ = stop.cancelled() => {}
            }
        }
        sh.closing.store(false, Relaxed);
        // Stopped with the grace not yet over: the hub was not given its grace.
        let cut_short = stop.is_cancelled() && Instant::now() < deadline;
        self.take_stats(&expected, cut_short)
    }

    /// Per subscriber: accepted events of its topic in the level, less those in its churn gaps.
    fn expected(&self) -> Vec<u64> {
        let sh = &self.shared;
        let mut per_topic = vec![0u64; sh.first_sub.len()];
        sh.tracker.for_each_accepted(|seq| {
            let t = sh.tracker.sent(seq).map_or_else(
                || sh.workload.topic_of_seq(sh.tracker.untracked(seq)),
                |s| s.topic,
            );
            if let Some(n) = per_topic.get_mut(t) {
                *n += 1;
            }
        });
        let mut out: Vec<u64> = sh.subs.iter().map(|s| per_topic[s.topic]).collect();
        self.each_expected(|i, _, _, gap| out[i] -= u64::from(gap));
        out
    }

    /// Call `f(subscriber, sent at (ns since the tracker's anchor, when the ring still knows),
    /// acked (or dead-lettered)?, in a churn gap?)` for every accepted event and every
    /// subscriber of its topic that is listening (verified, and not gone) or that churn took
    /// out during the level (its gap still open: a re-subscription failed).
    fn each_expected(&self, mut f: impl FnMut(usize, Option<u64>, bool, bool)) {
        let sh = &self.shared;
        let guards: Vec<_> = sh.subs.iter().map(Subscriber::state).collect();
        sh.tracker.for_each_accepted(|seq| {
            let sent = sh.tracker.sent(seq);
            let t = sent
                .as_ref()
                .map_or_else(|| sh.workload.topic_of_seq(seq), |s| s.topic);
            let Some(&first) = sh.first_sub.get(t) else {
                return;
            };
            if first == u32::MAX {
                return;
            }
            let first = first as usize;
            for (i, st) in guards.iter().enumerate().skip(first).take(sh.per_topic) {
                if sh.subs[i].listening(st) || st.gap_from.is_some() {
                    // Dead-lettered (broker subscribers) is settled: not missing, not lost.
                    let done = st.acked.get(seq) || st.dead.get(seq);
                    f(i, sent.as_ref().map(|s| s.sent_ns), done, st.in_gap(seq));
                }
            }
        });
    }

    /// Accepted events of the open level not yet delivered to subscribers still listening
    /// (the backlog, in deliveries).
    pub fn backlog(&self) -> u64 {
        self.missing()
    }

    /// Accepted events not yet delivered to subscribers that are still there.
    fn missing(&self) -> u64 {
        let mut n = 0;
        self.each_expected(|_, _, acked, gap| n += u64::from(!acked && !gap));
        n
    }

    fn take_stats(&self, expected: &[u64], cut_short: bool) -> DeliveryLevelStats {
        let sh = &self.shared;
        let mut lost = vec![0u64; sh.subs.len()];
        let mut ambiguous = 0;
        // With a surge, the quiet tenants' lost deliveries by the second their publish was
        // sent in (the delivery verdict's loss), as their deliveries are counted.
        let quiet: Vec<bool> = sh.subs.iter().map(|s| s.state().quiet).collect();
        let origin = sh.origin_ns.load(Relaxed);
        let mut quiet_lost: Vec<u64> = Vec::new();
        self.each_expected(|i, sent_ns, acked, gap| match gap {
            false => {
                lost[i] += u64::from(!acked);
                if let (false, true, Some(ns)) = (acked, quiet[i], sent_ns) {
                    let sec = (ns.saturating_sub(origin) / 1_000_000_000) as usize;
                    let sec = sec.min(super::second_series::SERIES_SECONDS - 1);
                    if quiet_lost.len() <= sec {
                        quiet_lost.resize(sec + 1, 0);
                    }
                    quiet_lost[sec] += 1;
                }
            }
            true => ambiguous += u64::from(!acked),
        });
        let mut out = DeliveryLevelStats::default();
        for (i, s) in sh.subs.iter().enumerate() {
            let mut st = s.state();
            let mut c = std::mem::take(&mut st.counts);
            c.expected = if s.intent() == Intent::Verified || st.gap_from.is_some() {
                expected[i]
            } else {
                0
            };
            match cut_short {
                true => c.not_yet_delivered = lost[i],
                false => c.lost = lost[i],
            }
            out.counts += &c;
            out.per_subscriber.insert(s.key(), c);
            let latency = std::mem::take(&mut st.latency);
            if !latency.is_empty() {
                *out.per_topic.entry(s.topic).or_default() += &latency;
            }
            out.gone_subscribers += u64::from(st.gone);
            out.longest_gap_us = out.longest_gap_us.max(st.longest_gap_ns / 1000);
            out.unverified_subscribers += u64::from(s.intent() != Intent::Verified);
            for (reason, n) in std::mem::take(&mut st.dead_reasons) {
                *out.dead_letter_reasons.entry(reason).or_default() += n;
            }
            // Until the next level opens, every event of this one is late.
            st.reset(u64::MAX);
        }
        sh.base.store(u64::MAX, Relaxed);
        out.seconds.expected = sh.tracker.owed_per_second();
        // The live page's book is held while the level's histograms and series are taken, so
        // its reader sees the level either open or closed with these final figures.
        let mut book = sh.live.lock();
        // Taken as each subscriber's own histograms and series were: what counted since the
        // last take (deliveries after it are late: the subscribers were reset above).
        let hists = sh.hists.take();
        (out.e2e_from_start, out.e2e_from_accepted) =
            (hists.e2e_from_start, hists.e2e_from_accepted);
        out.stages = hists.stages;
        out.quiet_seconds = hists.quiet_seconds;
        if !cut_short {
            out.quiet_lost = quiet_lost;
        }
        // Taken as each subscriber's own series was: from what counted since the last take.
        out.seconds.delivered = sh.delivered_per_second.to_vec();
        sh.delivered_per_second.reset();
        close_level(
            &mut book,
            &out.seconds.delivered,
            &out.seconds.expected,
            &out.e2e_from_start,
        );
        drop(book);
        if sh.churn_on.load(Relaxed) {
            let mut churn = std::mem::take(&mut *sh.churn_stats());
            churn.ambiguous = ambiguous;
            out.churn = Some(churn);
        }
        out
    }
}
