//! A level's per-topic rows (as topics.jsonl holds them) back as the dense statistics the level
//! measured, for shard artifacts.

use crate::report::topics_csv::stats_of;
use crate::stats::TopicStats;
use crate::summary::TopicReport;

/// A row's topics back as the dense statistics a level measured (up to its last topic with an
/// attempt), for shard artifacts.
pub fn dense_topics(rows: &[TopicReport]) -> Vec<TopicStats> {
    let mut out = vec![TopicStats::default(); rows.iter().map(|t| t.topic + 1).max().unwrap_or(0)];
    for t in rows {
        out[t.topic] = stats_of(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Class;
    use crate::summary::build::topic_report;

    #[test]
    fn dense_topics_give_back_what_the_level_measured() {
        let mut v = vec![TopicStats::default(); 5];
        v[1].record(Class::Accepted, 15);
        v[4].record(Class::TimeoutConnect, 1 << 20);
        let keep = v.iter().enumerate().filter(|(_, t)| !t.is_empty());
        let rows: Vec<TopicReport> = keep.map(|(i, t)| topic_report(i, t)).collect();
        assert_eq!(dense_topics(&rows), v);
        assert!(dense_topics(&[]).is_empty());
    }
}
