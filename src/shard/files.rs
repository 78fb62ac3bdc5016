//! Shard artifacts on disk: write one into the output directory, and read the inputs of
//! `hubload merge` (artifact files, directories of them, or `kubectl logs` dumps).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::artifact::ShardArtifact;
use super::logs::from_log_dump;

/// Write `a` to `dir/shard-<index>-of-<count>.json` (via a temporary file and a rename, so a
/// reader never sees half a file). Returns the path written.
pub fn write_artifact(dir: &Path, a: &ShardArtifact) -> std::io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let path = dir.join(a.file_name());
    let tmp = dir.join(format!(".{}.tmp", a.file_name()));
    fs::write(&tmp, a.to_json())?;
    fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Read every artifact from `paths`: a JSON artifact file, a directory (its `shard-*.json`
/// files), or a log dump (any other text file; its `HUBLOAD-SHARD` lines). Errors name the file.
pub fn read_inputs(paths: &[PathBuf]) -> anyhow::Result<Vec<ShardArtifact>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = fs::read_dir(p)
                .with_context(|| format!("reading directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".json"))
                })
                .collect();
            files.sort();
            for f in files {
                out.extend(read_file(&f)?);
            }
        } else {
            out.extend(read_file(p)?);
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> anyhow::Result<Vec<ShardArtifact>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if text.trim_start().starts_with('{') {
        let a = ShardArtifact::from_json(&text).with_context(|| path.display().to_string())?;
        Ok(vec![a])
    } else {
        from_log_dump(&text).with_context(|| path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::logs::to_log_lines;
    use crate::shard::testutil::empty_artifact;
    use crate::shard_contract::ShardSpec;

    fn artifact(index: u32) -> ShardArtifact {
        let spec = ShardSpec {
            index,
            count: 3,
            run_id: "r".into(),
            start_at: None,
        };
        empty_artifact(&spec, "u")
    }

    #[test]
    fn files_directories_and_dumps() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let p0 = write_artifact(&out, &artifact(0)).unwrap();
        assert_eq!(p0, out.join("shard-0-of-3.json"));
        write_artifact(&out, &artifact(1)).unwrap();
        fs::write(out.join("summary.json"), "{}").unwrap();
        let dump = dir.path().join("shards.log");
        fs::write(
            &dump,
            format!("noise\n{}\n", to_log_lines(&artifact(2)).join("\n")),
        )
        .unwrap();

        let got = read_inputs(&[out.clone(), dump.clone()]).unwrap();
        let idx: Vec<u32> = got.iter().map(|a| a.meta.shard_index).collect();
        assert_eq!(idx, [0, 1, 2]);
        assert_eq!(
            got[0].to_json(),
            artifact(0).clone_with_times(&got[0]).to_json()
        );

        fs::write(out.join("shard-9-of-3.json"), "{\"meta\":{}}").unwrap();
        let e = format!("{:#}", read_inputs(std::slice::from_ref(&out)).unwrap_err());
        assert!(
            e.contains("shard-9-of-3.json") && e.contains("not a hubload shard artifact"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            read_inputs(&[dir.path().join("nope.log")]).unwrap_err()
        );
        assert!(e.contains("nope.log"), "{e}");
    }

    impl ShardArtifact {
        /// `self` with `other`'s timestamps, for comparing artifacts made at different moments.
        fn clone_with_times(&self, other: &ShardArtifact) -> ShardArtifact {
            let mut a = self.clone();
            a.meta.started_at.clone_from(&other.meta.started_at);
            a.meta.finished_at.clone_from(&other.meta.finished_at);
            a
        }
    }
}
