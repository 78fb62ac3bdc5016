//! The "Worst topics" section of report.html: per level, the 20 topics with the highest p99
//! and the 20 with the highest error %, from the rows' `topics` (the compact per-topic histograms).

use std::fmt::Write;

use super::markup::{fmt_error_pct, head_cells, table, Cell};
use super::svg::escape;
use crate::report::document::Report;
use crate::report::model::{LevelReport, TopicFigures, TopicReport};
use crate::report::precision::ms3;

/// How many topics each ranking shows.
pub const WORST: usize = 20;

/// The `n` worst topics of a level by `key` of their figures (descending; ties by topic index).
pub fn worst(
    l: &LevelReport,
    key: impl Fn(&TopicFigures) -> f64,
    n: usize,
) -> Vec<(&TopicReport, TopicFigures)> {
    let mut v: Vec<(&TopicReport, TopicFigures)> = (l.topics.iter())
        .map(|t| (t, t.figures()))
        .filter(|(_, f)| f.attempts > 0)
        .collect();
    v.sort_by(|(a, fa), (b, fb)| key(fb).total_cmp(&key(fa)).then(a.topic.cmp(&b.topic)));
    v.truncate(n);
    v
}

fn by_p99(f: &TopicFigures) -> f64 {
    f.p99_us as f64
}

fn by_errors(f: &TopicFigures) -> f64 {
    f.error_pct
}

/// Keep of `l`'s topics only those a ranking shows, noting how many had an attempt: what a run
/// holds of a level whose rows are in topics.jsonl. The rankings read the same. Returns every
/// row the level held, moved out.
pub fn keep_worst(l: &mut LevelReport) -> Vec<TopicReport> {
    let mut keep: Vec<usize> = (worst(l, by_p99, WORST).into_iter())
        .chain(worst(l, by_errors, WORST))
        .map(|(t, _)| t.topic)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let attempted = l.topics.iter().filter(|t| !t.stats.is_empty()).count();
    l.topics_with_attempts = Some(l.topics_with_attempts.unwrap_or(attempted));
    let all = std::mem::take(&mut l.topics);
    l.topics = (all.iter())
        .filter(|t| keep.binary_search(&t.topic).is_ok())
        .cloned()
        .collect();
    all
}

fn ranking(report: &Report, topics: &[(&TopicReport, TopicFigures)]) -> String {
    let head = ["Topic", "Attempts", "Error %", "p50 ms", "p99 ms", "Max ms"];
    let head = head_cells(&head);
    let rows: Vec<Vec<Cell>> = topics
        .iter()
        .map(|(t, f)| {
            let name = report
                .topics
                .get(t.topic)
                .map(|n| n.to_string())
                .unwrap_or_else(|| t.topic.to_string());
            vec![
                Cell::text(name),
                Cell::num(f.attempts.to_string()),
                Cell::num(fmt_error_pct(f.error_pct)),
                Cell::num(ms3(f.p50_us as f64)),
                Cell::num(ms3(f.p99_us as f64)),
                Cell::num(ms3(f.max_us as f64)),
            ]
        })
        .collect();
    table(&head, &rows, false)
}

/// The section, or an empty string when no level has per-topic statistics.
pub fn worst_topics(report: &Report) -> String {
    if report.levels.iter().all(|l| l.topics.is_empty()) {
        return String::new();
    }
    let mut b = format!("<h2>Worst topics</h2><p>Per level, the {WORST} topics with the highest p99 and the {WORST} with the highest error %. Topic percentiles come from a compact histogram and read up to 12.5% high.</p>");
    for l in report.levels.iter().filter(|l| !l.topics.is_empty()) {
        let _ = write!(
            b,
            "<details><summary>Level {} ({} topics)</summary><div class=\"cols\"><section><h3>By p99</h3>{}</section><section><h3>By error %</h3>{}</section></div></details>",
            escape(&l.label),
            l.topics_with_attempts
                .unwrap_or_else(|| l.topics.iter().filter(|t| !t.stats.is_empty()).count()),
            ranking(report, &worst(l, by_p99, WORST)),
            ranking(report, &worst(l, by_errors, WORST)),
        );
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Class;
    use crate::stats::TopicStats;

    /// Topic `i` with `attempts` attempts, `accepted` of them (at most) accepted and the rest 503s,
    /// every one taking `us` µs (so its p99 and max are `us`).
    fn topic(i: usize, attempts: u64, accepted: u64, us: u64) -> TopicReport {
        let mut stats = TopicStats::default();
        for _ in 0..accepted.min(attempts) {
            stats.record(Class::Accepted, us);
        }
        for _ in accepted..attempts {
            stats.record(Class::Http503, us);
        }
        TopicReport { topic: i, stats }
    }

    #[test]
    fn rankings_take_the_twenty_worst() {
        let mut r = crate::report::html::tests::sample();
        let l = &mut r.levels[0];
        // 30 topics: p99 grows with the index, errors shrink with it; topic 29 has no attempts.
        l.topics = (0..30)
            .map(|i| {
                topic(
                    i,
                    if i == 29 { 0 } else { 100 },
                    70 + i as u64,
                    1000 * (i as u64 + 1),
                )
            })
            .collect();
        let by_p99: Vec<usize> = (worst(l, by_p99, WORST).iter())
            .map(|(t, f)| {
                assert_eq!(f.p99_us, 1000 * (t.topic as u64 + 1));
                t.topic
            })
            .collect();
        assert_eq!(by_p99, (9..29).rev().collect::<Vec<_>>());
        let by_err: Vec<usize> = worst(l, by_errors, WORST)
            .iter()
            .map(|(t, _)| t.topic)
            .collect();
        assert_eq!(by_err, (0..20).collect::<Vec<_>>());
        let html = worst_topics(&r);
        assert_eq!(html.matches("<tbody>").count(), 2);
        assert_eq!(html.matches("<tr>").count(), 2 * (WORST + 1));
        // The fixture's other levels have no per-topic statistics: one level shown.
        assert_eq!(html.matches("<details>").count(), 1);
    }

    #[test]
    fn keeping_the_worst_leaves_the_section_as_it_was() {
        // 300 topics with attempts, p99 and errors spread so the two rankings differ: kept,
        // the level holds at most 40 of them and the section's HTML is the same bytes.
        let mut r = crate::report::html::tests::sample();
        r.levels[0].topics = (0..300)
            .map(|i| {
                topic(
                    i,
                    100,
                    100 - (i as u64 * 37) % 50,
                    1000 + (i as u64 * 7919) % 90_000,
                )
            })
            .collect();
        r.levels[0].topics.push(topic(300, 0, 0, 0));
        let whole = worst_topics(&r);
        assert!(whole.contains("(300 topics)"), "{whole}");
        assert_eq!(keep_worst(&mut r.levels[0]).len(), 301);
        assert!(r.levels[0].topics.len() <= 2 * WORST);
        assert!(r.levels[0].topics.len() > WORST);
        assert_eq!(r.levels[0].topics_with_attempts, Some(300));
        let kept = worst_topics(&r);
        assert_eq!(kept, whole);
        // Kept again (a second write): nothing changes.
        let again = r.levels[0].topics.clone();
        keep_worst(&mut r.levels[0]);
        assert_eq!(r.levels[0].topics, again);
        assert_eq!(r.levels[0].topics_with_attempts, Some(300));
    }
}
