//! Tests of the exact merge: counters, histograms, phases and the refusals.
use super::*;
use crate::result::Class;
use std::collections::BTreeMap;

use crate::report::model::delivery_report::LevelDelivery;
use crate::shard::artifact::{Load, ShardLevel};
use crate::shard::assemble::from_log_dump;
use crate::shard::fixtures::{assert_level_eq, empty_artifact, random_events, record};
use crate::shard::logs::to_log_lines;
use crate::shard_contract::{split_count, ShardSpec};
use crate::stats::Clock;
use crate::stats::LevelStats;
use crate::topic_server::TopicFetchStats;

const LEVELS: [(&str, u64, u64); 3] = [("1", 1, 11), ("20", 20, 22), ("50", 50, 33)];

/// `count` shards of one run, the events of each level dealt out by topic striping, and the
/// single-process stats that recorded every event.
fn run(count: u32, events: usize) -> (Vec<ShardArtifact>, Vec<LevelStats>) {
    let clock = Clock::new();
    let mut single = Vec::new();
    let mut per_shard: Vec<Vec<LevelStats>> = vec![Vec::new(); count as usize];
    for &(_, _, seed) in &LEVELS {
        let mut all = LevelStats::default();
        let mut parts = vec![LevelStats::default(); count as usize];
        for e in random_events(seed, events) {
            record(&mut all, &clock, &e);
            record(&mut parts[e.topic % count as usize], &clock, &e);
        }
        single.push(all);
        for (s, p) in per_shard.iter_mut().zip(parts) {
            s.push(p);
        }
    }
    let shards = per_shard
        .iter()
        .enumerate()
        .map(|(i, levels)| {
            let spec = ShardSpec {
                index: i as u32,
                count,
                run_id: "run-42".into(),
                start_at: None,
            };
            let mut phase = PhaseResult {
                topics: split_count(40, i as u32, count),
                duration_s: 0.1 * (i + 1) as f64,
                ..Default::default()
            };
            phase.counts.0[Class::Accepted.index()] = phase.topics;
            ShardArtifact {
                config: serde_json::json!({"tenants": 10}),
                topics: (0..40).map(|t| format!("topic-{t}")).collect(),
                registration: Some(phase),
                levels: levels
                    .iter()
                    .zip(LEVELS)
                    .map(|(s, (label, c, _))| {
                        let part = split_count(c, i as u32, count);
                        ShardLevel::new(label, Load::Concurrency(part), s.clone())
                    })
                    .collect(),
                ..empty_artifact(&spec, "http://hub:9000/hub")
            }
        })
        .collect();
    (shards, single)
}

/// Level `l` of shard `i`: deliveries of subscriber `<i>/0` with e2e samples, and fetches.
fn delivery_of(i: u32, l: usize) -> (LevelDelivery, TopicFetchStats) {
    let mut d = LevelDelivery {
        seconds: 1.0 + i as f64,
        backlog: u64::from(i) + 1,
        ..LevelDelivery::default()
    };
    let c = crate::subscriber::DeliveryCounts {
        expected: 10 + u64::from(i),
        delivered: 9 + u64::from(i),
        lost: 1,
        duplicates: l as u64,
        ..Default::default()
    };
    d.stats.counts += &c;
    d.stats.per_subscriber.insert(format!("{i}/0"), c);
    for k in 0..50 + u64::from(i) * 7 + l as u64 {
        crate::stats::record(&mut d.stats.e2e_from_start, 100 + k * 37 * u64::from(i + 1));
        crate::stats::record(&mut d.stats.e2e_from_accepted, 10 + k);
    }
    // Subscription churn: its counts and both histograms cross the wire whole.
    let mut churn = crate::subscriber::ChurnStats {
        unsubscribed: 3 + u64::from(i),
        resubscribed: 2 + u64::from(i),
        failed: 1,
        after_unsubscribe: u64::from(i),
        ambiguous: 4 + l as u64,
        ..Default::default()
    };
    for k in 0..5 + u64::from(i) {
        crate::stats::record(&mut churn.subscribe_latency, 300 + k * 11);
        crate::stats::record(
            &mut churn.time_to_first_delivery,
            2_000 + k * 997 * u64::from(i + 1),
        );
    }
    d.stats.churn = Some(churn);
    let t = TopicFetchStats {
        fetches: 5 + u64::from(i),
        fetched_new: 4 + u64::from(i),
        fetched_again: 1,
        by_topic: vec![u64::from(i), 5],
        ..Default::default()
    };
    (d, t)
}

