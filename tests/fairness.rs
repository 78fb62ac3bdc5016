//! Fairness between tenants against the hub's own counts: a hub that slows and fails one
//! tenant's topics only is named by hubload, its index and spread follow the hub's counts; a
//! uniform hub is fair.

use std::collections::BTreeMap;

use hubload_hub::FaultConfig;

use crate::util::Scenario;

/// The hub's accepted publishes per tenant (the topic name's first dot-separated part).
pub(crate) fn hub_accepted(
    topics: &BTreeMap<String, hubload_hub::TopicStats>,
) -> BTreeMap<String, u64> {
    let mut by = BTreeMap::new();
    for (name, t) in topics {
        let tenant = name.split('.').next().unwrap().to_string();
        *by.entry(tenant).or_default() += t.published;
    }
    by
}

/// Jain's index written out: (Σx)² ÷ (n·Σx²).
pub(crate) fn jain_by_hand(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * sq)
}

/// Register the 16 topics (4 tenants × 4 channels) with a first run of 4 publishes, set
/// `faults` on the hub, then run hubload with `flags` and no registration: faults that hit a
/// registration would leave topics unregistered and their publishes denied, a failure of
/// another kind, and arming them between phases of one run raced the load on a busy machine.
/// Returns the run and what the hub accepted during it, by tenant.
async fn run_then_fault(
    sc: &Scenario,
    faults: FaultConfig,
    flags: &[&str],
) -> (hubload::RunOutcome, BTreeMap<String, u64>) {
    sc.run(&["--tenants", "4", "--concurrency", "4", "--requests", "4"])
        .await;
    let stats = sc.hub.stats().await;
    assert_eq!(stats.register.accepted, 16);
    let before = hub_accepted(&stats.topics);
    sc.hub.state.set_faults(faults);
    let out = sc.run(&[flags, &["--register", "never"]].concat()).await;
    let mut during = hub_accepted(&sc.hub.stats().await.topics);
    for (tenant, n) in &mut during {
        *n -= before.get(tenant).copied().unwrap_or(0);
    }
    (out, during)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_slowed_and_failing_for_one_tenant_names_exactly_that_tenant() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let faults = FaultConfig {
        latency_ms: 100,
        fail_503_every: Some(2),
        topic_prefixes: vec!["tenant0002.".into()],
        ..FaultConfig::default()
    };
    let (out, accepted) = run_then_fault(
        &sc,
        faults,
        &[
            "--tenants",
            "4",
            "--concurrency",
            "4",
            "--requests",
            "200",
            "--threshold",
            "tenant_fairness>0.95",
            "--threshold",
            "tenant_p99_spread<2",
        ],
    )
    .await;
    let r = &out.report;
    let f = r.levels[0].fairness.as_ref().expect("4 tenants: figures");
    let s = sc.hub.stats().await;
    assert_eq!(f.tenants, 4);
    // Every tenant's good attempts are the hub's accepted publishes of its topics; only
    // tenant0002's topics were faulted, so every 503 the hub injected is its.
    assert!(s.publish.fault_503 > 0);
    for t in &f.by_tenant {
        assert_eq!(t.good, accepted[&t.tenant], "{}", t.tenant);
        let want = match t.tenant.as_str() {
            "tenant0002" => s.publish.fault_503,
            _ => 0,
        };
        assert_eq!(t.attempts - t.good, want, "{}", t.tenant);
    }
    let slow = f
        .by_tenant
        .iter()
        .find(|t| t.tenant == "tenant0002")
        .unwrap();
    let names = |v: &[hubload::fairness::TenantShare]| -> Vec<String> {
        v.iter().map(|t| t.tenant.clone()).collect()
    };
    assert_eq!(names(&f.worst_errors), ["tenant0002"]);
    assert_eq!(names(&f.worst_p99)[0], "tenant0002");
    // Its accepted publishes waited the injected 100 ms: the p99 is at least that.
    assert!(slow.p99_us >= 100_000, "{slow:?}");
    // The spread: its p99 over the median of the four tenants' p99s (the middle two's mean).
    let mut p99s: Vec<u64> = f.by_tenant.iter().map(|t| t.p99_us).collect();
    p99s.sort();
    let median = (p99s[1] + p99s[2]) as f64 / 2.0;
    let spread = f.p99_spread.unwrap();
    assert!(
        (spread - slow.p99_us as f64 / median).abs() < 1e-9,
        "{spread} vs {median}"
    );
    // Jain's index from the hub's counts: xᵢ = accepted ÷ attempts (the index does not change
    // when every x is scaled by the same total shares).
    let x: Vec<f64> = f
        .by_tenant
        .iter()
        .map(|t| accepted[&t.tenant] as f64 / t.attempts as f64)
        .collect();
    let want = jain_by_hand(&x);
    assert!(
        (f.jain_index.unwrap() - want).abs() < 1e-12,
        "{f:?} vs {want}"
    );
    assert!(want < 0.95, "one tenant short of its goodput: {want}");
    // Both gates fail, on the level (the TOTAL is not judged without `total:`).
    assert!(out.thresholds_failed);
    let failed: Vec<&str> = r
        .verdicts
        .iter()
        .filter(|v| !v.passed)
        .map(|v| v.threshold.as_str())
        .collect();
    assert_eq!(failed, ["tenant_fairness>0.95", "tenant_p99_spread<2"]);
    // fairness.csv: one row per tenant; table.txt names the tenant in its fairness block.
    let csv = std::fs::read_to_string(sc.dir.path().join("fairness.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    let table = std::fs::read_to_string(sc.dir.path().join("table.txt")).unwrap();
    let block = table.split("Fairness between tenants").nth(1).unwrap();
    let named = format!("tenant0002 {:.2}%", slow.error_pct);
    assert!(block.contains(&named), "{block}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uniform_hub_is_fair() {
    // Every 10th publish fails, whoever's it is.
    let sc = Scenario::start(FaultConfig::default()).await;
    let faults = FaultConfig {
        fail_503_every: Some(10),
        ..FaultConfig::default()
    };
    let (out, accepted) = run_then_fault(
        &sc,
        faults,
        &[
            "--tenants",
            "4",
            "--concurrency",
            "4",
            "--requests",
            "400",
            "--threshold",
            "tenant_fairness>0.95",
        ],
    )
    .await;
    let f = out.report.levels[0].fairness.as_ref().unwrap();
    let s = sc.hub.stats().await;
    assert!(s.publish.fault_503 > 0);
    let failed: u64 = f.by_tenant.iter().map(|t| t.attempts - t.good).sum();
    assert_eq!(failed, s.publish.fault_503);
    for t in &f.by_tenant {
        assert_eq!(t.good, accepted[&t.tenant], "{}", t.tenant);
    }
    assert!(f.jain_index.unwrap() >= 0.99, "{f:?}");
    assert!(!out.thresholds_failed);
    let total = out
        .report
        .total
        .as_ref()
        .unwrap()
        .fairness
        .as_ref()
        .unwrap();
    assert_eq!(
        total.by_tenant, f.by_tenant,
        "one level: TOTAL is that level"
    );
}
