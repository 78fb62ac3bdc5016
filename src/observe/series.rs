//! One level's server samples folded into per-series figures: counters → delta and rate,
//! gauges → min, mean, max, last (pure; the scraper feeds it, the report reads the result).

use std::collections::BTreeMap;

use super::exposition::{Exposition, Kind};
use crate::report::model::observations::{ServerLevel, ServerSeries, SourceHealth};

/// Series charted in the HTML keep their points only when a level has at most this many
/// (pick them with `--server-metrics-match`): a node exporter's thousand series would make
/// summary.json megabytes long.
pub const MAX_CHARTED_SERIES: usize = 24;

/// One level's samples so far.
#[derive(Debug, Default)]
pub struct LevelSeries {
    sources: BTreeMap<String, SourceHealth>,
    series: BTreeMap<(String, String, String), Acc>,
}

/// The running figures of one series.
#[derive(Debug)]
struct Acc {
    kind: Kind,
    first: f64,
    first_t: f64,
    last_t: f64,
    prev: f64,
    delta: f64,
    min: f64,
    max: f64,
    sum: f64,
    n: u64,
    points: Vec<(f64, f64)>,
}

impl LevelSeries {
    /// Add one scrape of `source` taken `t` seconds after the level started.
    pub fn add(&mut self, t: f64, source: &str, scraped: &Result<Exposition, String>) {
        let health = self
            .sources
            .entry(source.to_string())
            .or_insert_with(|| SourceHealth {
                source: source.to_string(),
                ..SourceHealth::default()
            });
        let e = match scraped {
            Ok(e) => e,
            Err(why) => {
                health.failures += 1;
                health.first_error.get_or_insert_with(|| why.clone());
                return;
            }
        };
        health.scrapes += 1;
        health.malformed_lines += e.malformed;
        for s in &e.samples {
            let key = (source.to_string(), s.name.clone(), s.labels.clone());
            let v = s.value;
            match self.series.get_mut(&key) {
                None => {
                    self.series.insert(
                        key,
                        Acc {
                            kind: s.kind,
                            first: v,
                            first_t: t,
                            last_t: t,
                            prev: v,
                            delta: 0.0,
                            min: v,
                            max: v,
                            sum: v,
                            n: 1,
                            points: vec![(t, v)],
                        },
                    );
                }
                Some(a) => {
                    // A counter that went down restarted from zero: count what it has now.
                    a.delta += if v >= a.prev { v - a.prev } else { v };
                    a.prev = v;
                    a.last_t = t;
                    a.min = a.min.min(v);
                    a.max = a.max.max(v);
                    a.sum += v;
                    a.n += 1;
                    a.points.push((t, v));
                }
            }
        }
    }

    /// Whether any source has been added.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The level's figures.
    pub fn finish(self) -> ServerLevel {
        let charted = self.series.len() <= MAX_CHARTED_SERIES;
        let series = self
            .series
            .into_iter()
            .map(|((source, series, labels), a)| {
                let span = a.last_t - a.first_t;
                // Untyped may be a gauge: no reset logic, just how far it moved.
                let delta = match a.kind {
                    Kind::Counter => a.delta,
                    _ => a.prev - a.first,
                };
                let counts_up = a.kind != Kind::Gauge;
                let shows_level = a.kind != Kind::Counter;
                ServerSeries {
                    source,
                    series,
                    labels,
                    kind: a.kind.as_str().to_string(),
                    samples: a.n,
                    delta: counts_up.then_some(delta),
                    rate: counts_up.then(|| if span > 0.0 { delta / span } else { 0.0 }),
                    min: shows_level.then_some(a.min),
                    mean: shows_level.then(|| a.sum / a.n as f64),
                    max: shows_level.then_some(a.max),
                    last: shows_level.then_some(a.prev),
                    points: if charted { a.points } else { Vec::new() },
                }
            })
            .collect();
        ServerLevel {
            sources: self.sources.into_values().collect(),
            series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::exposition::parse;

    fn scrape(text: &str) -> Result<Exposition, String> {
        Ok(parse(text, |_| true))
    }

    #[test]
    fn counters_delta_and_rate_gauges_min_mean_max_last() {
        let mut l = LevelSeries::default();
        l.add(
            0.0,
            "hub",
            &scrape("# TYPE c counter\nc 10\n# TYPE g gauge\ng 4\nu 1\n"),
        );
        l.add(
            1.0,
            "hub",
            &scrape("# TYPE c counter\nc 15\n# TYPE g gauge\ng 8\nu 3\n"),
        );
        l.add(1.5, "hub", &Err("connection refused".into()));
        // The counter restarted: 15 → 2 counts 2 more.
        l.add(
            2.0,
            "hub",
            &scrape("# TYPE c counter\nc 2\n# TYPE g gauge\ng 0\nu 2\nbad line\n"),
        );
        let s = l.finish();
        assert_eq!(
            s.sources,
            vec![SourceHealth {
                source: "hub".into(),
                scrapes: 3,
                failures: 1,
                malformed_lines: 1,
                first_error: Some("connection refused".into()),
            }]
        );
        let c = &s.series[0];
        assert_eq!((c.series.as_str(), c.kind.as_str()), ("c", "counter"));
        assert_eq!((c.delta, c.rate), (Some(7.0), Some(3.5)));
        assert_eq!((c.min, c.max, c.last), (None, None, None));
        let g = &s.series[1];
        assert_eq!((g.delta, g.rate), (None, None));
        assert_eq!(
            (g.min, g.mean, g.max, g.last),
            (Some(0.0), Some(4.0), Some(8.0), Some(0.0))
        );
        let u = &s.series[2];
        assert_eq!(
            (u.kind.as_str(), u.delta, u.max, u.last),
            ("untyped", Some(1.0), Some(3.0), Some(2.0))
        );
        assert_eq!(u.points, vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)]);
    }
}