#[test]
fn deliveries_subscriptions_and_fetches_merge_exactly_through_the_wire() {
    let (mut shards, _) = run(2, 200);
    for s in &mut shards {
        let i = s.meta.shard_index;
        for (l, level) in s.levels.iter_mut().enumerate() {
            let (d, t) = delivery_of(i, l);
            level.delivery = Some(d);
            level.topic_server = Some(t);
        }
        s.subscription = Some(SubscriptionReport {
            requested: 3 + u64::from(i),
            verified: 3 + u64::from(i),
            duration_s: 0.5 * f64::from(i + 1),
            ..Default::default()
        });
    }
    let dump: String = shards
        .iter()
        .flat_map(to_log_lines)
        .map(|l| l + "\n")
        .collect();
    let merged = merge(from_log_dump(&dump).unwrap()).unwrap();
    for (l, m) in merged.levels.iter().enumerate() {
        let (d0, t0) = delivery_of(0, l);
        let (d1, t1) = delivery_of(1, l);
        let d = m.delivery.as_ref().unwrap();
        assert_eq!(d.stats.counts.delivered, 9 + 10);
        let (c, c0, c1) = (
            d.stats.churn.as_ref().expect("churn merged"),
            d0.stats.churn.as_ref().unwrap(),
            d1.stats.churn.as_ref().unwrap(),
        );
        assert_eq!(
            (
                c.unsubscribed,
                c.resubscribed,
                c.failed,
                c.after_unsubscribe,
                c.ambiguous
            ),
            (3 + 4, 2 + 3, 2, 1, 2 * (4 + l as u64))
        );
        let mut ttfd = c0.time_to_first_delivery.clone();
        ttfd.add(&c1.time_to_first_delivery).unwrap();
        assert_eq!(c.time_to_first_delivery, ttfd);
        assert_eq!(c.subscribe_latency.len(), 5 + 6);
        assert_eq!(d.stats.counts.duplicates, 2 * l as u64);
        assert_eq!(d.stats.per_subscriber.len(), 2);
        assert_eq!(
            (d.seconds, d.backlog),
            (2.0, 3),
            "longest span, backlogs add"
        );
        // Exact: the merged histogram holds every sample of both, at the same values.
        let mut want = d0.stats.e2e_from_start.clone();
        want.add(&d1.stats.e2e_from_start).unwrap();
        assert_eq!(d.stats.e2e_from_start, want);
        assert_eq!(
            d.stats.e2e_from_start.len(),
            d0.stats.e2e_from_start.len() + d1.stats.e2e_from_start.len()
        );
        let t = m.topic_server.as_ref().unwrap();
        assert_eq!((t.fetches, t.fetched_new), (t0.fetches + t1.fetches, 9));
        assert_eq!(t.by_topic, [1, 10]);
    }
    let sub = merged.subscription.unwrap();
    assert_eq!((sub.requested, sub.verified, sub.duration_s), (7, 7, 1.0));
    assert_eq!(merged.unsubscription, None);
    // Artifacts without these sections (no subscribers, or older builds: the JSON has no
    // such keys) read and merge to none.
    let (plain, _) = run(2, 50);
    let json = plain[0].to_json();
    assert!(!json.contains("\"delivery\"") && !json.contains("\"subscription\""));
    let dump: String = plain
        .iter()
        .flat_map(to_log_lines)
        .map(|l| l + "\n")
        .collect();
    let m = merge(from_log_dump(&dump).unwrap()).unwrap();
    assert!(m
        .levels
        .iter()
        .all(|l| l.delivery.is_none() && l.topic_server.is_none()));
    assert_eq!(m.subscription, None);
}

