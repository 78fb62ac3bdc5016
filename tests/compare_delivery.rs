//! `hubload compare --fail-if` on delivery metrics, on two real runs with subscribers: one
//! against a hub that delivers everything, one against a hub that drops deliveries (a queue
//! of one). Which rules fail, at which levels, and the exit code are computed here from the
//! two summaries' own numbers; a delivery rule against a run without subscribers is one line
//! and exit 2.

use hubload::report::document::Report;
use hubload::report::model::LevelReport;
use hubload_hub::HubConfig;

use crate::util::{assert_exit, bin, line, read_summary, Scenario, SMALL_RUN};

/// The delivery tests' workload, with a short grace and a slow subscriber.
const EXTRA: [&str; 4] = ["--delivery-grace", "1s", "--subscriber-latency", "20ms"];

/// A run with one subscriber per topic against `cfg`'s hub: its report directory.
async fn run(cfg: HubConfig, subscribers: bool) -> Scenario {
    let sc = Scenario::start_with(cfg).await;
    let mut flags = [line(SMALL_RUN), EXTRA.to_vec()].concat();
    if subscribers {
        flags.extend(["--subscribers", "1"]);
    }
    assert_exit(&sc.bin(&flags).await, 0);
    sc
}

/// The rows `compare` checks: the levels both runs have, then TOTAL.
fn rows(r: &Report) -> Vec<&LevelReport> {
    r.levels.iter().chain(r.total.as_ref()).collect()
}

/// `label` of every row where `broken(baseline row, candidate row)` holds.
fn expected(
    b: &Report,
    c: &Report,
    broken: impl Fn(&LevelReport, &LevelReport) -> bool,
) -> Vec<String> {
    rows(b)
        .into_iter()
        .zip(rows(c))
        .inspect(|(x, y)| assert_eq!(x.label, y.label))
        .filter(|(x, y)| broken(x, y))
        .map(|(x, _)| x.label.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_if_judges_delivery_deltas_as_the_summaries_say() {
    let base = run(HubConfig::default(), true).await;
    let cand = run(
        HubConfig {
            delivery_concurrency: 1,
            queue_size: 1,
            ..HubConfig::default()
        },
        true,
    )
    .await;
    let (b, c) = (read_summary(base.dir.path()), read_summary(cand.dir.path()));
    let d = |l: &LevelReport| l.delivery.clone().expect("a delivery section");
    let lost = |l: &LevelReport| d(l).counts.lost as f64;
    let dups = |l: &LevelReport| d(l).counts.duplicates as f64;
    let p99 = |l: &LevelReport| d(l).e2e_us.p99 as f64;
    let rate = |l: &LevelReport| d(l).delivered_per_sec;
    let rel = |x: f64, y: f64| (y - x) * 100.0 / x;
    let want: Vec<(&str, Vec<String>)> = vec![
        ("lost>0", expected(&b, &c, |x, y| lost(y) - lost(x) > 0.0)),
        (
            "duplicates>0",
            expected(&b, &c, |x, y| dups(y) - dups(x) > 0.0),
        ),
        (
            "e2e_p99>+10%",
            expected(&b, &c, |x, y| rel(p99(x), p99(y)) > 10.0),
        ),
        (
            "delivered_rate<-5%",
            expected(&b, &c, |x, y| rel(rate(x), rate(y)) < -5.0),
        ),
    ];
    // The hub's queue of one dropped deliveries: some level lost some.
    assert!(
        !want[0].1.is_empty(),
        "{:?}",
        rows(&c).iter().map(|l| lost(l)).collect::<Vec<_>>()
    );
    let dir = base.dir.path().parent().unwrap();
    let mut args = vec![
        "compare".to_string(),
        base.dir.path().display().to_string(),
        cand.dir.path().display().to_string(),
        "--out".into(),
        cand.dir.path().join("cmp").display().to_string(),
    ];
    for (rule, _) in &want {
        args.extend(["--fail-if".to_string(), rule.to_string()]);
    }
    let out = bin(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Each violation line is `  RULE: level LABEL: …`, rules in the given order.
    let got: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter_map(|l| {
            let (rule, rest) = l.split_once(": level ")?;
            Some(format!("{rule} @ {}", rest.split_once(':')?.0))
        })
        .collect();
    // The verdict names a rule in its canonical form: `lost>0` is shown `lost>+0`.
    let canonical = |r: &str| r.replace(">0", ">+0");
    let want_lines: Vec<String> = want
        .iter()
        .flat_map(|(r, labels)| {
            labels
                .iter()
                .map(move |l| format!("{} @ {l}", canonical(r)))
        })
        .collect();
    assert_eq!(got, want_lines, "{stdout}");
    assert_exit(&out, 1);
    // The delivery rows side by side: each level's Lost line, baseline then candidate.
    let lost_lines: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("Lost "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let pairs: Vec<[String; 2]> = rows(&b)
        .into_iter()
        .zip(rows(&c))
        .map(|(x, y)| [lost(x), lost(y)].map(|n| n.to_string()))
        .collect();
    let shown: Vec<[String; 2]> = lost_lines
        .iter()
        .map(|l| [l[1].to_string(), l[2].to_string()])
        .collect();
    assert_eq!(shown, pairs, "{stdout}");

    // A run without subscribers: a delivery rule is one line naming it and the run, exit 2.
    let plain = run(HubConfig::default(), false).await;
    let plain_dir = plain.dir.path().display().to_string();
    let base_dir = base.dir.path().display().to_string();
    let out = bin(
        &[
            "compare",
            &plain_dir,
            &base_dir,
            "--fail-if",
            "e2e_p99>+10%",
            "--out",
            "x",
        ],
        plain.dir.path(),
    );
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        format!(
            "hubload: error: --fail-if \"e2e_p99>+10%\": e2e_p99 needs deliveries, and the \
             baseline run ({plain_dir}) has none (run both with --subscribers)\n"
        )
    );
}
