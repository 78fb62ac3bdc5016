//! The scraper's rounds handed to the live page (`--web`): each round's values, and each
//! counter's rate since the round before, sent down a watch channel the page's sampler reads.

use std::collections::HashMap;
use std::time::Instant;

use tokio::sync::watch;

use super::exposition::{Exposition, Kind};
use crate::report::model::server_now::{ServerNow, ServerPoint, MAX_LIVE_SERIES};

/// Turns rounds into [`ServerNow`]s and sends them.
#[derive(Debug)]
pub struct LivePublisher {
    tx: watch::Sender<ServerNow>,
    /// Each series' last sample: when, and its value.
    prev: HashMap<(String, String, String), (Instant, f64)>,
    round: u64,
}

impl LivePublisher {
    /// Send every round to `tx`.
    pub fn new(tx: watch::Sender<ServerNow>) -> Self {
        LivePublisher {
            tx,
            prev: HashMap::new(),
            round: 0,
        }
    }

    /// One round, taken `at`: each source (as shown) and what it gave.
    pub fn publish<'a>(
        &mut self,
        at: Instant,
        round: impl Iterator<Item = (&'a str, &'a Result<Exposition, String>)>,
    ) {
        self.round += 1;
        let mut now = ServerNow {
            round: self.round,
            ..ServerNow::default()
        };
        for (source, got) in round {
            let Ok(e) = got else {
                now.failed_sources += 1;
                continue;
            };
            for s in &e.samples {
                let key = (source.to_string(), s.name.clone(), s.labels.clone());
                let before = self.prev.insert(key, (at, s.value));
                let rate = match (s.kind, before) {
                    (Kind::Counter, Some((t, v))) => {
                        let secs = at.saturating_duration_since(t).as_secs_f64();
                        let up = if s.value >= v { s.value - v } else { s.value };
                        (secs > 0.0).then(|| up / secs)
                    }
                    _ => None,
                };
                now.series.push(ServerPoint {
                    source: source.to_string(),
                    series: s.name.clone(),
                    labels: s.labels.clone(),
                    kind: s.kind.as_str().to_string(),
                    value: s.value,
                    rate,
                });
            }
        }
        now.series.sort_by(|a, b| {
            (&a.source, &a.series, &a.labels).cmp(&(&b.source, &b.series, &b.labels))
        });
        now.more = now.series.len().saturating_sub(MAX_LIVE_SERIES);
        now.series.truncate(MAX_LIVE_SERIES);
        // No receiver left (the page's server closed): nothing to do.
        let _ = self.tx.send(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::exposition::parse;
    use std::time::Duration;

    #[test]
    fn a_counter_gets_its_rate_since_the_round_before_and_a_reset_restarts_it() {
        let (tx, rx) = watch::channel(ServerNow::default());
        let mut p = LivePublisher::new(tx);
        let t0 = Instant::now();
        let page = |text: &str| Ok(parse(text, |_| true));
        let text = "# TYPE c counter\nc 10\n# TYPE g gauge\ng 3\n";
        p.publish(t0, [("h/metrics", &page(text))].into_iter());
        let first = rx.borrow().clone();
        assert_eq!(first.round, 1);
        assert_eq!(
            first
                .series
                .iter()
                .map(|s| (s.series.as_str(), s.value, s.rate))
                .collect::<Vec<_>>(),
            [("c", 10.0, None), ("g", 3.0, None)]
        );
        let text = "# TYPE c counter\nc 30\n# TYPE g gauge\ng 5\n";
        let failed = Err("refused".to_string());
        p.publish(
            t0 + Duration::from_secs(2),
            [("h/metrics", &page(text)), ("x/metrics", &failed)].into_iter(),
        );
        let second = rx.borrow().clone();
        assert_eq!((second.round, second.failed_sources), (2, 1));
        assert_eq!(second.series[0].rate, Some(10.0));
        assert_eq!(second.series[1].rate, None);
        // A counter that went down restarted: 4 in 1 s.
        p.publish(
            t0 + Duration::from_secs(3),
            [("h/metrics", &page("# TYPE c counter\nc 4\n"))].into_iter(),
        );
        assert_eq!(rx.borrow().series[0].rate, Some(4.0));
    }

    #[test]
    fn a_round_hands_on_the_first_series_only_and_counts_the_rest() {
        let (tx, rx) = watch::channel(ServerNow::default());
        let mut p = LivePublisher::new(tx);
        let text: String = (0..MAX_LIVE_SERIES + 3)
            .map(|i| format!("# TYPE s{i:02} gauge\ns{i:02} {i}\n"))
            .collect();
        p.publish(
            Instant::now(),
            [("h", &Ok(parse(&text, |_| true)))].into_iter(),
        );
        let now = rx.borrow().clone();
        assert_eq!((now.series.len(), now.more), (MAX_LIVE_SERIES, 3));
        assert_eq!(now.series[0].series, "s00");
        assert_eq!(
            now.series[MAX_LIVE_SERIES - 1].value,
            (MAX_LIVE_SERIES - 1) as f64
        );
    }
}
