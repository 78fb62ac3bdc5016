//! The shape of a two-path run (`--target websub,servicebus`): each path's report directory
//! (`<out>/websub/`, `<out>/servicebus/`) and JTL file (`<stem>.websub.jtl`, …), each kind's
//! role, and the side-by-side report written at `<out>/` once both paths have run.

use std::path::{Path, PathBuf};

use crate::compare::side_by_side::{render_csv, render_text, side_by_side};
use crate::config::TargetKind;
use crate::report::document::Report;
use crate::report::writer::write_atomic;

/// Where one path of a run writes its reports: `--out` itself, or `<out>/<kind>/` when the
/// run has several paths.
pub(crate) fn report_dir(out: &Path, kind: TargetKind, paths: usize) -> PathBuf {
    match paths {
        1 => out.to_path_buf(),
        _ => out.join(kind.as_str()),
    }
}

/// Where one path writes its JTL: `--jtl` itself, or with the kind before the extension when
/// the run has several paths (`run.jtl` → `run.websub.jtl`, `run` → `run.websub`).
pub(crate) fn jtl_file(jtl: &Path, kind: TargetKind, paths: usize) -> PathBuf {
    if paths == 1 {
        return jtl.to_path_buf();
    }
    let stem = jtl.file_stem().unwrap_or_default().to_string_lossy();
    let name = match jtl.extension() {
        Some(ext) => format!("{stem}.{}.{}", kind.as_str(), ext.to_string_lossy()),
        None => format!("{stem}.{}", kind.as_str()),
    };
    jtl.with_file_name(name)
}

/// A kind's part in a side-by-side run: the side-by-side report reads the hub's figures
/// against those of the broker beneath it (the hub's overhead is their difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The layer measured: a hub in front of a broker.
    Hub,
    /// The broker alone, the baseline.
    Broker,
}

/// Write (and, unless quiet, print) the side-by-side report of the hub and broker paths
/// (each path's report with its kind's role; nothing when the run has not both).
pub(crate) fn write(
    out: &Path,
    reports: &[(Option<Role>, Report)],
    quiet: bool,
) -> anyhow::Result<()> {
    let find = |k: Role| reports.iter().find(|(r, _)| *r == Some(k)).map(|(_, r)| r);
    if let (Some(hub), Some(broker)) = (find(Role::Hub), find(Role::Broker)) {
        let s = side_by_side(hub, broker);
        write_atomic(&out.join("side-by-side.csv"), &render_csv(&s)?)?;
        let text = render_text(&s);
        write_atomic(&out.join("side-by-side.txt"), text.as_bytes())?;
        if !quiet {
            println!("{text}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_path_keeps_the_names_and_two_paths_add_the_kind() {
        let (out, jtl) = (Path::new("/r"), Path::new("/t/run.jtl"));
        assert_eq!(report_dir(out, TargetKind::Websub, 1), Path::new("/r"));
        assert_eq!(
            report_dir(out, TargetKind::Servicebus, 2),
            Path::new("/r/servicebus")
        );
        assert_eq!(
            jtl_file(jtl, TargetKind::Websub, 1),
            Path::new("/t/run.jtl")
        );
        assert_eq!(
            jtl_file(jtl, TargetKind::Websub, 2),
            Path::new("/t/run.websub.jtl")
        );
        assert_eq!(
            jtl_file(Path::new("out"), TargetKind::Servicebus, 2),
            Path::new("out.servicebus")
        );
    }
}
