//! The isolation verdict of a surge (`--surge`): the quiet tenants' p99 and error % before
//! the surge (the baseline) and during it, with 95 % confidence intervals from a bootstrap
//! over seconds (on delivery: their delivery p99 and loss %, read against a noise band).
//!
//! Pure: the input is the level's quiet seconds (counts and a compact histogram, which merge
//! with `+=`). Seconds are resampled because attempts close in time are correlated and
//! seconds nearly are not; [`RESAMPLES`] resamples with a fixed seed keep a report
//! reproducible (docs/fairness.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::result::Class;
use crate::stats::{TopicStats, TOPIC_BUCKETS};
use hubload_rng::SplitMix64;

/// Bootstrap resamples.
pub const RESAMPLES: u32 = 1000;
/// The bootstrap's seed: the same seconds always give the same interval.
pub const SEED: u64 = 0x1507_a7e5;

/// The quiet tenants over one window of seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuietWindow {
    /// Seconds in the window.
    pub seconds: u32,
    /// The quiet tenants' attempts; on delivery, their deliveries owed (delivered + lost).
    pub attempts: u64,
    /// Of them, attempts of an error class; on delivery, the deliveries lost.
    pub errors: u64,
    /// errors ÷ attempts, % (on delivery, the loss %).
    pub error_pct: f64,
    /// p99 of their latencies, µs (a compact-histogram bucket bound, clamped to the max).
    pub p99_us: u64,
}

/// The isolation verdict of one level with a surge (`summary.json` `levels[].isolation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Isolation {
    /// The surging tenants.
    pub surging: Vec<String>,
    /// K: each surging tenant published K× its designed share.
    pub factor: f64,
    /// The surge's start, seconds into the level's measured time.
    pub from_s: u64,
    /// `@levelN`: this level's number (1-based); its baseline is its own first pass without
    /// the surge (`from_s` seconds), at the same rate as the surged pass after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// Tenants that did not surge (every other tenant).
    pub quiet_tenants: u32,
    /// The quiet tenants before the surge.
    pub baseline: QuietWindow,
    /// The quiet tenants during the surge (and the attempts in flight at the level's end).
    pub surge: QuietWindow,
    /// The quiet tenants' p99 during ÷ before, − 1, %; absent when the baseline's p99 is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_increase_pct: Option<f64>,
    /// Its 95 % confidence interval, % (bootstrap over seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_increase_ci_pct: Option<[f64; 2]>,
    /// On delivery: the noise band's half-width, µs: the larger of the noise floor
    /// (`--noise-floor`) and the baseline seconds' own p99 spread (the largest second's p99
    /// minus the smallest's). Absent on the publish verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_band_us: Option<u64>,
    /// On delivery: whether the p99 change's interval lies within ± the noise band (absent
    /// without an interval, and on the publish verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_noise: Option<bool>,
    /// The quiet tenants' error % (on delivery, loss %) during minus before, percentage points.
    pub error_change_pp: f64,
    /// Its 95 % confidence interval, percentage points.
    pub error_change_ci_pp: [f64; 2],
    /// Bootstrap resamples, and their seed.
    pub resamples: u32,
    pub seed: u64,
    /// The verdict in one sentence.
    pub sentence: String,
}

/// What the verdict says of the surge besides the seconds.
#[derive(Debug, Clone)]
pub struct SurgeShape {
    /// The surging tenants' names.
    pub surging: Vec<String>,
    pub factor: f64,
    /// Seconds of baseline at the start of the level.
    pub from_s: u64,
    pub quiet_tenants: u32,
    /// The delivery verdict's noise floor, µs (`--noise-floor`).
    pub noise_floor_us: u64,
}

/// A window's pooled seconds: attempts, errors, histogram, max.
#[derive(Clone)]
struct Pool {
    n: u64,
    errors: u64,
    buckets: [u64; TOPIC_BUCKETS],
    max_us: u64,
}

impl Pool {
    fn new() -> Self {
        Pool {
            n: 0,
            errors: 0,
            buckets: [0; TOPIC_BUCKETS],
            max_us: 0,
        }
    }

    /// Add one second: its attempts (or deliveries) and, on delivery, `lost` more that were
    /// owed and never came, counted as errors with no latency.
    fn add(&mut self, s: &TopicStats, lost: u64, range: std::ops::Range<usize>) {
        self.n += s.counts.total() + lost;
        self.errors += s.counts.sum_where(Class::is_error) + lost;
        for (i, c) in s.nonempty_buckets().filter(|(i, _)| range.contains(i)) {
            self.buckets[i] += u64::from(c);
        }
        self.max_us = self.max_us.max(s.max_us);
    }

