//! The capacity finder: the highest load that still meets an SLO, found by stepping up
//! geometrically and then bisecting, within a time budget. Knows nothing about HTTP: a probe
//! function runs one level at a given load and returns its row.
//!
//! The search, the stopping rule and what counts as passing (every SLO bound on the probe's
//! own row, at least one attempt measured) are in docs/gates.md, "The capacity finder".

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::threshold::check;
use super::Threshold;
use crate::report::judge::verdict::Verdict;
use crate::report::model::LevelReport;

/// What the capacity finder found, with full rows.
pub type CapacityResult = crate::report::judge::verdict::CapacityResult<LevelReport>;

/// Judge one probe's row: every bound, plus "at least one attempt".
fn judge_probe(slo: &[Threshold], row: &LevelReport) -> (bool, Vec<Verdict>) {
    let mut verdicts: Vec<Verdict> = slo.iter().map(|t| check(t, row)).collect();
    if row.derived.samples == 0 {
        verdicts.push(Verdict {
            threshold: "samples>0".into(),
            level: row.label.clone(),
            actual: "0".into(),
            bound: "> 0".into(),
            passed: false,
        });
    }
    (verdicts.iter().all(|v| v.passed), verdicts)
}

/// Why `row`'s level was generator-bound (`observe/`), if it was.
fn generator_bound(row: &LevelReport) -> Option<String> {
    if row.generator_bound != Some(true) {
        return None;
    }
    let why = row
        .generator
        .as_ref()
        .map(|g| g.bound_because.join("; "))
        .unwrap_or_default();
    Some(format!("level {} was generator-bound ({why})", row.label))
}

/// Whether the bisection is done: the gap is within max(1, 5% of `lo`), or no whole number
/// lies strictly between the two.
fn converged(lo: f64, hi: f64, integer: bool) -> bool {
    hi - lo <= (0.05 * lo).max(1.0) || (integer && hi - lo <= 1.0)
}

fn midpoint(lo: f64, hi: f64, integer: bool) -> f64 {
    let m = (lo + hi) / 2.0;
    if integer {
        m.floor()
    } else {
        m
    }
}

