//! The shards' seconds added up by wall-clock second, for `merge --follow`'s live page: a
//! second is handed on once every shard has sent a later one (or ended), so each is the exact
//! sum of every shard's part of it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::shard::record::ShardSecond;
use crate::stats::{from_base64, new_histogram, Histogram};
use crate::subscriber::DeliveryPart;

/// Seconds held at most while waiting for a slow shard (an hour of seconds); past it the
/// oldest is handed on with what came.
const HOLD: usize = 3_600;

/// One merged second, as the live page's `second` record shows it.
#[derive(Debug, Clone, Serialize)]
pub struct MergedSecond {
    /// Seconds since the merged run's start (its earliest shard's), at the second's end.
    pub t: u64,
    /// The wall-clock second, Unix seconds.
    pub at: u64,
    /// How many shards' records it adds up.
    pub shards: usize,
    /// The level these attempts are of (a second a level ended in has a record for it, and
    /// one for the level that began).
    pub level: Option<u32>,
    /// That level's label.
    pub label: Option<String>,
    /// The shards' parts of that level's load added (rate or concurrency).
    pub offered: Option<f64>,
    /// Attempts ended in the second (the second is one second long).
    pub achieved_rps: f64,
    /// Attempts ended in the second.
    pub ended: u64,
    /// Those that are not `accepted` or `expected_refusal`.
    pub errors: u64,
    /// Attempts ended, by class.
    pub by_class: BTreeMap<String, u64>,
    /// Quantiles of the second's latency, ms (null when nothing ended).
    pub p50_ms: Option<f64>,
    /// See `p50_ms`.
    pub p99_ms: Option<f64>,
    /// Quantiles of the latency from the intended start (open model), ms.
    pub corrected_p50_ms: Option<f64>,
    /// See `corrected_p50_ms`.
    pub corrected_p99_ms: Option<f64>,
    /// Attempts in flight at the second's end, every shard's.
    pub inflight: u64,
    /// The busiest shard's CPU share (%).
    pub cpu_pct: Option<f64>,
    /// Some shard was generator-bound in the second.
    pub generator_bound: Option<bool>,
    /// Some shard was paused through its `--web` control at the second's end (null when no
    /// shard serves a page).
    pub paused: Option<bool>,
    /// The shards' deliveries of the second added up, as a run's page shows them (null
    /// without subscribers; on the second's last record only).
    pub delivery: Option<Value>,
    /// Shard 0's scrape round of the second (null when none came; on the last record only).
    pub server: Option<Value>,
}

/// One level's part of a second being added up.
#[derive(Debug)]
struct LevelAcc {
    label: Option<String>,
    /// The offered loads of the shards at the level added.
    offered: f64,
    by_class: BTreeMap<String, u64>,
    latency: Histogram,
    corrected: Histogram,
    /// Attempts in flight at the second's end, of the shards running the level then.
    inflight: u64,
}

impl LevelAcc {
    fn new(label: Option<String>) -> Self {
        LevelAcc {
            label,
            offered: 0.0,
            by_class: BTreeMap::new(),
            latency: new_histogram(),
            corrected: new_histogram(),
            inflight: 0,
        }
    }
}

/// One second being added up: each level's part apart (`None`: before the first level or
/// between levels), so the merged seconds of a level add up to its counts.
#[derive(Debug, Default)]
struct Acc {
    shards: BTreeSet<u32>,
    levels: BTreeMap<Option<u32>, LevelAcc>,
    cpu_pct: Option<f64>,
    generator_bound: Option<bool>,
    paused: Option<bool>,
    /// Delivered, owed, backlog and the deliveries' end-to-end latency (µs).
    delivery: Option<(u64, u64, u64, Histogram)>,
    server: Option<Value>,
}

impl Acc {
    /// Add one level's part (a shard's record, or a level's last part in it).
    fn add(&mut self, s: ShardSecond) -> Result<(), String> {
        let (latency, corrected) = (hist(s.at, &s.latency)?, hist(s.at, &s.corrected)?);
        let a = self
            .levels
            .entry(s.level)
            .or_insert_with(|| LevelAcc::new(s.label));
        a.offered += s.offered.unwrap_or(0.0);
        for (k, v) in s.by_class {
            *a.by_class.entry(k).or_default() += v;
        }
        // One layout everywhere (checked by `from_base64`), so adding cannot fail on bounds.
        if let Some(h) = latency {
            let _ = a.latency.add(h);
        }
        if let Some(h) = corrected {
            let _ = a.corrected.add(h);
        }
        a.inflight += s.inflight;
        Ok(())
    }
}