    /// The nearest-rank p99, as [`TopicStats::quantile`] reads it.
    fn p99(&self) -> u64 {
        let n: u64 = self.buckets.iter().sum();
        if n == 0 {
            return 0;
        }
        let rank = ((0.99 * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return crate::stats::bucket_high(i).min(self.max_us);
            }
        }
        self.max_us
    }

    fn error_pct(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.errors as f64 * 100.0 / self.n as f64
        }
    }

    fn window(&self, seconds: usize) -> QuietWindow {
        QuietWindow {
            seconds: seconds as u32,
            attempts: self.n,
            errors: self.errors,
            error_pct: self.error_pct(),
            p99_us: self.p99(),
        }
    }
}

/// p99 increase %, `None` when the baseline's is 0.
fn increase(before: u64, after: u64) -> Option<f64> {
    (before > 0).then(|| (after as f64 / before as f64 - 1.0) * 100.0)
}

/// The 2.5th and 97.5th percentiles of `v` (sorted here; nearest rank).
fn interval(v: &mut [f64]) -> [f64; 2] {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let lo = ((0.025 * n as f64).floor() as usize).min(n - 1);
    let hi = ((0.975 * n as f64).ceil() as usize).clamp(1, n) - 1;
    [v[lo], v[hi]]
}

/// The verdict from a level's quiet seconds (`seconds[s]`: the attempts that ended in second
/// `s`): the baseline is seconds `0..from_s`, the surge the rest. `None` when either window
/// has no attempt.
pub fn verdict(shape: &SurgeShape, seconds: &[TopicStats]) -> Option<Isolation> {
    verdict_of(shape, seconds, &[], Figure::Publish)
}

/// The verdict on the quiet tenants' deliveries by the second each event was sent in:
/// `seconds[s]` holds the latencies (publish start → received) of those delivered,
/// `lost[s]` counts those owed and never delivered (a lost delivery has no latency and no
/// second of receipt, so it counts in the second its publish was sent in). The windows'
/// `attempts` are the deliveries owed, `errors` the lost ones, `error_pct` the loss %.
pub fn delivery_verdict(
    shape: &SurgeShape,
    seconds: &[TopicStats],
    lost: &[u64],
) -> Option<Isolation> {
    verdict_of(shape, seconds, lost, Figure::Delivery)
}

/// What a verdict is on.
#[derive(Clone, Copy, PartialEq)]
enum Figure {
    Publish,
    Delivery,
}

