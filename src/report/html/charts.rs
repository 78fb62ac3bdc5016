//! The run report's charts: turns `LevelReport`s into [`svg`](super::svg) charts.

use super::svg::{spans_decades, LineChart, Segment, Separator, Series, StackedBars, XAxis};
use crate::kind::Model;
use crate::report::document::Report;
use crate::report::model::LevelReport;
use crate::result::Class;
use crate::stats::TimelineBucket;

/// A column of the outcome charts and tables: one or more classes under one name.
#[derive(Debug, Clone, Copy)]
pub struct ClassGroup {
    /// Column and legend text.
    pub name: &'static str,
    pub color: &'static str,
    pub classes: &'static [Class],
    /// Shown even when every level counted zero (the core HTTP classes are).
    pub always: bool,
}

/// Outcome groups in report order: the core HTTP classes first, then Service Bus classes.
pub const GROUPS: &[ClassGroup] = &[
    group("Accepted", "#2e9d5b", &[Class::Accepted], true),
    group("Denied", "#8e5bd0", &[Class::Denied], true),
    group("4xx", "#f2a33a", &[Class::Http4xx], true),
    group("502", "#e8618c", &[Class::Http502], true),
    group("503", "#d62728", &[Class::Http503], true),
    group("504", "#8c1c13", &[Class::Http504], true),
    group("Other 5xx", "#a0522d", &[Class::Http5xx], true),
    group(
        "Timeouts",
        "#1f77b4",
        &[
            Class::TimeoutConnect,
            Class::TimeoutPoolWait,
            Class::TimeoutResponse,
        ],
        true,
    ),
    group(
        "Connection errors",
        "#555b66",
        &[Class::ConnRefused, Class::ConnReset, Class::ConnClosed],
        true,
    ),
    group("Throttled", "#17becf", &[Class::Throttled], false),
    group("Rejected", "#bcbd22", &[Class::Rejected], false),
    group("Unauthorized", "#7f3c8d", &[Class::Unauthorized], false),
    group("Not found", "#c49c94", &[Class::NotFound], false),
    group("Too large", "#9edae5", &[Class::TooLarge], false),
    group("Refused streams", "#6b8e23", &[Class::RefusedStream], false),
    group("GOAWAY", "#4b6cb7", &[Class::Goaway], false),
    group("Stream resets", "#b5651d", &[Class::StreamReset], false),
    group("Protocol errors", "#5d3a9b", &[Class::ProtocolError], false),
    group("TLS errors", "#e377c2", &[Class::TlsError], false),
    group("Client errors", "#ff7f0e", &[Class::ClientError], false),
    group("Cancelled", "#c7c7c7", &[Class::Cancelled], false),
    group("Other", "#9a9a9a", &[Class::Other], false),
    group(
        "Expected refusals",
        "#a6d8b4",
        &[Class::ExpectedRefusal],
        false,
    ),
];

const fn group(
    name: &'static str,
    color: &'static str,
    classes: &'static [Class],
    always: bool,
) -> ClassGroup {
    ClassGroup {
        name,
        color,
        classes,
        always,
    }
}

impl ClassGroup {
    /// This group's count in one level (missing keys count as zero).
    pub fn count(&self, level: &LevelReport) -> u64 {
        self.classes
            .iter()
            .map(|c| level.stats.counts.get(*c))
            .sum()
    }
}

/// The groups worth showing for these levels: the core ones, plus any other with a count.
pub fn visible_groups(levels: &[LevelReport]) -> Vec<&'static ClassGroup> {
    GROUPS
        .iter()
        .filter(|g| g.always || levels.iter().any(|l| g.count(l) > 0))
        .collect()
}

/// "Concurrency" or "Rate (events/s)", for axis titles.
pub fn level_axis_title(report: &Report) -> &'static str {
    if report.model == Model::Open {
        "Rate (events/s)"
    } else {
        "Concurrency"
    }
}

fn labels(report: &Report) -> Vec<String> {
    report.levels.iter().map(|l| l.label.clone()).collect()
}

fn per_level(report: &Report, f: impl Fn(&LevelReport) -> f64) -> Vec<Option<(f64, f64)>> {
    report
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| Some((i as f64, f(l))))
        .collect()
}

fn line(name: &str, color: &'static str, points: Vec<Option<(f64, f64)>>) -> Series {
    Series {
        name: name.to_string(),
        color,
        points,
        markers: true,
        dashed: false,
    }
}

/// Latency percentiles (median, p90, p95, p99, max) against the level, in ms.
pub fn latency(report: &Report) -> String {
    let ms = |us: u64| us as f64 / 1000.0;
    let mut max = line(
        "max",
        "#9a9a9a",
        per_level(report, |l| ms(l.derived.latency_us.max)),
    );
    max.dashed = true;
    let mut series = vec![
        line(
            "median",
            "#2e9d5b",
            per_level(report, |l| ms(l.derived.latency_us.p50)),
        ),
        line(
            "p90",
            "#1f77b4",
            per_level(report, |l| ms(l.derived.latency_us.p90)),
        ),
        line(
            "p95",
            "#f2a33a",
            per_level(report, |l| ms(l.derived.latency_us.p95)),
        ),
        line(
            "p99",
            "#d62728",
            per_level(report, |l| ms(l.derived.latency_us.p99)),
        ),
        max,
    ];
    // Open model: the p99 measured from the intended start (coordinated omission corrected).
    if report
        .levels
        .iter()
        .any(|l| l.derived.corrected_latency_us.is_some())
    {
        let points = report
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                l.derived
                    .corrected_latency_us
                    .as_ref()
                    .map(|c| (i as f64, ms(c.p99)))
            })
            .collect();
        let mut corrected = line("p99 from intended start", "#7f3c8d", points);
        corrected.dashed = true;
        series.push(corrected);
    }
    let log_y = spans_decades(&series);
    LineChart {
        id: "chart-latency".into(),
        title: "Latency percentiles per level".into(),
        x_label: level_axis_title(report).into(),
        y_label: latency_axis_title(log_y).into(),
        unit: "ms".into(),
        x: XAxis::Categories(labels(report)),
        series,
        separators: vec![],
        width: None,
        log_y,
    }
    .render()
}

