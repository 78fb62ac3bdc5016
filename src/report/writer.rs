//! Writes every reporter's output into the report directory, atomically (temp file + rename),
//! so a reader or a crash never sees half a file. Called after every level.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Report, Reporter};

/// The report directory and the reporters that fill it.
pub struct ReportWriter {
    dir: PathBuf,
    reporters: Vec<Box<dyn Reporter + Send + Sync>>,
}

impl std::fmt::Debug for ReportWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportWriter")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ReportWriter {
    /// A writer for `dir` (created if missing).
    pub fn new(
        dir: &Path,
        reporters: Vec<Box<dyn Reporter + Send + Sync>>,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create report directory {}", dir.display()))?;
        Ok(ReportWriter {
            dir: dir.to_path_buf(),
            reporters,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Render and write every report.
    pub fn write_all(&self, report: &Report) -> anyhow::Result<()> {
        for r in &self.reporters {
            let bytes = r
                .render(report)
                .with_context(|| format!("rendering {}", r.file_name()))?;
            write_atomic(&self.dir.join(r.file_name()), &bytes)?;
        }
        Ok(())
    }
}

/// Write `bytes` to `path` via a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
