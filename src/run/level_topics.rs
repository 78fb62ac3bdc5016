//! A finished level's per-topic statistics kept once, in the report's rows: the TOTAL row's
//! topics added up from them, and the dense form read back for shard artifacts.

use crate::report::topics_csv::stats_of;
use crate::stats::TopicStats;
use crate::summary::build::topic_report;
use crate::summary::TopicReport;

/// The TOTAL row's topics: `total`'s (sparse, by topic index) plus one level's (dense), exactly
/// what [`level_report`](crate::summary::build::level_report) makes of the levels' statistics added up.
pub fn add_topics(total: Vec<TopicReport>, level: &[TopicStats]) -> Vec<TopicReport> {
    let mut out = Vec::with_capacity(total.len().max(level.len()));
    let mut before = total.into_iter().peekable();
    for (i, t) in level.iter().enumerate() {
        out.extend(std::iter::from_fn(|| before.next_if(|b| b.topic < i)));
        let mut sum = before
            .next_if(|b| b.topic == i)
            .map_or_else(TopicStats::default, |b| stats_of(&b));
        sum += t;
        if !sum.is_empty() {
            out.push(topic_report(i, &sum));
        }
    }
    out.extend(before);
    out
}

/// A row's topics back as the dense statistics a level measured (up to its last topic with an
/// attempt), for shard artifacts.
pub fn dense_topics(rows: &[TopicReport]) -> Vec<TopicStats> {
    let mut out = vec![TopicStats::default(); rows.last().map_or(0, |t| t.topic + 1)];
    for t in rows {
        out[t.topic] = stats_of(t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Class;

    /// Dense statistics with `spec`'s topics recorded: (topic, class, µs) per attempt.
    fn dense(len: usize, spec: &[(usize, Class, u64)]) -> Vec<TopicStats> {
        let mut v = vec![TopicStats::default(); len];
        for &(t, c, us) in spec {
            v[t].record(c, us);
        }
        v
    }

    fn rows(v: &[TopicStats]) -> Vec<TopicReport> {
        let keep = v.iter().enumerate().filter(|(_, t)| !t.is_empty());
        keep.map(|(i, t)| topic_report(i, t)).collect()
    }

    #[test]
    fn total_rows_are_the_rows_of_the_levels_added_up() {
        // Topic 1 only before, topic 3 only in the level, topics 0 and 5 in both, 2 and 4 in
        // neither; the oracle adds the dense statistics with `+=`.
        let a = dense(
            6,
            &[
                (0, Class::Accepted, 10),
                (1, Class::Accepted, 900),
                (5, Class::TimeoutResponse, 5_000_000),
            ],
        );
        let b = dense(
            6,
            &[
                (0, Class::Accepted, 20),
                (0, Class::Accepted, 3_000),
                (3, Class::Accepted, 7),
                (5, Class::Accepted, 40),
            ],
        );
        let mut sum = a.clone();
        for (s, t) in sum.iter_mut().zip(&b) {
            *s += t;
        }
        let total = add_topics(add_topics(Vec::new(), &a), &b);
        assert_eq!(total, rows(&sum));
        assert_eq!(
            total.iter().map(|t| t.topic).collect::<Vec<_>>(),
            [0, 1, 3, 5]
        );
        assert_eq!(total[0].attempts, 3);
        // A level that ends before the total's last topic keeps the total's tail.
        let short = dense(1, &[(0, Class::Accepted, 1)]);
        let longer = add_topics(total.clone(), &short);
        assert_eq!(longer.len(), 4);
        assert_eq!(longer[0].attempts, 4);
        assert_eq!(longer[1..], total[1..]);
    }

    #[test]
    fn dense_topics_give_back_what_the_level_measured() {
        let v = dense(
            5,
            &[
                (1, Class::Accepted, 15),
                (4, Class::TimeoutConnect, 1 << 20),
            ],
        );
        assert_eq!(dense_topics(&rows(&v)), v);
        assert!(dense_topics(&[]).is_empty());
    }
}