#[test]
fn merge_of_shards_equals_single_process() {
    for count in [1u32, 2, 3, 7] {
        let (shards, single) = run(count, 3_000);
        // Through the full wire path: stdout lines, a noisy dump, reassembly, in reverse order.
        let mut dump = String::new();
        for s in shards.iter().rev() {
            dump.push_str("[pod/x] starting\n");
            for l in to_log_lines(s) {
                dump.push_str(&format!(
                    "[pod/hubload-{}-abc/hubload] {l}\n",
                    s.meta.shard_index
                ));
            }
        }
        let collected = from_log_dump(&dump).unwrap();
        assert_eq!(collected.len(), count as usize);
        let merged = merge(collected).unwrap();
        assert_eq!(
            (merged.run_id.as_str(), merged.shard_count),
            ("run-42", count)
        );
        assert_eq!(merged.levels.len(), LEVELS.len());
        for ((m, s), (label, c, _)) in merged.levels.iter().zip(&single).zip(LEVELS) {
            assert_eq!(m.label, label);
            assert_eq!(m.load, Load::Concurrency(c), "loads add back up");
            assert_level_eq(&m.stats, s);
            assert!(m.stats.attempts() > 3_000);
        }
        let reg = merged.registration.unwrap();
        assert_eq!((reg.topics, reg.ok()), (40, 40));
        assert!((reg.duration_s - 0.1 * f64::from(count)).abs() < 1e-9);
        assert!(!merged.partial);
        assert_eq!(merged.topics.len(), 40);
    }
}

