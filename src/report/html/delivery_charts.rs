//! The delivery charts of a run with subscribers: publish vs end-to-end latency per level, and the backlog over time.
//!
//! Both are drawn from `summary.json`'s numbers as they are: the latency chart from each
//! level's `latency_us` and `delivery.e2e_us` (nearest-rank percentiles of the exact
//! histograms), the backlog chart from `delivery.per_second` (docs/delivery.md), with the
//! churn events of `delivery.churn.per_second` on it when subscriptions churned.

use super::charts::{latency_axis_title, level_axis_title, level_prefix};
use super::svg::{spans_decades, LineChart, Separator, Series, XAxis};
use crate::report::document::Report;
use crate::report::model::delivery_report::DeliveryReport;
use crate::report::model::latency::LatencyUs;
use crate::report::model::LevelReport;
use crate::subscriber::{ChurnSeconds, DeliverySeconds};

/// A level's delivery section, when it delivered anything.
fn delivered(l: &LevelReport) -> Option<&DeliveryReport> {
    l.delivery.as_ref().filter(|d| d.counts.delivered > 0)
}

/// A level's per-second delivery series.
fn per_second(l: &LevelReport) -> Option<&DeliverySeconds> {
    l.delivery.as_ref().and_then(|d| d.per_second.as_ref())
}

/// A level's churn events per second (`--subscriber-churn`).
fn churn_seconds(l: &LevelReport) -> Option<&ChurnSeconds> {
    l.delivery
        .as_ref()
        .and_then(|d| d.churn.as_ref())
        .map(|c| &c.stats.per_second)
        .filter(|s| !s.is_empty())
}

/// A percentile's name, colour, and where it is in a `LatencyUs`.
type Percentile = (&'static str, &'static str, fn(&LatencyUs) -> u64);

/// The percentiles compared, with their colour (the publish latency chart's colours).
const PERCENTILES: [Percentile; 4] = [
    ("p50", "#2e9d5b", |l| l.p50),
    ("p90", "#1f77b4", |l| l.p90),
    ("p99", "#d62728", |l| l.p99),
    ("max", "#9a9a9a", |l| l.max),
];

/// The most points a backlog series gets; longer runs are merged into wider buckets.
const MAX_POINTS: usize = 900;

fn series(name: String, color: &'static str, points: Vec<Option<(f64, f64)>>) -> Series {
    Series {
        name,
        color,
        points,
        markers: false,
        dashed: false,
    }
}

/// Per percentile, the publish latency (solid) and then the end-to-end latency (publish start
/// → delivery received, dashed), in ms against the level; a level without a `delivery`
/// section (or without deliveries) has no end-to-end point.
pub fn latency_series(report: &Report) -> Vec<Series> {
    let ms = |us: u64| us as f64 / 1000.0;
    let mut out = Vec::new();
    for (name, color, pick) in PERCENTILES {
        let at = |i: usize, us: u64| Some((i as f64, ms(us)));
        let publish = report.levels.iter().enumerate();
        let mut p = series(
            format!("publish {name}"),
            color,
            publish
                .map(|(i, l)| at(i, pick(&l.derived.latency_us)))
                .collect(),
        );
        p.markers = true;
        let mut d = series(
            format!("end-to-end {name}"),
            color,
            report
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| delivered(l).and_then(|d| at(i, pick(&d.e2e_us))))
                .collect(),
        );
        d.markers = true;
        d.dashed = true;
        out.extend([p, d]);
    }
    out
}

/// Publish vs end-to-end latency per level, or `None` when no level has a `delivery` section.
pub fn latency(report: &Report) -> Option<String> {
    report.levels.iter().find(|l| l.delivery.is_some())?;
    let series = latency_series(report);
    let log_y = spans_decades(&series);
    let chart = LineChart {
        id: "chart-e2e-latency".into(),
        title: "Publish vs end-to-end latency per level".into(),
        x_label: level_axis_title(report).into(),
        y_label: latency_axis_title(log_y).into(),
        unit: "ms".into(),
        x: XAxis::Categories(report.levels.iter().map(|l| l.label.clone()).collect()),
        series,
        separators: vec![],
        // Drawn across the page, beside nothing: keep its text the size of the others'.
        width: Some(1280.0),
        log_y,
    };
    Some(chart.render())
}

