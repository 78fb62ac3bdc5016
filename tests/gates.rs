//! The fairness gates through the real binary: a hub slowed for one tenant fails
//! `tenant_fairness>0.99` with exit code 1 and a line naming the gate, a uniformly slowed hub
//! passes it, and `compare --fail-if` judges the candidate run's isolation verdict.

use std::process::Output;

use hubload_hub::FaultConfig;

use crate::fairness::{hub_accepted, jain_by_hand};
use crate::noisy;
use crate::util::{assert_exit, Scenario};

/// 4 tenants, 4 workers, 80 publishes, a 300 ms timeout, one fairness gate.
const FLAGS: &[&str] = &[
    "--tenants",
    "4",
    "--concurrency",
    "4",
    "--requests",
    "80",
    "--timeout",
    "300ms",
    "--threshold",
    "tenant_fairness>0.99",
];

/// The words of stdout's verdict line for `gate`, e.g. `FAIL tenant_fairness>0.99 level 4
/// actual 0.750 bound > 0.99`. A level the run judged generator-bound (as it is when the
/// machine is busy) carries the mark `(generator-bound level)` after them: it must be there
/// exactly when summary.json's `generator_bound` says so, and is left out of the words.
fn verdict_words(out: &Output, gate: &str, generator_bound: Option<bool>) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(gate))
        .unwrap_or_else(|| panic!("no verdict line for {gate}:\n{stdout}"));
    let mut words: Vec<String> = line.split_whitespace().map(String::from).collect();
    let marked = words.ends_with(&["(generator-bound".to_string(), "level)".to_string()]);
    assert_eq!(marked, generator_bound == Some(true), "{line}");
    if marked {
        words.truncate(words.len() - 2);
    }
    words
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_slowed_for_one_tenant_fails_the_fairness_gate_with_exit_1() {
    // The hub holds tenant0002's publishes 2 s (its "broker" latency: publishes only, so its
    // topics still register), far past the 300 ms every attempt may take: each of them times
    // out, and every other tenant's is accepted.
    let sc = Scenario::start(FaultConfig {
        broker_latency_ms: 2000,
        topic_prefixes: vec!["tenant0002.".into()],
        ..FaultConfig::default()
    })
    .await;
    let out = sc.bin(FLAGS).await;
    assert_exit(&out, 1);
    let r = sc.summary("");
    let level = &r.levels[0];
    let f = level.fairness.as_ref().expect("4 tenants: figures");
    let hub = hub_accepted(&sc.hub_stats().await.topics);
    for t in &f.by_tenant {
        match t.tenant.as_str() {
            // Every attempt of the slowed tenant timed out; so did nothing else.
            "tenant0002" => {
                assert_eq!(t.good, 0);
                assert_eq!(t.attempts, level.derived.timeouts.response, "{level:?}");
            }
            other => assert_eq!((t.good, t.attempts), (hub[other], hub[other]), "{other}"),
        }
    }
    assert_eq!(level.derived.samples, 80);
    // Jain's index over good ÷ attempts, from the hub's accepted counts: (1 + 1 + 0 + 1)² ÷
    // (4 × 3) = 0.75.
    let x: Vec<f64> = f
        .by_tenant
        .iter()
        .map(|t| hub.get(&t.tenant).map_or(0.0, |&a| a as f64) / t.attempts as f64)
        .collect();
    assert_eq!(jain_by_hand(&x), 0.75);
    assert!((f.jain_index.unwrap() - 0.75).abs() < 1e-12, "{f:?}");
    // The verdict names the gate, the level, the index and the bound.
    assert_eq!(
        verdict_words(&out, "tenant_fairness>0.99", level.generator_bound),
        [
            "FAIL",
            "tenant_fairness>0.99",
            "level",
            "4",
            "actual",
            "0.750",
            "bound",
            ">",
            "0.99"
        ]
    );
    assert_eq!(r.verdicts.len(), 1);
    assert!(!r.verdicts[0].passed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_slowed_for_every_tenant_alike_passes_the_fairness_gate() {
    let sc = Scenario::start(FaultConfig {
        broker_latency_ms: 20,
        ..FaultConfig::default()
    })
    .await;
    let out = sc.bin(FLAGS).await;
    assert_exit(&out, 0);
    let r = sc.summary("");
    let f = r.levels[0].fairness.as_ref().expect("4 tenants: figures");
    let hub = hub_accepted(&sc.hub_stats().await.topics);
    assert_eq!(f.tenants, 4);
    for t in &f.by_tenant {
        assert_eq!(
            (t.good, t.attempts),
            (hub[&t.tenant], hub[&t.tenant]),
            "{}",
            t.tenant
        );
    }
    // Every tenant got all it asked for: the index is 1 (to the last bit or so).
    assert!((f.jain_index.unwrap() - 1.0).abs() < 1e-12, "{f:?}");
    assert_eq!(
        verdict_words(&out, "tenant_fairness>0.99", r.levels[0].generator_bound),
        [
            "PASS",
            "tenant_fairness>0.99",
            "level",
            "4",
            "actual",
            "1.000",
            "bound",
            ">",
            "0.99"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_fail_if_judges_the_candidate_s_isolation_verdict() {
    // Two surge runs against the hub that answers every publish after 25 ms (tests/noisy.rs):
    // through 64 connections the quiet tenants do not notice the surge; through 2 a backlog
    // builds and their p99 rises far beyond 300 %.
    let sc = Scenario::start(noisy::slow_hub()).await;
    let dir = sc.dir.path().to_path_buf();
    for (name, pool) in [("roomy", "64"), ("contended", "2")] {
        let out = dir.join(name);
        let mut flags = noisy::flags(pool, noisy::GATE);
        flags.extend(["--out", out.to_str().unwrap()]);
        sc.run(&flags).await;
    }
    let (roomy, contended) = (sc.summary("roomy"), sc.summary("contended"));
    let label = roomy.levels[0].label.clone();
    assert_eq!(contended.levels[0].label, label);
    let up = |r: &hubload::report::document::Report| {
        r.levels[0]
            .isolation
            .as_ref()
            .expect("a verdict")
            .p99_increase_pct
            .unwrap()
    };
    assert!(
        up(&contended) > 300.0 && up(&roomy) <= 300.0,
        "{} {}",
        up(&contended),
        up(&roomy)
    );
    let compare = |base: &str, cand: &str, rule: &str| {
        crate::util::bin(
            &["compare", base, cand, "--fail-if", rule, "--out", "cmp"],
            &dir,
        )
    };
    // The contended run as the candidate fails, naming the rule, the level and both figures.
    let out = compare("roomy", "contended", "quiet_p99_increase>300%");
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = format!(
        "  quiet_p99_increase>300%: level {label}: candidate {:.3}% (baseline {:.3}%)",
        up(&contended),
        up(&roomy)
    );
    assert!(stdout.lines().any(|l| l == line), "{line}\n{stdout}");
    assert!(
        stdout.contains("FAIL: 1 threshold violation(s):"),
        "{stdout}"
    );
    // The other way round the candidate is the roomy run: it passes.
    let out = compare("contended", "roomy", "quiet_p99_increase>300%");
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("PASS: no level breaks quiet_p99_increase>300%"));
    // quiet_errors reads the candidate's error % during the surge.
    let errors = contended.levels[0]
        .isolation
        .as_ref()
        .unwrap()
        .surge
        .error_pct;
    let out = compare("roomy", "contended", "quiet_errors>0.1%");
    assert_exit(&out, if errors > 0.1 { 1 } else { 0 });
}
