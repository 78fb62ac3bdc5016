//! The shards' seconds added up by wall-clock second, for `merge --follow`'s live page: a
//! second is handed on once every shard has sent a later one (or ended), so each is the exact
//! sum of every shard's part of it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::shard::record::ShardSecond;
use crate::stats::{from_base64, new_histogram, Histogram};

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
    /// The highest level any shard was running at the second's end.
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
}

/// One second being added up.
#[derive(Debug)]
struct Acc {
    shards: BTreeSet<u32>,
    /// Per level seen: its label and the offered load of the shards at it.
    levels: BTreeMap<u32, (Option<String>, f64)>,
    by_class: BTreeMap<String, u64>,
    latency: Histogram,
    corrected: Histogram,
    inflight: u64,
    cpu_pct: Option<f64>,
    generator_bound: Option<bool>,
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            shards: BTreeSet::new(),
            levels: BTreeMap::new(),
            by_class: BTreeMap::new(),
            latency: new_histogram(),
            corrected: new_histogram(),
            inflight: 0,
            cpu_pct: None,
            generator_bound: None,
        }
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
        let (latency, corrected) = (hist(s.at, &s.latency)?, hist(s.at, &s.corrected)?);
        let a = self.open.entry(s.at).or_default();
        a.shards.insert(index);
        if let Some(l) = s.level {
            let e = a.levels.entry(l).or_insert((s.label, 0.0));
            e.1 += s.offered.unwrap_or(0.0);
        }
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
        if let Some(c) = s.cpu_pct {
            a.cpu_pct = Some(a.cpu_pct.map_or(c, |m: f64| m.max(c)));
        }
        if let Some(b) = s.generator_bound {
            a.generator_bound = Some(a.generator_bound.unwrap_or(false) || b);
        }
        Ok(())
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
            out.push(finish(at, start, a));
        }
        out
    }
}

/// Quantile `q` of `h` in ms, or `None` when it is empty.
fn ms(h: &Histogram, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
}

fn finish(at: u64, start: u64, a: Acc) -> MergedSecond {
    let ended: u64 = a.by_class.values().sum();
    let errors = a
        .by_class
        .iter()
        .filter(|(k, _)| k.as_str() != "accepted" && k.as_str() != "expected_refusal")
        .map(|(_, v)| v)
        .sum();
    let top = a.levels.into_iter().next_back();
    MergedSecond {
        t: (at + 1).saturating_sub(start),
        at,
        shards: a.shards.len(),
        level: top.as_ref().map(|(l, _)| *l),
        label: top.as_ref().and_then(|(_, (label, _))| label.clone()),
        offered: top.map(|(_, (_, o))| o),
        achieved_rps: ended as f64,
        ended,
        errors,
        by_class: a.by_class,
        p50_ms: ms(&a.latency, 0.5),
        p99_ms: ms(&a.latency, 0.99),
        corrected_p50_ms: ms(&a.corrected, 0.5),
        corrected_p99_ms: ms(&a.corrected, 0.99),
        inflight: a.inflight,
        cpu_pct: a.cpu_pct,
        generator_bound: a.generator_bound,
    }
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
    fn a_shard_going_back_in_time_is_refused() {
        let mut m = SecondsMerge::default();
        m.push(1, second(100, 1, 1000)).unwrap();
        let e = m.push(1, second(99, 1, 1000)).unwrap_err();
        assert_eq!(e, "second 99 came after second 100");
    }
}