fn verdict_of(
    shape: &SurgeShape,
    seconds: &[TopicStats],
    lost: &[u64],
    figure: Figure,
) -> Option<Isolation> {
    // Second by second: its latencies and its lost deliveries (a second may have only these).
    let empty = TopicStats::default();
    let seconds: Vec<(&TopicStats, u64)> = (0..seconds.len().max(lost.len()))
        .map(|s| {
            let l = lost.get(s).copied().unwrap_or(0);
            (seconds.get(s).unwrap_or(&empty), l)
        })
        .collect();
    let cut = (shape.from_s as usize).min(seconds.len());
    let (before, during) = seconds.split_at(cut);
    // Only the buckets some second uses are added up, resample after resample.
    let used = |i: &usize| seconds.iter().any(|(s, _)| s.bucket(*i) > 0);
    let lo = (0..TOPIC_BUCKETS).find(used).unwrap_or(0);
    let hi = (0..TOPIC_BUCKETS).rev().find(used).map_or(0, |i| i + 1);
    let pool = |secs: &[(&TopicStats, u64)]| {
        let mut p = Pool::new();
        secs.iter().for_each(|(s, l)| p.add(s, *l, lo..hi));
        p
    };
    let (b, d) = (pool(before), pool(during));
    if b.n == 0 || d.n == 0 {
        return None;
    }
    let mut rng = SplitMix64::for_event(SEED, 0);
    let mut draw = |from: &[(&TopicStats, u64)]| {
        let mut p = Pool::new();
        for _ in 0..from.len() {
            let (s, l) = from[rng.below(from.len() as u64) as usize];
            p.add(s, l, lo..hi);
        }
        p
    };
    let (mut p99s, mut errs) = (Vec::new(), Vec::new());
    for _ in 0..RESAMPLES {
        let (rb, rd) = (draw(before), draw(during));
        if let Some(x) = increase(rb.p99(), rd.p99()) {
            p99s.push(x);
        }
        if rb.n > 0 && rd.n > 0 {
            errs.push(rd.error_pct() - rb.error_pct());
        }
    }
    let p99_increase_pct = increase(b.p99(), d.p99());
    let p99_increase_ci_pct = p99_increase_pct
        .filter(|_| !p99s.is_empty())
        .map(|_| interval(&mut p99s));
    let error_change_pp = d.error_pct() - b.error_pct();
    let error_change_ci_pp = if errs.is_empty() {
        [error_change_pp; 2]
    } else {
        interval(&mut errs)
    };
    let (baseline, surge) = (b.window(before.len()), d.window(during.len()));
    let noise_band_us = (figure == Figure::Delivery).then(|| {
        let p99s: Vec<u64> = (before.iter())
            .filter(|(s, _)| !s.is_empty())
            .map(|(s, _)| s.quantile(0.99))
            .collect();
        let spread = p99s.iter().max().unwrap_or(&0) - p99s.iter().min().unwrap_or(&0);
        shape.noise_floor_us.max(spread)
    });
    // The interval is in % of the baseline's p99: the band too.
    let within_noise = noise_band_us
        .zip(p99_increase_ci_pct)
        .map(|(band, [lo, hi])| {
            let band_pct = band as f64 * 100.0 / baseline.p99_us as f64;
            -band_pct <= lo && hi <= band_pct
        });
    let sentence = sentence(
        shape,
        &baseline,
        &surge,
        (p99_increase_pct, p99_increase_ci_pct),
        noise_band_us.zip(within_noise),
        figure,
    );
    Some(Isolation {
        surging: shape.surging.clone(),
        factor: shape.factor,
        from_s: shape.from_s,
        level: None,
        quiet_tenants: shape.quiet_tenants,
        baseline,
        surge,
        p99_increase_pct,
        p99_increase_ci_pct,
        noise_band_us,
        within_noise,
        error_change_pp,
        error_change_ci_pp,
        resamples: RESAMPLES,
        seed: SEED,
        sentence,
    })
}

/// "while tenant0007 published 10× its share, the other 9 tenants' p99 rose 38 % (95 % CI
/// +30 % to +46 %) and their errors from 0.0 % to 2.1 %"; on delivery, "… delivery p99 rose
/// … and their loss from 0.0 % to 2.1 %".
fn sentence(
    shape: &SurgeShape,
    b: &QuietWindow,
    d: &QuietWindow,
    (up, ci): (Option<f64>, Option<[f64; 2]>),
    noise: Option<(u64, bool)>,
    figure: Figure,
) -> String {
    let who = match shape.surging.as_slice() {
        [one] => format!("{one} published {}× its share", shape.factor),
        [rest @ .., last] => format!(
            "{} and {last} published {}× their share",
            rest.join(", "),
            shape.factor
        ),
        [] => "nobody surged".into(),
    };
    let moved = match (up, ci) {
        (Some(x), Some([l, h])) => format!(
            "{} {:.0} % (95 % CI {l:+.0} % to {h:+.0} %)",
            if x < 0.0 { "fell" } else { "rose" },
            x.abs()
        ),
        _ => format!("went from {} µs to {} µs", b.p99_us, d.p99_us),
    };
    let tenants = match shape.quiet_tenants {
        1 => "the other tenant's".to_string(),
        n => format!("the other {n} tenants'"),
    };
    match figure {
        Figure::Publish => format!(
            "while {who}, {tenants} p99 {moved} and their errors from {:.1} % to {:.1} %",
            b.error_pct, d.error_pct
        ),
        Figure::Delivery => {
            let noise = match noise {
                Some((band, true)) => format!(", within noise (±{})", ms(band)),
                Some((band, false)) => format!(", beyond noise (±{})", ms(band)),
                None => String::new(),
            };
            format!(
                "while {who}, {tenants} delivery p99 {moved}{noise}, and their loss from {:.1} % \
                 to {:.1} %",
                b.error_pct, d.error_pct
            )
        }
    }
}

