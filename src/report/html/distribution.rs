//! The percentile distribution chart: latency against percentile on a log "nines" axis up to
//! 99.999%, one line per level (solid: actual start → end; dashed: from the intended start,
//! open model), drawn from the HdrHistograms that summary.json carries.

use super::svg::{LineChart, Series, XAxis};
use crate::report::document::Report;
use crate::stats::Histogram;

/// The x axis ends at five nines (99.999%).
const MAX_NINES: u32 = 5;
/// Points per nine: 20 (x steps of 0.05 nines).
const STEPS_PER_NINE: u32 = 20;

/// Line colours, one per level, repeating beyond ten levels.
const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2e9d5b", "#f2a33a", "#7f3c8d", "#17becf", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22",
];

/// The distribution as `(nines, ms)` points: x = −log10(1 − p) in steps of 0.05 up to five
/// nines, but no further than the histogram resolves (p ≤ 1 − 1/N: beyond, every percentile
/// is the max), then the max itself at that x. Values are clamped to `max_us` when known.
pub fn distribution_points(h: &Histogram, max_us: Option<u64>) -> Vec<Option<(f64, f64)>> {
    if h.is_empty() {
        return Vec::new();
    }
    let n = h.len() as f64;
    let last = n.log10().min(f64::from(MAX_NINES));
    let max = max_us.unwrap_or(h.max()).min(h.max());
    let at = |x: f64| {
        let q = 1.0 - 10f64.powf(-x);
        Some((x, h.value_at_quantile(q).min(max) as f64 / 1000.0))
    };
    let mut pts: Vec<_> = (0..=MAX_NINES * STEPS_PER_NINE)
        .map(|i| f64::from(i) / f64::from(STEPS_PER_NINE))
        .take_while(|x| *x < last)
        .map(at)
        .collect();
    pts.push(Some((last, max as f64 / 1000.0)));
    pts
}

/// The chart, or `None` when no level carries a histogram (summaries from older versions).
pub fn distribution(report: &Report) -> Option<String> {
    let mut series = Vec::new();
    for (i, l) in report.levels.iter().enumerate() {
        let raw = &l.stats.latency;
        if raw.is_empty() {
            continue;
        }
        let color = PALETTE[i % PALETTE.len()];
        series.push(Series {
            name: l.label.clone(),
            color,
            points: distribution_points(raw, Some(l.derived.latency_us.max)),
            markers: false,
            dashed: false,
        });
        let c = &l.stats.corrected;
        if l.derived.corrected_latency_us.is_some() && !c.is_empty() {
            series.push(Series {
                name: format!("{} from intended start", l.label),
                color,
                points: distribution_points(c, None),
                markers: false,
                dashed: true,
            });
        }
    }
    if series.is_empty() {
        return None;
    }
    let log_y = super::svg::spans_decades(&series);
    Some(
        LineChart {
            id: "chart-distribution".into(),
            title: "Latency by percentile".into(),
            x_label: "Percentile".into(),
            y_label: super::charts::latency_axis_title(log_y).into(),
            unit: "ms".into(),
            x: XAxis::Nines { max: MAX_NINES },
            series,
            separators: vec![],
            // Full page width, like the timeline: the figure spans both columns.
            width: Some(1280.0),
            log_y,
        }
        .render(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, record};

    #[test]
    fn points_follow_the_nines_and_end_at_the_max() {
        let mut h = new_histogram();
        for us in 1..=1000 {
            record(&mut h, us);
        }
        let pts: Vec<(f64, f64)> = distribution_points(&h, Some(1000))
            .into_iter()
            .flatten()
            .collect();
        // N = 1000 resolves three nines: x = 0, 0.05, …, 2.95, then (3, max).
        assert_eq!(pts.len(), 61);
        assert_eq!(pts[0], (0.0, 0.001)); // p0 → the smallest value, 1 µs
        assert_eq!(pts[20], (1.0, 0.9)); // p90 → 900 µs
        assert_eq!(pts[40], (2.0, 0.99)); // p99 → 990 µs
        assert_eq!(*pts.last().unwrap(), (3.0, 1.0));
        assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
    }

    #[test]
    fn nines_labels() {
        use crate::report::html::svg::nines_label;
        let got: Vec<String> = (0..=5).map(|n| nines_label(f64::from(n))).collect();
        assert_eq!(got, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }
}