/// The backlog chart's data: owed per second, delivered per second and the backlog at each
/// second's end, the levels laid end to end (a level spans its publish timeline or its
/// delivery seconds, whichever is longer), `width` seconds to a point.
#[derive(Debug, Clone)]
pub struct BacklogData {
    /// Deliveries owed per second (accepted × listening subscribers of the topic).
    pub owed: Vec<Option<(f64, f64)>>,
    /// Delivered per second.
    pub delivered: Vec<Option<(f64, f64)>>,
    /// Owed so far in the level less delivered so far, at the end of each point's seconds.
    pub backlog: Vec<Option<(f64, f64)>>,
    /// Subscription churn: verified unsubscribes and re-subscriptions per second (empty
    /// without `--subscriber-churn`).
    pub unsubscribed: Vec<Option<(f64, f64)>>,
    /// See `unsubscribed`.
    pub resubscribed: Vec<Option<(f64, f64)>>,
    /// Where each level begins.
    pub separators: Vec<Separator>,
    /// Seconds in all.
    pub seconds: usize,
    /// Seconds per point.
    pub width: usize,
}

/// The backlog chart's data, or `None` when no level has a per-second delivery series.
pub fn backlog_data(report: &Report) -> Option<BacklogData> {
    report.levels.iter().find_map(per_second)?;
    let empty = DeliverySeconds::default();
    let span = |l: &LevelReport| {
        l.stats
            .timeline
            .len()
            .max(per_second(l).map_or(0, |s| s.len()))
    };
    let seconds: usize = report.levels.iter().map(span).sum();
    let width = seconds.div_ceil(MAX_POINTS).max(1);
    let mut d = BacklogData {
        owed: Vec::new(),
        delivered: Vec::new(),
        backlog: Vec::new(),
        unsubscribed: Vec::new(),
        resubscribed: Vec::new(),
        separators: Vec::new(),
        seconds,
        width,
    };
    let churned = report.levels.iter().any(|l| churn_seconds(l).is_some());
    let no_churn = ChurnSeconds::default();
    let mut offset = 0usize;
    for l in &report.levels {
        d.separators.push(Separator {
            x: offset as f64,
            label: format!("{}={}", level_prefix(report), l.label),
        });
        let s = per_second(l).unwrap_or(&empty);
        let backlog = s.backlog();
        let n = span(l);
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0) as f64;
        for start in (0..n).step_by(width) {
            let end = (start + width).min(n);
            let x = (offset + start) as f64 + (end - start) as f64 / 2.0;
            let rate = |v: &[u64]| (start..end).map(|i| at(v, i)).sum::<f64>() / width as f64;
            d.owed.push(Some((x, rate(&s.expected))));
            d.delivered.push(Some((x, rate(&s.delivered))));
            // Past the level's delivery seconds the backlog stays what it was (lost, or late).
            let last = backlog.last().copied().unwrap_or(0);
            let b = backlog.get(end - 1).copied().unwrap_or(last);
            d.backlog.push(Some(((offset + end) as f64, b as f64)));
            if churned {
                let c = churn_seconds(l).unwrap_or(&no_churn);
                d.unsubscribed.push(Some((x, rate(&c.unsubscribed))));
                d.resubscribed.push(Some((x, rate(&c.resubscribed))));
            }
        }
        offset += n;
        // Never join a line across a level boundary.
        d.owed.push(None);
        d.delivered.push(None);
        d.backlog.push(None);
        if churned {
            d.unsubscribed.push(None);
            d.resubscribed.push(None);
        }
    }
    Some(d)
}