/// Throughput (attempts/s) and its accepted part against the level.
pub fn throughput(report: &Report) -> String {
    let accepted = |l: &LevelReport| {
        if l.derived.samples == 0 {
            0.0
        } else {
            l.derived.throughput * GROUPS[0].count(l) as f64 / l.derived.samples as f64
        }
    };
    LineChart {
        id: "chart-throughput".into(),
        title: "Throughput per level".into(),
        x_label: level_axis_title(report).into(),
        y_label: "Attempts per second".into(),
        unit: "/s".into(),
        x: XAxis::Categories(labels(report)),
        series: vec![
            line(
                "all attempts",
                "#1f77b4",
                per_level(report, |l| l.derived.throughput),
            ),
            line("accepted", "#2e9d5b", per_level(report, accepted)),
        ],
        separators: vec![],
        width: None,
        log_y: false,
    }
    .render()
}

/// Outcome classes per level, stacked. `percent` shows shares of all attempts;
/// otherwise the accepted class is left out and failures are shown as counts.
pub fn outcomes(report: &Report, percent: bool) -> String {
    let groups = visible_groups(&report.levels);
    let segments = groups
        .iter()
        .filter(|g| percent || g.classes != [Class::Accepted])
        .map(|g| Segment {
            name: g.name.to_string(),
            color: g.color,
            values: report.levels.iter().map(|l| g.count(l) as f64).collect(),
        })
        .collect();
    let (id, title, y) = if percent {
        (
            "chart-outcomes",
            "Outcome classes per level (share of attempts)",
            "% of attempts",
        )
    } else {
        (
            "chart-failures",
            "Failures per level (count)",
            "Attempts not accepted",
        )
    };
    StackedBars {
        id: id.into(),
        title: title.into(),
        x_label: level_axis_title(report).into(),
        y_label: y.into(),
        categories: labels(report),
        segments,
        percent,
    }
    .render()
}

/// The most points a timeline series gets; longer runs are merged into wider buckets.
const MAX_TIMELINE_POINTS: usize = 900;

/// Latency over the whole run: mean and max per second, the levels laid end to end
/// with a separator where each level begins. Seconds without completions are gaps.
pub fn timeline(report: &Report) -> String {
    let total: usize = report.levels.iter().map(|l| l.stats.timeline.len()).sum();
    let width = total.div_ceil(MAX_TIMELINE_POINTS).max(1);
    let mut mean = Vec::new();
    let mut max = Vec::new();
    let mut separators = Vec::new();
    let mut offset = 0usize;
    for l in &report.levels {
        separators.push(Separator {
            x: offset as f64,
            label: format!("{}={}", level_prefix(report), l.label),
        });
        // `--web`: where the control API paused, resumed or changed the load.
        separators.extend(super::control_marks::marks(report, l, offset as f64));
        for (i, chunk) in l.stats.timeline.chunks(width).enumerate() {
            let b = merge(chunk);
            // The point sits in the middle of the seconds it covers.
            let x = (offset + i * width) as f64 + chunk.len() as f64 / 2.0;
            if b.count == 0 {
                mean.push(None);
                max.push(None);
            } else {
                mean.push(Some((x, b.sum_us as f64 / b.count as f64 / 1000.0)));
                max.push(Some((x, b.max_us as f64 / 1000.0)));
            }
        }
        offset += l.stats.timeline.len();
        // Never join a line across a level boundary.
        mean.push(None);
        max.push(None);
    }
    let step = if width == 1 {
        "per second".to_string()
    } else {
        format!("per {width} s")
    };
    let series = vec![
        Series {
            name: "max".into(),
            color: "#f2a33a",
            points: max,
            markers: false,
            dashed: false,
        },
        Series {
            name: "mean".into(),
            color: "#1f77b4",
            points: mean,
            markers: false,
            dashed: false,
        },
    ];
    let log_y = spans_decades(&series);
    LineChart {
        id: "chart-timeline".into(),
        title: format!("Latency over time ({step}, levels end to end)"),
        x_label: "Seconds of measured load".into(),
        y_label: latency_axis_title(log_y).into(),
        unit: "ms".into(),
        x: XAxis::Linear {
            max: offset.max(1) as f64,
        },
        series,
        separators,
        width: Some(1280.0),
        log_y,
    }
    .render()
}

pub(super) fn latency_axis_title(log: bool) -> &'static str {
    if log {
        "Latency (ms, log scale)"
    } else {
        "Latency (ms)"
    }
}

pub(super) fn level_prefix(report: &Report) -> &'static str {
    if report.model == Model::Open {
        "rate"
    } else {
        "c"
    }
}

fn merge(chunk: &[TimelineBucket]) -> TimelineBucket {
    chunk.iter().fold(TimelineBucket::default(), |mut a, b| {
        a.count += b.count;
        a.errors += b.errors;
        a.sum_us += b.sum_us;
        a.max_us = a.max_us.max(b.max_us);
        a
    })
}
