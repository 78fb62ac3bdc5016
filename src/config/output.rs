//! The output flags (report directory, JTL, quiet) → `OutputConfig`.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::RunArgs;

/// Report settings.
#[derive(Debug, Clone, Serialize)]
pub struct OutputConfig {
    /// Report directory.
    pub out_dir: PathBuf,
    /// Streamed per-attempt JTL.
    pub jtl: Option<PathBuf>,
    /// No progress or table on stdout.
    pub quiet: bool,
}

/// `reports/<UTC timestamp>` unless `--out` names a directory.
pub(super) fn resolve(a: &RunArgs) -> OutputConfig {
    let out_dir = a.out.clone().unwrap_or_else(|| {
        let ts = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("reports").join(ts)
    });
    OutputConfig {
        out_dir,
        jtl: a.jtl.clone(),
        quiet: a.quiet,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::args;
    use super::*;

    #[test]
    fn default_directory_is_a_timestamp_under_reports() {
        let o = resolve(&args(&[]));
        assert_eq!(o.out_dir.parent(), Some(std::path::Path::new("reports")));
        let name = o
            .out_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // e.g. 2026-12-01T085000Z: no colons (they are not allowed in Windows paths).
        assert!(
            name.len() == 18 && name.ends_with('Z') && !name.contains(':'),
            "{name}"
        );
        let o = resolve(&args(&["--out", "x", "--jtl", "a.jtl", "-q"]));
        assert_eq!(
            (o.out_dir, o.jtl, o.quiet),
            (PathBuf::from("x"), Some(PathBuf::from("a.jtl")), true)
        );
    }
}
