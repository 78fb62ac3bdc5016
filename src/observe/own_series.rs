//! hubload's own series for Prometheus, from the finished levels' rows and the running level's
//! live counts: one list that the remote-write pusher and the `/metrics` page both render.

use std::collections::BTreeMap;

use crate::report::model::LevelReport;
use crate::stats::Counts;

/// One series: its name, its labels (sorted by name), its value.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnSeries {
    pub name: &'static str,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The quantiles of `hubload_latency_seconds`.
pub const QUANTILES: [&str; 4] = ["0.5", "0.9", "0.99", "1"];

/// What one level contributes: attempts per class, latency quantiles (µs), deliveries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelFigures {
    pub counts: Counts,
    pub quantiles_us: [u64; 4],
    /// `--subscribers`: deliveries per outcome.
    pub deliveries: Option<BTreeMap<String, u64>>,
}

impl LevelFigures {
    /// A finished level's figures, from its row (the numbers aggregate.csv shows).
    pub fn of_row(l: &LevelReport) -> Self {
        let lat = &l.derived.latency_us;
        LevelFigures {
            counts: l.stats.counts,
            quantiles_us: [lat.p50, lat.p90, lat.p99, lat.max],
            deliveries: l.delivery.as_ref().map(|d| {
                let c = &d.counts;
                [
                    ("delivered", c.delivered),
                    ("lost", c.lost),
                    ("not_yet_delivered", c.not_yet_delivered),
                    ("duplicates", c.duplicates),
                    ("redeliveries", c.redeliveries),
                    ("bad_signature", c.bad_signature),
                    ("body_mismatch", c.body_mismatch),
                    ("unexpected", c.unexpected),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            }),
        }
    }

    /// The running level's figures, from the engine's live counts.
    pub fn live(counts: &Counts, quantiles_us: [u64; 4]) -> Self {
        LevelFigures {
            counts: *counts,
            quantiles_us,
            deliveries: None,
        }
    }
}

/// Everything exported at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Per level label, in the order run: finished levels, then the running one.
    pub levels: Vec<(String, LevelFigures)>,
    /// The running level's load (its concurrency or rate), 0 between levels.
    pub level: f64,
    /// Measured attempts in flight now (started, not yet ended), 0 between levels.
    pub inflight: f64,
    /// Attempts the running level may have in flight (its workers, or `--max-inflight`),
    /// 0 between levels.
    pub inflight_limit: f64,
    /// The generator's CPU share in the running level (or the last one).
    pub cpu_ratio: f64,
    /// `--web`: control changes so far per action, and whether the run is paused (1) or not.
    pub control: Option<(BTreeMap<String, u64>, f64)>,
}

impl Snapshot {
    /// The series, each with `common` labels (run id, shard, `--push-label`) added.
    pub fn series(&self, common: &[(String, String)]) -> Vec<OwnSeries> {
        let mut out = Vec::new();
        let mut push = |name: &'static str, extra: &[(&str, &str)], value: f64| {
            let mut labels: Vec<(String, String)> = common
                .iter()
                .cloned()
                .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
                .collect();
            labels.sort();
            out.push(OwnSeries {
                name,
                labels,
                value,
            });
        };
        for (label, f) in &self.levels {
            for (class, n) in &f.counts.to_map() {
                push(
                    "hubload_attempts_total",
                    &[("level", label), ("class", class)],
                    *n as f64,
                );
            }
            for (q, us) in QUANTILES.iter().zip(f.quantiles_us) {
                push(
                    "hubload_latency_seconds",
                    &[("level", label), ("quantile", q)],
                    us as f64 / 1e6,
                );
            }
            for (outcome, n) in f.deliveries.iter().flatten() {
                push(
                    "hubload_deliveries_total",
                    &[("level", label), ("outcome", outcome)],
                    *n as f64,
                );
            }
        }
        push("hubload_inflight", &[], self.inflight);
        push("hubload_inflight_limit", &[], self.inflight_limit);
        push("hubload_level", &[], self.level);
        push("hubload_generator_cpu_ratio", &[], self.cpu_ratio);
        if let Some((actions, paused)) = &self.control {
            for (action, n) in actions {
                push(
                    "hubload_control_actions_total",
                    &[("action", action)],
                    *n as f64,
                );
            }
            push("hubload_paused", &[], *paused);
        }
        out
    }
}

/// The series in the text exposition format (`/metrics`).
pub fn exposition(series: &[OwnSeries]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut last = "";
    for s in series {
        if s.name != last {
            let kind = match s.name {
                "hubload_attempts_total"
                | "hubload_deliveries_total"
                | "hubload_control_actions_total" => "counter",
                _ => "gauge",
            };
            let _ = writeln!(out, "# TYPE {} {kind}", s.name);
            last = s.name;
        }
        let labels: Vec<String> = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", super::exposition::escape(v)))
            .collect();
        let _ = writeln!(out, "{}{{{}}} {}", s.name, labels.join(","), s.value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::exposition::parse;
    use crate::result::Class;

    #[test]
    fn series_names_labels_and_a_page_that_parses_back() {
        let mut f = LevelFigures::default();
        f.counts.add(Class::Accepted, 7);
        f.counts.add(Class::Http502, 1);
        f.quantiles_us = [1000, 2000, 3000, 4500];
        let snap = Snapshot {
            levels: vec![("10".into(), f)],
            level: 10.0,
            inflight: 3.0,
            inflight_limit: 10.0,
            cpu_ratio: 0.25,
            control: None,
        };
        let common = vec![("run_id".to_string(), "r1".to_string())];
        let series = snap.series(&common);
        // Every class (zeros too, as a finished level's row has them), 4 quantiles, 4 gauges.
        assert_eq!(series.len(), Class::COUNT + 4 + 4);
        assert_eq!(
            series[0].labels,
            [("class", "accepted"), ("level", "10"), ("run_id", "r1")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        let page = exposition(&series);
        let back = parse(&page, |_| true);
        assert_eq!(back.malformed, 0);
        assert_eq!(back.samples.len(), series.len());
        let accepted = &back.samples[0];
        assert_eq!(
            (
                accepted.name.as_str(),
                accepted.labels.as_str(),
                accepted.value
            ),
            (
                "hubload_attempts_total",
                "{class=\"accepted\",level=\"10\",run_id=\"r1\"}",
                7.0
            )
        );
        assert!(page.contains(
            "hubload_latency_seconds{level=\"10\",quantile=\"1\",run_id=\"r1\"} 0.0045\n"
        ));
        assert!(page.contains("hubload_generator_cpu_ratio{run_id=\"r1\"} 0.25\n"));
        assert!(page.contains("hubload_inflight{run_id=\"r1\"} 3\n"));
        assert!(page.contains("hubload_inflight_limit{run_id=\"r1\"} 10\n"));
        assert!(
            !page.contains("hubload_control"),
            "no series of a control never made"
        );
    }

    #[test]
    fn control_changes_are_counted_per_action() {
        let snap = Snapshot {
            control: Some((
                [("pause".to_string(), 2), ("rate".to_string(), 1)].into(),
                1.0,
            )),
            ..Snapshot::default()
        };
        let page = exposition(&snap.series(&[]));
        assert!(page.contains("# TYPE hubload_control_actions_total counter\n"));
        assert!(page.contains("hubload_control_actions_total{action=\"pause\"} 2\n"));
        assert!(page.contains("hubload_control_actions_total{action=\"rate\"} 1\n"));
        assert!(page.contains("hubload_paused{} 1\n"));
    }
}
