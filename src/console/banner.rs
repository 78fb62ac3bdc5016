//! The run banner: what is about to run, printed on stderr before the load (not with `--quiet`).
//!
//! A pure function of the validated configuration, the workload and each kind's target line
//! (which its path writes), so it is tested exactly. It never shows a secret: the hub URL's
//! password is redacted, tokens and connection strings are only said to be set.

use std::fmt::Write;
use std::time::Duration;

use crate::config::{RunConfig, TargetKind};
use crate::engine::{Arrivals, LevelSpec, Load};
use crate::workload::{Distribution, Workload};

fn dur(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// How a level stops: `30s`, `400 requests`, or both.
fn stop(l: &LevelSpec) -> String {
    match (l.stop.duration, l.stop.requests) {
        (Some(d), Some(n)) => format!("{} or {n} requests", dur(d)),
        (Some(d), None) => dur(d),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => "until stopped".into(),
    }
}

fn levels_line(cfg: &RunConfig) -> String {
    let labels: Vec<String> = cfg.levels.iter().map(|l| l.load.label()).collect();
    let stops: Vec<String> = cfg.levels.iter().map(stop).collect();
    let mut s = if stops.windows(2).all(|w| w[0] == w[1]) {
        format!(
            "{}, {} each",
            labels.join(", "),
            stops.first().map_or("", String::as_str)
        )
    } else {
        labels
            .iter()
            .zip(&stops)
            .map(|(l, s)| format!("{l} ({s})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(first) = cfg.levels.first() {
        if !first.warmup.is_zero() {
            let _ = write!(s, "; warm-up {}", dur(first.warmup));
        }
        if !first.ramp_up.is_zero() {
            let _ = write!(s, "; ramp-up {}", dur(first.ramp_up));
        }
        if let Load::Open { max_inflight, .. } = first.load {
            let arrivals = match cfg.arrivals {
                Arrivals::Constant => "constant",
                Arrivals::Poisson => "poisson",
            };
            let _ = write!(s, "; {arrivals} arrivals, at most {max_inflight} in flight");
        }
    }
    s
}

/// The banner, one item a line, ending in a newline; `target_line` says each kind's target
/// (its path knows what).
pub fn render_banner(
    cfg: &RunConfig,
    workload: &Workload,
    target_line: impl Fn(TargetKind) -> String,
) -> String {
    let w = workload.config();
    let mut out = String::new();
    let _ = writeln!(out, "hubload {}", env!("CARGO_PKG_VERSION"));
    for k in &cfg.target.kinds {
        let _ = writeln!(out, "  target    {}", target_line(*k));
    }
    let dist = match w.distribution {
        Distribution::Uniform => "uniform",
        Distribution::Zipf => "zipf",
    };
    let _ = writeln!(
        out,
        "  workload  {} tenants × {} SPs × {} users, channels {} ({}), {dist} publishers, seed {}",
        w.tenants,
        w.sps,
        w.users,
        w.channels.join(","),
        w.channels.len(),
        w.seed
    );
    let payload = w
        .payload_bytes
        .map_or(String::new(), |b| format!(", bodies padded to {b} B"));
    let _ = writeln!(
        out,
        "  topics    {} ({} topics){payload}",
        w.layout,
        workload.topics().len()
    );
    let _ = writeln!(out, "  levels    {} model: {}", cfg.model, levels_line(cfg));
    let c = &cfg.client;
    let pool = c
        .pool_per_host
        .map_or_else(|| "the level's concurrency".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "  client    {} preset: timeout {}, connect {}, pool per host {pool} (wait {}), {} retries",
        c.preset,
        dur(c.timeout),
        dur(c.connect_timeout),
        dur(c.pool_timeout),
        c.retries
    );
    let _ = writeln!(out, "  reports   {}", cfg.output.out_dir.display());
    out
}

/// Print the banner on stderr unless `--quiet`.
pub fn print_banner(
    cfg: &RunConfig,
    workload: &Workload,
    target_line: impl Fn(TargetKind) -> String,
) {
    if !cfg.output.quiet {
        crate::console::say!("{}", render_banner(cfg, workload, target_line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;

    fn banner(args: &[&str]) -> String {
        let mut all = vec!["hubload"];
        all.extend_from_slice(args);
        let cli = <Cli as clap::Parser>::try_parse_from(&all).unwrap();
        let cfg = crate::config::resolve(&cli.run).unwrap();
        let line = |k| crate::run::banner_line(&cfg, k);
        render_banner(&cfg, &Workload::new(cfg.workload.clone()), line)
    }

    #[test]
    fn closed_model_banner_snapshot_with_the_password_redacted() {
        let got = banner(&[
            "--hub-url",
            "http://alice:s3cret@127.0.0.1:9/hub",
            "--tenants",
            "3",
            "--concurrency",
            "1,20",
            "--duration",
            "30s",
            "--out",
            "out/r",
        ]);
        let want = format!(
            "\
hubload {}
  target    websub (Ballerina/WSO2 hub dialect) at http://127.0.0.1:9/hub, headers Authorization (values hidden)
  workload  3 tenants × 10 SPs × 10 users, channels login,registration,credential,session (4), uniform publishers, seed 1
  topics    per-tenant-channel (12 topics)
  levels    closed model: 1, 20, 30s each
  client    default preset: timeout 5s, connect 5s, pool per host the level's concurrency (wait 5s), 0 retries
  reports   out/r
",
            env!("CARGO_PKG_VERSION")
        );
        assert!(!got.contains("s3cret"), "{got}");
        assert_eq!(got, want, "\n{got}");
    }

    #[test]
    fn open_model_banner_names_requests_arrivals_and_the_token_only_as_set() {
        let got = banner(&[
            "--hub-url",
            "http://127.0.0.1:9/hub",
            "--hub-token",
            "tok-XYZ",
            "--rate",
            "100,250",
            "--requests",
            "400",
            "--max-inflight",
            "64",
            "--topics",
            "shared",
            "--retries",
            "2",
        ]);
        assert!(!got.contains("tok-XYZ"), "{got}");
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(
            lines[1],
            "  target    websub (Ballerina/WSO2 hub dialect) at http://127.0.0.1:9/hub, headers Authorization (values hidden)"
        );
        assert_eq!(lines[3], "  topics    shared (1 topics)");
        assert_eq!(
            lines[4],
            "  levels    open model: 100/s, 250/s, 400 requests each; constant arrivals, at most 64 in flight"
        );
        assert!(lines[5].ends_with(", 2 retries"), "{}", lines[5]);
    }
}
