//! Writes every format's output into the report directory, atomically (temp file + rename),
//! so a reader or a crash never sees half a file. Called after every level.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;

use super::Format;
use crate::report::document::Report;

/// The report directory and the formats that fill it.
pub struct ReportWriter {
    dir: PathBuf,
    formats: Vec<Box<dyn Format + Send + Sync>>,
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
    pub fn new(dir: &Path, formats: Vec<Box<dyn Format + Send + Sync>>) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create report directory {}", dir.display()))?;
        Ok(ReportWriter {
            dir: dir.to_path_buf(),
            formats,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Render and write every report. While it runs, [`wait_for_writes`] waits for it.
    pub fn write_all(&self, report: &Report) -> anyhow::Result<()> {
        WRITING.fetch_add(1, Ordering::SeqCst);
        let written = self.write_each(report);
        WRITING.fetch_sub(1, Ordering::SeqCst);
        written
    }

    fn write_each(&self, report: &Report) -> anyhow::Result<()> {
        for r in &self.formats {
            let bytes = r
                .render(report)
                .with_context(|| format!("rendering {}", r.file_name()))?;
            if bytes.is_empty() {
                continue; // nothing to report (e.g. delivery.csv without subscribers)
            }
            write_atomic(&self.dir.join(r.file_name()), &bytes)?;
        }
        Ok(())
    }
}

/// Report sets being written, and lines being appended, now, in the whole process.
static WRITING: AtomicU64 = AtomicU64::new(0);

/// Wait (at most `limit`) until no report set is being written and no line appended: an exit
/// that cannot wait for the run (a second Ctrl-C, the stop grace) still leaves every file of
/// the set from the same write, the last level's rather than the one before it, and every
/// `.jsonl` line whole. True when none was left.
pub fn wait_for_writes(limit: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    while WRITING.load(Ordering::SeqCst) > 0 {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    true
}

/// Append `bytes` to `path` (created if missing) in one write, and sync it: after a crash the
/// file ends with them whole or cut short, never with them in pieces between other writes.
pub fn append_synced(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    append_synced_with(path, |f| Ok(f.write_all(bytes)?))
}

/// [`append_synced`] of what `write` writes, as it writes it (rows too many to hold first).
/// While it runs, [`wait_for_writes`] waits for it: a second Ctrl-C does not cut a line in two.
pub fn append_synced_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    WRITING.fetch_add(1, Ordering::SeqCst);
    let appended = append_now(path, write);
    WRITING.fetch_sub(1, Ordering::SeqCst);
    appended
}

fn append_now(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    write(&mut f)
        .and_then(|()| Ok(f.sync_data()?))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Write `bytes` to `path` via a temporary file in the same directory and a rename.
///
/// The temporary file is created like any other file (mode 0666 less the umask, so 0644 under
/// the usual 022), not 0600 as `tempfile` would, so the renamed report is readable by whoever
/// may read the directory. Every error names `path`, the file the user asked for, never the
/// temporary name.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomic_with(path, |out| fill(out, bytes, path))
}

/// [`write_atomic`] of what `write` writes, a part at a time (a file too large to hold whole).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<&std::fs::File>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let (tmp_path, file) = create_temp(dir, path)?;
    let mut out = std::io::BufWriter::new(&file);
    let written = write(&mut out)
        .and_then(|()| {
            out.flush()
                .with_context(|| format!("cannot write {}", path.display()))
        })
        .and_then(|()| {
            file.sync_all()
                .with_context(|| format!("cannot write {}", path.display()))
        });
    drop(out);
    drop(file);
    let renamed = written.and_then(|()| {
        std::fs::rename(&tmp_path, path).with_context(|| format!("cannot write {}", path.display()))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    renamed
}

/// A new, uniquely named file next to `path` (`.NAME.PID.N.tmp`), created with the umask.
fn create_temp(dir: &Path, path: &Path) -> anyhow::Result<(PathBuf, std::fs::File)> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(anyhow::Error::new(e))
                    .with_context(|| format!("cannot write {}", path.display()))
            }
        }
    }
}

/// Write all of `bytes` into `out`; a failure (a full disk, say) names `path`.
fn fill(out: &mut impl Write, bytes: &[u8], path: &Path) -> anyhow::Result<()> {
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn reports_get_the_umask_mode_not_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // What this process's umask gives a plain new file: the oracle is the OS, not us.
        let probe = dir.path().join("probe");
        std::fs::write(&probe, b"x").unwrap();
        let want = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
        let path = dir.path().join("summary.json");
        write_atomic(&path, b"{}\n").unwrap();
        let got = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, want, "report mode {got:o}, plain file mode {want:o}");
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_names_the_report_file() {
        // /dev/full answers every write with ENOSPC.
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let path = Path::new("/some/dir/report.html");
        let e = fill(&mut full, &[b'x'; 100_000], path).unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.starts_with("cannot write /some/dir/report.html: "),
            "{msg}"
        );
        assert!(msg.contains("No space left on device"), "{msg}");
        assert!(!msg.contains(".tmp"), "{msg}");
    }

    #[test]
    fn a_failed_rename_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory: the rename fails.
        let path = dir.path().join("out");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("x"), b"").unwrap();
        let e = write_atomic(&path, b"data").unwrap_err();
        assert!(format!("{e:#}").contains(&path.display().to_string()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