#[test]
fn missing_shards_are_named() {
    let (mut shards, _) = run(5, 50);
    shards.remove(3);
    shards.remove(1);
    let e = merge(shards).unwrap_err();
    assert!(
        matches!(&e, MergeError::MissingShards(v) if v == &[1, 3]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "missing shard index(es) 1, 3; every index from 0 to count−1 is needed"
    );
    assert!(matches!(merge(vec![]), Err(MergeError::Empty)));
}

#[test]
fn first_failures_survive_the_wire_and_the_lowest_shard_wins() {
    let (mut shards, _) = run(3, 50);
    let ff = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    shards[2].levels[0].first_failures = ff(&[("http_503", "from 2"), ("denied", "d2")]);
    shards[1].levels[0].first_failures = ff(&[("http_503", "from 1")]);
    // Through the log lines, as `merge` reads them.
    let lines: String = shards
        .iter()
        .rev()
        .flat_map(to_log_lines)
        .map(|l| l + "\n")
        .collect();
    let back = from_log_dump(&lines).unwrap();
    let m = merge(back).unwrap();
    assert_eq!(
        m.levels[0].first_failures,
        ff(&[("denied", "d2"), ("http_503", "from 1")])
    );
    assert!(m.levels[1].first_failures.is_empty());
}

#[test]
fn duplicates_are_rejected() {
    let (mut shards, _) = run(3, 50);
    shards.push(shards[2].clone());
    let e = merge(shards).unwrap_err();
    assert!(matches!(e, MergeError::Duplicate(2)), "{e:?}");
}

#[test]
fn shards_that_do_not_belong_are_named() {
    type Spoil = fn(&mut ShardArtifact);
    let cases: [(&str, Spoil); 7] = [
        ("run_id", |s| s.meta.run_id = "other".into()),
        ("shard_count", |s| s.meta.shard_count = 4),
        ("layout", |s| s.meta.layout.significant_digits = 2),
        ("hubload_version", |s| {
            s.meta.hubload_version = "0.0.1".into()
        }),
        ("levels", |s| s.levels[1].label = "21".into()),
        ("levels", |s| {
            s.levels.pop();
        }),
        ("level \"20\" load", |s| s.levels[1].load = Load::Rate(1.0)),
    ];
    for (field, spoil) in cases {
        let (mut shards, _) = run(3, 30);
        spoil(&mut shards[2]);
        let e = merge(shards).unwrap_err();
        match &e {
            MergeError::Mismatch {
                field: f, index, ..
            } => {
                assert_eq!((f.as_str(), *index), (field, 2), "{e}");
            }
            other => panic!("{field}: {other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with(&format!("shard 2 does not belong with shard 0: {field} is")),
            "{e}"
        );
    }
}

#[test]
fn service_bus_sections_add_up() {
    use crate::report::model::EmulatorTotals;
    let section = |reconnects, puts, busy: u64, accepted: u64, topic: &str| ServiceBusInfo {
        endpoint: "amqp://127.0.0.1:5672".into(),
        topics: "per-topic".into(),
        connections: 2,
        reconnects,
        token_puts: puts,
        conditions: [("amqp:internal-error".to_string(), busy)].into(),
        emulator: Some(EmulatorTotals {
            accepted,
            throttled: 1,
            unauthorized: 0,
            accepted_per_topic: [(topic.to_string(), accepted)].into(),
        }),
    };
    let (mut shards, _) = run(2, 100);
    shards[0].servicebus = Some(section(1, 4, 2, 30, "a"));
    shards[1].servicebus = Some(section(0, 6, 5, 50, "b"));
    let m = merge(shards.clone()).unwrap();
    let sb = m.servicebus.unwrap();
    assert_eq!((sb.reconnects, sb.token_puts, sb.connections), (1, 10, 2));
    assert_eq!(
        sb.conditions,
        [("amqp:internal-error".to_string(), 7)].into()
    );
    let emu = sb.emulator.unwrap();
    assert_eq!((emu.accepted, emu.throttled), (80, 2));
    assert_eq!(
        emu.accepted_per_topic,
        [("a".to_string(), 30), ("b".to_string(), 50)].into()
    );
    // One shard without an emulator: the emulators' counts are no longer the run's.
    shards[1].servicebus.as_mut().unwrap().emulator = None;
    assert_eq!(
        merge(shards.clone()).unwrap().servicebus.unwrap().emulator,
        None
    );
    // A hub run has no section.
    for s in &mut shards {
        s.servicebus = None;
    }
    assert_eq!(merge(shards).unwrap().servicebus, None);
}

#[test]
fn a_partial_shard_makes_the_run_partial() {
    let (mut shards, _) = run(2, 30);
    assert!(!merge(shards.clone()).unwrap().partial);
    shards[1].partial = true;
    assert!(merge(shards).unwrap().partial);
}

#[test]
fn records_in_any_interleaving_merge_as_the_whole_artifacts_level_by_level() {
    let (shards, _) = run(3, 400);
    let whole = merge(shards.clone()).unwrap();
    // Shard 2's records first, then 1's, then 0's, round-robin: shards ahead of their turn wait.
    let mut queues: Vec<std::collections::VecDeque<Keyed>> = shards
        .iter()
        .rev()
        .map(|s| crate::shard::assemble::artifact_records(s.clone()).into())
        .collect();
    let mut m = StreamMerge::default();
    let mut start = None;
    let mut levels = Vec::new();
    let mut sent = [0usize; 3];
    while queues.iter().any(|q| !q.is_empty()) {
        for (qi, q) in queues.iter_mut().enumerate() {
            let Some(k) = q.pop_front() else { continue };
            sent[qi] += usize::from(matches!(k.record, ShardRecord::Level(_)));
            m.push(k).unwrap();
            start = start.or_else(|| m.take_start());
            while let Some(l) = m.next_level() {
                // A level comes out once every shard has sent it, not before.
                assert!(sent.iter().all(|&n| n > levels.len()), "{sent:?}");
                levels.push(l);
            }
        }
    }
    assert!(m.all_ended());
    let end = m.finish(true).unwrap();
    let start = start.unwrap();
    assert_eq!(levels.len(), whole.levels.len());
    for (a, b) in levels.iter().zip(&whole.levels) {
        assert_eq!((&a.label, a.load), (&b.label, b.load));
        assert_level_eq(&a.stats, &b.stats);
    }
    let (r, w) = (start.registration.unwrap(), whole.registration.unwrap());
    assert_eq!((r.topics, r.duration_s), (w.topics, w.duration_s));
    assert_eq!(start.meta.started_at, whole.meta.started_at);
    assert_eq!(
        (end.partial, end.finished_at),
        (whole.partial, whole.meta.finished_at)
    );
}

#[test]
fn more_shards_than_the_count_and_a_wrong_end_are_refused() {
    let (shards, _) = run(2, 20);
    let mut m = StreamMerge::default();
    let mut recs = crate::shard::assemble::artifact_records(shards[0].clone());
    let mut k = recs.remove(0);
    k.key.1 = 2;
    let e = m.push(k).unwrap_err().to_string();
    assert_eq!(e, "shard 2: its index is not below the shard count 2");
    // An end that counts levels that never came.
    let mut m = StreamMerge::default();
    let recs = crate::shard::assemble::artifact_records(shards[1].clone());
    let (head, end) = (recs.first().unwrap(), recs.last().unwrap());
    let again = |k: &Keyed| Keyed {
        key: k.key.clone(),
        level: k.level,
        record: k.record.clone(),
    };
    m.push(again(head)).unwrap();
    let e = m.push(again(end)).unwrap_err().to_string();
    assert_eq!(e, "shard 1: its end says 3 level(s), 0 came");
}