/// The seconds in progress.
#[derive(Debug, Default)]
pub struct SecondsMerge {
    open: BTreeMap<u64, Acc>,
    /// Each shard's latest second.
    passed: BTreeMap<u32, u64>,
    ended: BTreeSet<u32>,
    /// Seconds up to here have been handed on.
    done: Option<u64>,
    /// Deliveries and deliveries owed in the seconds handed on.
    delivered_total: u64,
    owed_total: u64,
}

/// `h` decoded, or why not.
fn hist(at: u64, b64: &str) -> Result<Option<Histogram>, String> {
    if b64.is_empty() {
        return Ok(None);
    }
    from_base64(b64)
        .map(Some)
        .map_err(|e| format!("second {at}: {e}"))
}

impl SecondsMerge {
    /// Take shard `index`'s second; the error says what is wrong with it.
    pub fn push(&mut self, index: u32, s: ShardSecond) -> Result<(), String> {
        let last = self.passed.entry(index).or_insert(s.at);
        if s.at < *last {
            return Err(format!("second {} came after second {last}", s.at));
        }
        *last = s.at;
        if self.done.is_some_and(|d| s.at <= d) {
            // Only past the hold (a shard an hour behind the others) can a second come after
            // it was handed on; the view leaves it out.
            return Ok(());
        }
        let a = self.open.entry(s.at).or_default();
        a.shards.insert(index);
        if let Some(c) = s.cpu_pct {
            a.cpu_pct = Some(a.cpu_pct.map_or(c, |m: f64| m.max(c)));
        }
        if let Some(b) = s.generator_bound {
            a.generator_bound = Some(a.generator_bound.unwrap_or(false) || b);
        }
        if let Some(p) = s.paused {
            a.paused = Some(a.paused.unwrap_or(false) || p);
        }
        let mut s = s;
        if let Some(d) = s.delivery.take() {
            let e2e = hist(s.at, &d.e2e)?;
            let (delivered, owed, backlog, h) =
                a.delivery.get_or_insert_with(|| (0, 0, 0, new_histogram()));
            *delivered += d.delivered;
            *owed += d.owed;
            *backlog += d.backlog;
            if let Some(e) = e2e {
                let _ = h.add(e);
            }
        }
        if index == 0 {
            a.server = s.server.take().or(a.server.take());
        }
        for e in std::mem::take(&mut s.ended) {
            a.add(e)?;
        }
        a.add(s)
    }

    /// Shard `index` sends no more seconds.
    pub fn end(&mut self, index: u32) {
        self.ended.insert(index);
    }

    /// The seconds every one of `count` shards has passed (or ended before), in order, as
    /// seconds since `start` (Unix seconds); with `all`, every second held.
    pub fn take(&mut self, count: u32, start: u64, all: bool) -> Vec<MergedSecond> {
        let ready = (0..count)
            .filter(|i| !self.ended.contains(i))
            .map(|i| self.passed.get(&i).copied())
            .min()
            .map_or(Some(u64::MAX), |m| m);
        let mut out = Vec::new();
        while let Some(&at) = self.open.keys().next() {
            let due = all || ready.is_some_and(|r| at < r) || self.open.len() > HOLD;
            if !due {
                break;
            }
            let Some(a) = self.open.remove(&at) else {
                break;
            };
            self.done = Some(at);
            if let Some(d) = &a.delivery {
                self.delivered_total += d.0;
                self.owed_total += d.1;
            }
            out.extend(finish(
                at,
                start,
                a,
                (self.delivered_total, self.owed_total),
            ));
        }
        out
    }
}

/// Quantile `q` of `h` in ms, or `None` when it is empty.
fn ms(h: &Histogram, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
}