/// `us` as milliseconds: "100 ms", "2.5 ms".
fn ms(us: u64) -> String {
    match us % 1000 {
        0 => format!("{} ms", us / 1000),
        _ => format!("{:.1} ms", us as f64 / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second of `n` attempts at `us` µs, `errors` of them 503s.
    fn second(n: u64, us: u64, errors: u64) -> TopicStats {
        let mut t = TopicStats::default();
        for i in 0..n {
            let c = if i < errors {
                Class::Http503
            } else {
                Class::Accepted
            };
            t.record(c, us);
        }
        t
    }

    fn shape(from_s: u64) -> SurgeShape {
        SurgeShape {
            surging: vec!["tenant0007".into()],
            factor: 10.0,
            from_s,
            quiet_tenants: 9,
            noise_floor_us: 100_000,
        }
    }

    #[test]
    fn identical_seconds_give_the_exact_change_and_a_point_interval() {
        // Every baseline second: 100 attempts at 1,000 µs; every surge second: 100 at
        // 2,000 µs, 2 of them errors. Any resample pools the same shape: p99 1,000 → 2,000 µs
        // (the buckets' bounds clamped to the max), +100 %, errors 0 → 2 %: every interval
        // is a point.
        let mut secs = vec![second(100, 1000, 0); 5];
        secs.extend(vec![second(100, 2000, 2); 5]);
        let v = verdict(&shape(5), &secs).unwrap();
        assert_eq!((v.baseline.seconds, v.surge.seconds), (5, 5));
        assert_eq!((v.baseline.attempts, v.surge.attempts), (500, 500));
        assert_eq!((v.baseline.p99_us, v.surge.p99_us), (1000, 2000));
        assert_eq!(v.p99_increase_pct, Some(100.0));
        assert_eq!(v.p99_increase_ci_pct, Some([100.0, 100.0]));
        assert_eq!((v.baseline.error_pct, v.surge.error_pct), (0.0, 2.0));
        assert_eq!(v.error_change_pp, 2.0);
        assert_eq!(v.error_change_ci_pp, [2.0, 2.0]);
        assert_eq!(
            v.sentence,
            "while tenant0007 published 10× its share, the other 9 tenants' p99 rose 100 % \
             (95 % CI +100 % to +100 %) and their errors from 0.0 % to 2.0 %"
        );
    }

    #[test]
    fn no_change_gives_zero_and_an_interval_around_it() {
        // Both windows: seconds of 100 attempts at 1,000 µs and at 3,000 µs, alternating.
        // Pooled, both p99s are 3,000 µs: no change. A resample of 4 seconds is all
        // 1,000 µs ones with chance 1/16, so about 1/16 × 15/16 ≈ 5.9 % of the resamples
        // have p99 1,000 → 3,000 µs (+200 %) and as many 3,000 → 1,000 µs (−66.7 %), more
        // than the 2.5 % each tail holds: the interval is exactly those two.
        let secs: Vec<TopicStats> = (0..8)
            .map(|i| second(100, if i % 2 == 0 { 1000 } else { 3000 }, 0))
            .collect();
        let v = verdict(&shape(4), &secs).unwrap();
        assert_eq!((v.baseline.p99_us, v.surge.p99_us), (3000, 3000));
        assert_eq!(v.p99_increase_pct, Some(0.0));
        let [lo, hi] = v.p99_increase_ci_pct.unwrap();
        assert!((lo - (1000.0 / 3000.0 - 1.0) * 100.0).abs() < 1e-9, "{lo}");
        assert!((hi - 200.0).abs() < 1e-9, "{hi}");
        assert_eq!(v.error_change_ci_pp, [0.0, 0.0]);
        assert!(
            v.sentence
                .contains("p99 rose 0 % (95 % CI -67 % to +200 %)"),
            "{}",
            v.sentence
        );
        // The seed is fixed: the same seconds, the same interval.
        assert_eq!(verdict(&shape(4), &secs), Some(v));
    }

    #[test]
    fn lost_deliveries_count_in_their_publish_s_second_with_no_latency() {
        // Baseline: 4 seconds of 100 deliveries at 1,000 µs, none lost. Surge: 4 seconds of
        // 90 delivered at 2,000 µs and 10 lost, then a second whose 5 were all lost.
        let mut secs = vec![second(100, 1000, 0); 4];
        secs.extend(vec![second(90, 2000, 0); 4]);
        let lost = [0, 0, 0, 0, 10, 10, 10, 10, 5];
        let v = delivery_verdict(&shape(4), &secs, &lost).unwrap();
        assert_eq!((v.baseline.seconds, v.surge.seconds), (4, 5));
        assert_eq!((v.baseline.attempts, v.baseline.errors), (400, 0));
        assert_eq!((v.surge.attempts, v.surge.errors), (405, 45));
        // Latency from the delivered alone.
        assert_eq!((v.baseline.p99_us, v.surge.p99_us), (1000, 2000));
        assert_eq!(v.error_change_pp, 45.0 * 100.0 / 405.0);
        // A resample of the surge's 5 seconds holds k copies of the all-lost one, k ~
        // Binomial(5, 1/5): k = 0 (loss 50 of 500) has chance 0.33, so the low end is 10 %;
        // k ≥ 3 has chance 0.058 and k ≥ 4 0.0067, so the high end is k = 3: 35 of 215.
        assert_eq!(v.error_change_ci_pp, [10.0, 35.0 * 100.0 / 215.0]);
        assert_eq!(
            v.sentence,
            "while tenant0007 published 10× its share, the other 9 tenants' delivery p99 rose \
             100 % (95 % CI +100 % to +100 %), within noise (±100 ms), and their loss from \
             0.0 % to 11.1 %"
        );
        // Without losses the windows count the deliveries alone.
        let v = delivery_verdict(&shape(4), &secs, &[]).unwrap();
        assert_eq!(
            (v.surge.attempts, v.surge.errors, v.surge.seconds),
            (360, 0, 4)
        );
    }

    #[test]
    fn the_noise_band_is_the_floor_or_the_baseline_s_own_spread_whichever_is_wider() {
        // Baseline: seconds at 1,000 and 3,000 µs alternating (their p99s 2,000 µs apart, the
        // pooled p99 3,000); surge: seconds at 2,000 µs. The change is −33 %, its interval
        // −33 % to +100 % (a resample of the 4 baseline seconds is all 1,000 µs ones with
        // chance 1/16, more than the 2.5 % a tail holds).
        let mut secs: Vec<TopicStats> = (0..4)
            .map(|i| second(100, if i % 2 == 0 { 1000 } else { 3000 }, 0))
            .collect();
        secs.extend(vec![second(100, 2000, 0); 4]);
        let mut s = shape(4);
        s.noise_floor_us = 1000;
        let v = delivery_verdict(&s, &secs, &[]).unwrap();
        let down = (2000.0 / 3000.0 - 1.0) * 100.0;
        assert_eq!(v.p99_increase_ci_pct, Some([down, 100.0]));
        // The baseline's own spread (2 ms, 67 % of 3 ms) is wider than the 1 ms floor, and
        // +100 % lies beyond it.
        assert_eq!((v.noise_band_us, v.within_noise), (Some(2000), Some(false)));
        assert!(
            v.sentence
                .contains("fell 33 % (95 % CI -33 % to +100 %), beyond noise (±2 ms), and"),
            "{}",
            v.sentence
        );
        // A 5 ms floor (167 % of 3 ms) holds the whole interval.
        s.noise_floor_us = 5000;
        let v = delivery_verdict(&s, &secs, &[]).unwrap();
        assert_eq!((v.noise_band_us, v.within_noise), (Some(5000), Some(true)));
        assert!(
            v.sentence.contains(", within noise (±5 ms), "),
            "{}",
            v.sentence
        );
        // The publish verdict has no band.
        let v = verdict(&s, &secs).unwrap();
        assert_eq!((v.noise_band_us, v.within_noise), (None, None));
    }

    #[test]
    fn a_window_without_attempts_gives_no_verdict() {
        let secs = vec![second(100, 1000, 0); 3];
        assert_eq!(verdict(&shape(3), &secs), None, "no surge second");
        let mut secs = vec![TopicStats::default(); 3];
        secs.push(second(10, 1000, 0));
        assert_eq!(verdict(&shape(3), &secs), None, "no baseline attempt");
    }

    #[test]
    fn several_surging_tenants_are_named_together() {
        let mut s = shape(1);
        s.surging = vec![
            "tenant0001".into(),
            "tenant0002".into(),
            "tenant0005".into(),
        ];
        s.quiet_tenants = 1;
        s.factor = 2.5;
        let secs = vec![second(10, 1000, 0), second(10, 500, 5)];
        let v = verdict(&s, &secs).unwrap();
        assert_eq!(v.p99_increase_pct, Some(-50.0));
        assert_eq!(
            v.sentence,
            "while tenant0001, tenant0002 and tenant0005 published 2.5× their share, the other \
             tenant's p99 fell 50 % (95 % CI -50 % to -50 %) and their errors from 0.0 % to 50.0 %"
        );
    }
}