/// Search for the highest load in `[start, max]` whose level meets every bound of `slo`.
///
/// `probe(load)` runs one level at `load` (a concurrency when `integer`, else a rate) and
/// returns its row. `budget` bounds the whole search (see the module docs for how). Time is
/// measured with `tokio::time`, so paused-time tests can drive it.
pub async fn find_capacity<F, Fut>(
    mut probe: F,
    start: f64,
    max: f64,
    slo: &[Threshold],
    budget: Duration,
    integer: bool,
) -> CapacityResult
where
    F: FnMut(f64) -> Fut,
    Fut: Future<Output = LevelReport>,
{
    let began = Instant::now();
    let mut longest = Duration::ZERO;
    let mut out = CapacityResult {
        best: None,
        first_fail: None,
        probes: Vec::new(),
        stopped_by_budget: false,
        stopped_by_generator: None,
    };
    let round = |x: f64| if integer { x.round().max(1.0) } else { x };
    let max = round(max);
    let mut load = round(start).min(max);
    // Runs one probe, unless the budget forbids it; records it; returns Some(passed).
    let mut step = async |load: f64, out: &mut CapacityResult| -> Option<bool> {
        if !out.probes.is_empty() && began.elapsed() + longest > budget {
            out.stopped_by_budget = true;
            return None;
        }
        let t0 = Instant::now();
        let row = probe(load).await;
        longest = longest.max(t0.elapsed());
        let (passed, verdicts) = judge_probe(slo, &row);
        out.probes.push((load, passed));
        if let Some(why) = generator_bound(&row) {
            // Neither a pass nor the knee: what broke was hubload.
            out.stopped_by_generator = Some(why);
            return None;
        }
        if passed {
            out.best = Some(row);
        } else {
            out.first_fail = Some((row, verdicts));
        }
        Some(passed)
    };
    // 1. Geometric steps.
    let (mut lo, mut hi) = loop {
        match step(load, &mut out).await {
            None => return out,
            Some(true) if load >= max => return out,
            Some(true) => load = round(load * 2.0).min(max),
            Some(false) => match out.probes.len() {
                1 => return out,
                n => break (out.probes[n - 2].0, load),
            },
        }
    };
    // 2. Bisection.
    while !converged(lo, hi, integer) {
        let mid = midpoint(lo, hi, integer);
        match step(mid, &mut out).await {
            None => break,
            Some(true) => lo = mid,
            Some(false) => hi = mid,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::judge::text::render_capacity;
    use crate::report::model::build::level_report;
    use crate::result::Outcome;
    use crate::stats::LevelStats;
    use std::cell::RefCell;

    /// A level of 100 accepted attempts that each take `load` ms.
    fn row_for(load: f64) -> LevelReport {
        let lat = Duration::from_secs_f64(load / 1000.0);
        let s = crate::report::judge::known_latencies::stats(&[(lat, Outcome::Accepted, 100)]);
        level_report(&format!("{load}"), None, None, &s, false)
    }

    fn slo(s: &str) -> Vec<Threshold> {
        s.split(',').map(|t| t.parse().unwrap()).collect()
    }

    /// A fake probe: latency (ms) equals the load; each probe takes 10 s of (paused) time.
    fn fake(
        seen: &RefCell<Vec<f64>>,
    ) -> impl FnMut(f64) -> std::pin::Pin<Box<dyn Future<Output = LevelReport>>> + '_ {
        move |load| {
            seen.borrow_mut().push(load);
            Box::pin(async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                row_for(load)
            })
        }
    }

    /// Run the finder over the fake probe with an SLO, a budget in seconds and the load kind.
    async fn search(
        start: f64,
        max: f64,
        bounds: &str,
        budget_s: u64,
        integer: bool,
    ) -> (CapacityResult, Vec<f64>) {
        let seen = RefCell::new(Vec::new());
        let r = find_capacity(
            fake(&seen),
            start,
            max,
            &slo(bounds),
            Duration::from_secs(budget_s),
            integer,
        )
        .await;
        let seen = seen.into_inner();
        // The probe ran exactly for the recorded loads, no more.
        assert_eq!(seen, r.probes.iter().map(|p| p.0).collect::<Vec<_>>());
        (r, seen)
    }

    /// `--slo` speaks the one gate language, fairness included: a hub that stays fast but
    /// starves one of 4 tenants from 12 on is judged on Jain's index, not only on latency.
    #[tokio::test(start_paused = true)]
    async fn the_slo_judges_tenant_fairness_as_a_threshold_does() {
        let probe = |load: f64| async move {
            let mut row = row_for(1.0);
            row.label = format!("{load}");
            row.fairness = Some(crate::fairness::Fairness {
                tenants: 4,
                jain_index: Some(if load < 12.0 { 1.0 } else { 0.75 }),
                p99_spread: None,
                median_p99_us: 1_000,
                error_spread_pp: 0.0,
                median_error_pct: 0.0,
                worst_p99: Vec::new(),
                worst_errors: Vec::new(),
                by_tenant: Vec::new(),
                delivery: None,
            });
            row
        };
        let r = find_capacity(
            probe,
            1.0,
            64.0,
            &slo("p99<300ms,tenant_fairness>0.95"),
            Duration::from_secs(3600),
            true,
        )
        .await;
        // Doubling to 16 (the first unfair probe), then bisecting 8..16.
        assert_eq!(
            r.probes,
            [
                (1.0, true),
                (2.0, true),
                (4.0, true),
                (8.0, true),
                (16.0, false),
                (12.0, false),
                (10.0, true),
                (11.0, true)
            ]
        );
        assert_eq!(r.best.as_ref().unwrap().label, "11");
        let (row, verdicts) = r.first_fail.as_ref().unwrap();
        assert_eq!(row.label, "12");
        let judged: Vec<(&str, bool, &str)> = verdicts
            .iter()
            .map(|v| (v.threshold.as_str(), v.passed, v.actual.as_str()))
            .collect();
        assert_eq!(
            judged,
            [
                ("p99<300ms", true, "1.000ms"),
                ("tenant_fairness>0.95", false, "0.750")
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_generator_bound_level_is_neither_best_nor_knee() {
        // Latency = load (ms) as in `fake`, but from 64 on hubload's CPU ran out.
        let probe = |load: f64| async move {
            let mut row = row_for(load);
            row.generator_bound = Some(load >= 64.0);
            row.generator = Some(crate::report::model::observations::GeneratorLevel {
                bound_because: vec!["CPU 97 % of 0.20 cores (cgroup v1)".into()],
                ..Default::default()
            });
            row
        };
        let r = find_capacity(
            probe,
            1.0,
            4096.0,
            &slo("p99<300ms"),
            Duration::from_secs(3600),
            true,
        )
        .await;
        assert_eq!(
            r.probes.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        );
        assert_eq!(r.best.as_ref().unwrap().label, "32");
        assert!(r.first_fail.is_none());
        assert_eq!(
            r.stopped_by_generator.as_deref(),
            Some("level 64 was generator-bound (CPU 97 % of 0.20 cores (cgroup v1))")
        );
        assert!(render_capacity(&r).contains("stopped: level 64 was generator-bound"));
    }

    #[tokio::test(start_paused = true)]
    async fn steps_up_then_bisects_to_the_exact_value() {
        let (r, seen) = search(1.0, 4096.0, "p99<300ms", 3600, true).await;
        // 1..256 pass, 512 fails; bisect 384 ✗, 320 ✗, 288 ✓, 304 ✗, 296 ✓; gap 8 ≤ 5% of 296.
        let want = [
            (1.0, true),
            (2.0, true),
            (4.0, true),
            (8.0, true),
            (16.0, true),
            (32.0, true),
            (64.0, true),
            (128.0, true),
            (256.0, true),
            (512.0, false),
            (384.0, false),
            (320.0, false),
            (288.0, true),
            (304.0, false),
            (296.0, true),
        ];
        assert_eq!(r.probes, want);
        assert_eq!(seen, want.map(|p| p.0));
        assert_eq!(r.best.as_ref().unwrap().label, "296");
        let (fail, verdicts) = r.first_fail.as_ref().unwrap();
        assert_eq!(fail.label, "304");
        assert!(verdicts
            .iter()
            .any(|v| !v.passed && v.threshold == "p99<300ms"));
        assert!(!r.stopped_by_budget);
        let text = render_capacity(&r);
        assert!(
            text.contains("highest level meeting the SLO: 296"),
            "{text}"
        );
        assert!(text.contains("first level breaking the SLO: 304"), "{text}");
        assert!(text.contains("p99<300ms: actual 304.000ms"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn rates_bisect_to_five_percent() {
        let (r, _) = search(50.0, 1e6, "p99<300ms", 3600, false).await;
        // 50, 100, 200 pass; 400 fails; 300 ✗ (not < 300), 250 ✓, 275 ✓, 287.5 ✓: gap 12.5 ≤ 14.4.
        assert_eq!(
            r.probes,
            vec![
                (50.0, true),
                (100.0, true),
                (200.0, true),
                (400.0, false),
                (300.0, false),
                (250.0, true),
                (275.0, true),
                (287.5, true),
            ]
        );
        assert_eq!(r.best.unwrap().label, "287.5");
    }

    #[tokio::test(start_paused = true)]
    async fn budget_stops_the_search_early() {
        // 10 s per probe, 45 s budget: probes at 0, 10, 20, 30 s; the fifth would end at 50 s.
        let (r, _) = search(1.0, 4096.0, "p99<300ms", 45, true).await;
        assert!(r.stopped_by_budget);
        assert_eq!(r.probes.len(), 4);
        assert_eq!(r.best.as_ref().unwrap().label, "8");
        assert!(r.first_fail.is_none());
        assert!(render_capacity(&r).contains("stopped early"));
    }

    #[tokio::test(start_paused = true)]
    async fn slo_never_broken_up_to_max() {
        let (r, _) = search(10.0, 100.0, "p99<300ms,errors<1%", 3600, true).await;
        assert_eq!(
            r.probes,
            vec![
                (10.0, true),
                (20.0, true),
                (40.0, true),
                (80.0, true),
                (100.0, true)
            ]
        );
        assert_eq!(r.best.unwrap().label, "100");
        assert!(r.first_fail.is_none());
        assert!(!r.stopped_by_budget);
    }

    #[tokio::test(start_paused = true)]
    async fn broken_at_the_first_level() {
        let (r, _) = search(500.0, 4096.0, "p99<300ms", 3600, true).await;
        assert_eq!(r.probes, vec![(500.0, false)]);
        assert!(r.best.is_none());
        assert_eq!(r.first_fail.as_ref().unwrap().0.label, "500");
        let text = render_capacity(&r);
        assert!(text.contains("no level met the SLO"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_level_fails() {
        let r = find_capacity(
            |_| async { level_report("1", Some(1), None, &LevelStats::default(), false) },
            1.0,
            8.0,
            &slo("errors<1%"),
            Duration::from_secs(60),
            true,
        )
        .await;
        assert_eq!(r.probes, vec![(1.0, false)]);
        let (_, v) = r.first_fail.unwrap();
        assert!(v.iter().any(|v| v.threshold == "samples>0" && !v.passed));
    }
}
