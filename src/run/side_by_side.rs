//! A two-path run (`--target websub,servicebus`): each path in turn into its own report
//! directory (`<out>/websub/`, `<out>/servicebus/`), then the side-by-side report at `<out>/`.

use anyhow::Context;

use super::{run_websub, servicebus::run_servicebus, RunOutcome, RunRecord, Shared};
use crate::config::TargetKind;
use crate::report::side_by_side::{render_csv, render_text, side_by_side};
use crate::report::writer::write_atomic;
use crate::report::Report;

fn dir_name(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Websub => "websub",
        TargetKind::Servicebus => "servicebus",
    }
}

/// Run every kind of `--target` in order, each into its subdirectory, then write (and, unless
/// quiet, print) the side-by-side report. The outcome's report is the first path's; the
/// thresholds fail when they fail on any path.
pub(super) async fn run_each(sh: &Shared<'_>) -> anyhow::Result<RunOutcome> {
    let cfg = sh.cfg;
    let out = &cfg.output.out_dir;
    let mut reports: Vec<(TargetKind, Report)> = Vec::new();
    for &kind in &cfg.target.kinds {
        if sh.cancel.is_cancelled() && !reports.is_empty() {
            break;
        }
        let dir = out.join(dir_name(kind));
        let mut rec = RunRecord::with_dir(cfg, &sh.workload, &dir)
            .with_context(|| format!("cannot prepare the reports in {}", dir.display()))?;
        match kind {
            TargetKind::Websub => run_websub(sh, &mut rec).await?,
            TargetKind::Servicebus => run_servicebus(sh, &mut rec).await?,
        }
        reports.push((kind, rec.finish(sh.cancel.is_cancelled())?));
    }
    let interrupted = sh.cancel.is_cancelled();
    let find = |k: TargetKind| reports.iter().find(|(kind, _)| *kind == k).map(|(_, r)| r);
    if let (Some(hub), Some(broker)) = (find(TargetKind::Websub), find(TargetKind::Servicebus)) {
        let s = side_by_side(hub, broker);
        write_atomic(&out.join("side-by-side.csv"), &render_csv(&s)?)?;
        let text = render_text(&s);
        write_atomic(&out.join("side-by-side.txt"), text.as_bytes())?;
        if !cfg.output.quiet {
            println!("{text}");
        }
    }
    let thresholds_failed = reports
        .iter()
        .any(|(_, r)| r.verdicts.iter().any(|v| !v.passed));
    let report = reports
        .into_iter()
        .next()
        .map(|(_, r)| r)
        .context("the run was interrupted before any path ran")?;
    Ok(RunOutcome {
        report,
        thresholds_failed,
        interrupted,
    })
}