/// Owed/s, delivered/s and the backlog over the whole run, or `None` without per-second data.
pub fn backlog(report: &Report) -> Option<String> {
    let d = backlog_data(report)?;
    let step = match d.width {
        1 => "per second".to_string(),
        w => format!("per {w} s"),
    };
    let mut backlog = series("backlog (deliveries)".into(), "#d62728", d.backlog);
    backlog.dashed = true;
    let chart = LineChart {
        id: "chart-backlog".into(),
        title: format!("Deliveries and backlog over time ({step}, levels end to end)"),
        x_label: "Seconds from each level's measured start".into(),
        y_label: "Deliveries per second; backlog".into(),
        unit: String::new(),
        x: XAxis::Linear {
            max: d.seconds.max(1) as f64,
        },
        series: {
            let mut v = vec![
                series("owed/s (accepted × subscribers)".into(), "#1f77b4", d.owed),
                series("delivered/s".into(), "#2e9d5b", d.delivered),
                backlog,
            ];
            // Churn events, dotted at each point, so a dip in deliveries lines up with them.
            for (name, color, points) in [
                ("unsubscribed/s (churn)", "#9467bd", d.unsubscribed),
                ("re-subscribed/s (churn)", "#ff7f0e", d.resubscribed),
            ] {
                if !points.is_empty() {
                    let mut s = series(name.into(), color, points);
                    s.markers = true;
                    v.push(s);
                }
            }
            v
        },
        separators: d.separators,
        width: Some(1280.0),
        log_y: false,
    };
    Some(chart.render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::JsonFormat;
    use crate::report::model::delivery_report::delivery_report;
    use crate::report::Format;
    use crate::stats::record;
    use crate::subscriber::DeliveryLevelStats;
    use serde_json::Value;

    /// The sample run (5 levels of 30 s) with known deliveries: level `i` delivered with
    /// latencies `(1..=100) × (i + 1)` ms, and a per-second series of `seconds` seconds.
    fn with_deliveries(seconds: usize) -> Report {
        let mut report = crate::report::html::tests::sample();
        for (i, l) in report.levels.iter_mut().enumerate() {
            let mut s = DeliveryLevelStats::default();
            for v in 1..=100u64 {
                record(&mut s.e2e_from_start, v * 1000 * (i as u64 + 1));
            }
            s.counts.delivered = 100;
            let n = seconds + i;
            s.seconds.expected = (0..n as u64).map(|k| 10 + k % 3).collect();
            // Deliveries lag: nothing in second 0, then 9 a second.
            s.seconds.delivered = (0..n as u64).map(|k| if k == 0 { 0 } else { 9 }).collect();
            l.delivery = Some(delivery_report(&s, 30.0, 0));
        }
        report
    }

    /// summary.json as the run writes it, parsed back.
    fn summary(report: &Report) -> Value {
        serde_json::from_slice(&JsonFormat.render(report).unwrap()).unwrap()
    }

    fn u(v: &Value) -> u64 {
        v.as_u64().unwrap()
    }

    #[test]
    fn churn_events_are_on_the_delivery_timeline_as_summary_json_has_them() {
        let mut report = with_deliveries(3);
        assert!(
            backlog_data(&report).unwrap().unsubscribed.is_empty(),
            "no churn, no churn series"
        );
        assert!(!backlog(&report).unwrap().contains("(churn)"));
        // Level 1 churned: 2 unsubscribes in second 0, 1 re-subscription in seconds 0 and 2.
        let mut s = DeliveryLevelStats::default();
        s.counts.delivered = 1;
        s.seconds.delivered = vec![1, 0, 0, 0];
        s.churn = Some(crate::subscriber::ChurnStats {
            unsubscribed: 2,
            resubscribed: 2,
            per_second: ChurnSeconds {
                unsubscribed: vec![2],
                resubscribed: vec![1, 0, 1],
            },
            ..Default::default()
        });
        report.levels[1].delivery = Some(delivery_report(&s, 4.0, 0));
        let json = summary(&report);
        let c = &json["levels"][1]["delivery"]["churn"]["per_second"];
        assert_eq!(c["resubscribed"], serde_json::json!([1, 0, 1]));
        let d = backlog_data(&report).unwrap();
        // Level 0 spans 30 s (its timeline); level 1 starts at x = 30.
        let at =
            |v: &[Option<(f64, f64)>], x: f64| v.iter().flatten().find(|p| p.0 == x).map(|p| p.1);
        assert_eq!(at(&d.unsubscribed, 30.5), Some(2.0));
        assert_eq!(at(&d.resubscribed, 30.5), Some(1.0));
        assert_eq!(at(&d.resubscribed, 31.5), Some(0.0));
        assert_eq!(at(&d.resubscribed, 32.5), Some(1.0));
        assert_eq!(
            at(&d.unsubscribed, 0.5),
            Some(0.0),
            "a level without churn: 0"
        );
        let svg = backlog(&report).unwrap();
        assert!(svg.contains("unsubscribed/s (churn)") && svg.contains("re-subscribed/s (churn)"));
    }

    #[test]
    fn latency_chart_is_summary_json_percentiles() {
        let report = with_deliveries(3);
        let json = summary(&report);
        let levels = json["levels"].as_array().unwrap();
        let series = latency_series(&report);
        assert_eq!(series.len(), 8);
        for (k, key) in ["p50", "p90", "p99", "max"].iter().enumerate() {
            let (publish, e2e) = (&series[2 * k], &series[2 * k + 1]);
            assert_eq!(publish.name, format!("publish {key}"));
            assert_eq!(e2e.name, format!("end-to-end {key}"));
            assert!(e2e.dashed && !publish.dashed);
            for (i, l) in levels.iter().enumerate() {
                let ms = |v: &Value| u(v) as f64 / 1000.0;
                assert_eq!(
                    publish.points[i],
                    Some((i as f64, ms(&l["latency_us"][key])))
                );
                let want = ms(&l["delivery"]["e2e_us"][key]);
                assert_eq!(e2e.points[i], Some((i as f64, want)));
            }
        }
        // Level 0's e2e p50: 50 ms by nearest rank of 1..=100 ms, reported as its bucket's
        // highest value: 32 µs buckets at 3 significant digits there, [49 984, 50 015].
        assert_eq!(series[1].points[0], Some((0.0, 50.015)));
    }

    #[test]
    fn backlog_chart_is_summary_json_seconds() {
        let report = with_deliveries(40);
        let json = summary(&report);
        let d = backlog_data(&report).unwrap();
        assert_eq!(d.width, 1);
        let (mut offset, mut point) = (0usize, 0usize);
        for l in json["levels"].as_array().unwrap() {
            let ps = &l["delivery"]["per_second"];
            let owed: Vec<u64> = ps["expected"].as_array().unwrap().iter().map(u).collect();
            let got: Vec<u64> = ps["delivered"].as_array().unwrap().iter().map(u).collect();
            let span = owed
                .len()
                .max(l["stats"]["timeline"].as_array().unwrap().len());
            let (mut sum_owed, mut sum_got) = (0u64, 0u64);
            for s in 0..span {
                let x = (offset + s) as f64 + 0.5;
                sum_owed += owed[s];
                sum_got += got[s];
                assert_eq!(d.owed[point], Some((x, owed[s] as f64)));
                assert_eq!(d.delivered[point], Some((x, got[s] as f64)));
                let end = (offset + s + 1) as f64;
                assert_eq!(d.backlog[point], Some((end, (sum_owed - sum_got) as f64)));
                point += 1;
            }
            assert_eq!(d.owed[point], None, "a gap between levels");
            point += 1;
            offset += span;
        }
        assert_eq!(point, d.owed.len());
        assert_eq!(d.seconds, offset);
        // 40, 41, … seconds of deliveries: longer than the 30 s timelines.
        assert_eq!(offset, 40 + 41 + 42 + 43 + 44);
    }

    #[test]
    fn long_runs_are_drawn_in_wider_buckets_and_short_series_keep_their_backlog() {
        let mut report = with_deliveries(1);
        // One level of 1,000 s: 2 s a point; rates are per second, the backlog at the end.
        let d = report.levels[0].delivery.as_mut().unwrap();
        d.per_second = Some(DeliverySeconds {
            expected: vec![4; 1_000],
            delivered: vec![2; 1_000],
        });
        let data = backlog_data(&report).unwrap();
        assert_eq!(data.width, 2);
        assert_eq!(data.owed[0], Some((1.0, 4.0)));
        assert_eq!(data.delivered[0], Some((1.0, 2.0)));
        assert_eq!(data.backlog[0], Some((2.0, 4.0)));
        assert_eq!(data.backlog[499], Some((1_000.0, 2_000.0)));
        // Level 1: 2 seconds of deliveries (owed 10 + 11, delivered 0 + 9), 30 of publishing:
        // the backlog stays 12 after them.
        let level1 = &data.backlog[501..516];
        assert_eq!(level1[0], Some((1_002.0, 12.0)));
        assert_eq!(level1[14], Some((1_030.0, 12.0)));
        assert_eq!(data.backlog[516], None);
    }

    #[test]
    fn rendered_charts_have_a_line_per_series_and_no_chart_without_subscribers() {
        let report = with_deliveries(3);
        let html = crate::report::html::render(&report);
        let doc = roxmltree::Document::parse_with_options(
            &html,
            roxmltree::ParsingOptions {
                allow_dtd: true,
                ..Default::default()
            },
        )
        .unwrap();
        let chart = |id: &str| {
            doc.descendants()
                .find(|n| n.attribute("id") == Some(id))
                .unwrap_or_else(|| panic!("no {id}"))
        };
        let count = |id: &str, tag: &str| {
            chart(id)
                .descendants()
                .filter(|n| n.tag_name().name() == tag)
                .count()
        };
        let levels = report.levels.len();
        assert_eq!(count("chart-e2e-latency", "polyline"), 8);
        assert_eq!(count("chart-e2e-latency", "circle"), 8 * levels);
        // Three series, one line per level each.
        assert_eq!(count("chart-backlog", "polyline"), 3 * levels);
        let tips: Vec<&str> = chart("chart-e2e-latency")
            .descendants()
            .filter(|n| n.tag_name().name() == "title")
            .filter_map(|n| n.text())
            .collect();
        assert!(tips.contains(&"end-to-end p50 at 1: 50.0 ms"), "{tips:?}");

        let plain = crate::report::html::render(&crate::report::html::tests::sample());
        assert!(!plain.contains("chart-e2e-latency") && !plain.contains("chart-backlog"));
    }
}