/// The merged records of second `at`: one per level with a part in it, in level order (a
/// level that ended in the second before the one that began); the last carries the second's
/// deliveries (`totals`: the run's so far, delivered and owed) and scrape round.
fn finish(at: u64, start: u64, a: Acc, totals: (u64, u64)) -> Vec<MergedSecond> {
    let shards = a.shards.len();
    // A record of no level (between levels) only when no level had a part in the second.
    let levels = a.levels.len();
    let mut out: Vec<MergedSecond> = a
        .levels
        .into_iter()
        .filter(|(level, l)| level.is_some() || levels == 1 || !l.by_class.is_empty())
        .map(|(level, l)| {
            let ended: u64 = l.by_class.values().sum();
            let errors = l
                .by_class
                .iter()
                .filter(|(k, _)| k.as_str() != "accepted" && k.as_str() != "expected_refusal")
                .map(|(_, v)| v)
                .sum();
            MergedSecond {
                t: (at + 1).saturating_sub(start),
                at,
                shards,
                level,
                offered: level.map(|_| l.offered),
                label: l.label,
                achieved_rps: ended as f64,
                ended,
                errors,
                by_class: l.by_class,
                p50_ms: ms(&l.latency, 0.5),
                p99_ms: ms(&l.latency, 0.99),
                corrected_p50_ms: ms(&l.corrected, 0.5),
                corrected_p99_ms: ms(&l.corrected, 0.99),
                inflight: l.inflight,
                cpu_pct: a.cpu_pct,
                generator_bound: a.generator_bound,
                paused: a.paused,
                delivery: None,
                server: None,
            }
        })
        .collect();
    if let Some(last) = out.last_mut() {
        last.delivery = a.delivery.map(|(delivered, owed, backlog, e2e_us)| {
            let part = DeliveryPart {
                delivered,
                owed,
                backlog,
                e2e_us,
            };
            part.shown(totals)
        });
        last.server = a.server;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::to_base64;

    fn second(at: u64, accepted: u64, lat_us: u64) -> ShardSecond {
        let mut h = new_histogram();
        h.record_n(lat_us, accepted).unwrap();
        ShardSecond {
            at,
            level: Some(0),
            label: Some("4".into()),
            offered: Some(2.0),
            by_class: [("accepted".to_string(), accepted)].into(),
            latency: to_base64(&h).unwrap(),
            inflight: 1,
            ..ShardSecond::default()
        }
    }

    #[test]
    fn a_second_waits_for_every_shard_then_is_their_sum() {
        let mut m = SecondsMerge::default();
        m.push(0, second(100, 5, 1000)).unwrap();
        m.push(0, second(101, 7, 1000)).unwrap();
        // Shard 1 has not passed second 100 yet.
        assert!(m.take(2, 90, false).is_empty());
        m.push(1, second(100, 3, 3000)).unwrap();
        assert!(
            m.take(2, 90, false).is_empty(),
            "shard 1 may still add to 100"
        );
        m.push(1, second(101, 1, 1000)).unwrap();
        let got = m.take(2, 90, false);
        assert_eq!(got.len(), 1);
        let s = &got[0];
        assert_eq!((s.at, s.t, s.shards, s.ended), (100, 11, 2, 8));
        assert_eq!(s.by_class["accepted"], 8);
        assert_eq!((s.offered, s.inflight), (Some(4.0), 2));
        // 5 at 1 ms and 3 at 3 ms: the median is 1 ms, the p99 3 ms.
        assert_eq!(s.p50_ms, Some(1.0));
        assert!((s.p99_ms.unwrap() - 3.0).abs() < 0.01, "{s:?}");
        // Both ended: the rest goes.
        m.end(0);
        m.end(1);
        let rest = m.take(2, 90, false);
        assert_eq!(rest.iter().map(|s| s.ended).collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn a_second_a_level_ended_in_gives_each_level_its_own_sum() {
        let mut m = SecondsMerge::default();
        for (shard, (tail, head)) in [(3, 4), (5, 0)].into_iter().enumerate() {
            let mut s = second(100, head, 2000);
            s.level = Some(1);
            s.label = Some("8".into());
            s.ended = vec![second(100, tail, 1000)];
            m.push(shard as u32, s).unwrap();
        }
        m.end(0);
        m.end(1);
        let got = m.take(2, 90, false);
        let levels: Vec<_> = got
            .iter()
            .map(|s| (s.level, s.label.as_deref(), s.ended, s.shards, s.inflight))
            .collect();
        // Level 0's last parts (3 + 5), then level 1's first (4 + 0); the in-flight attempts
        // of both parts (1 each) are each of their own level's records.
        assert_eq!(
            levels,
            [(Some(0), Some("4"), 8, 2, 2), (Some(1), Some("8"), 4, 2, 2)]
        );
        assert_eq!(got[0].p99_ms, Some(1.0));
        assert!((got[1].p99_ms.unwrap() - 2.0).abs() < 0.01, "{:?}", got[1]);
    }

    #[test]
    fn a_shard_going_back_in_time_is_refused() {
        let mut m = SecondsMerge::default();
        m.push(1, second(100, 1, 1000)).unwrap();
        let e = m.push(1, second(99, 1, 1000)).unwrap_err();
        assert_eq!(e, "second 99 came after second 100");
    }
}
