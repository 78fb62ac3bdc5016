//! `topic-names.jsonl`: every topic's name and tenant, one JSON line per topic in topic order
//! (`{"topic":"…","tenant":7}`; `null` for a topic several tenants share, no `tenant` when the
//! run knows none, as a merge of old shard artifacts), written once before the first level;
//! and reading it back into a loaded summary's `topics` and `topic_tenants`.
//!
//! The names grow with the topics (8.2 MB of summary.json at 100,000 topics), and summary.json
//! is rewritten after every level, so they live here, written once.

use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::level_lines;
use super::writer::write_atomic_with;
use crate::report::document::Report;

/// The file's name in the report directory (summary.json's `topic_names_file`).
pub const FILE_NAME: &str = "topic-names.jsonl";

/// One line: a topic's name and its tenant (`Some(None)`, `null`: a topic several tenants
/// share; `None`, absent: the run knows no tenants).
#[derive(Debug, Serialize, Deserialize)]
struct TopicLine<S> {
    topic: S,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    tenant: Option<Option<u32>>,
}

/// A field that is present, `null` included, is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

/// Write `report`'s topics into `dir`'s file (whole, synced, before the summary.json that
/// names it); its name, for summary.json's `topic_names_file`.
pub fn create(dir: &Path, report: &Report) -> anyhow::Result<String> {
    write_atomic_with(&dir.join(FILE_NAME), |out| {
        for (i, topic) in report.topics.iter().enumerate() {
            let line = TopicLine {
                topic: &**topic,
                tenant: report.topic_tenants.get(i).copied(),
            };
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })?;
    Ok(FILE_NAME.into())
}

/// Fill `topics` and `topic_tenants` of `report` (read from `summary`) from its
/// `topic_names_file`. A summary with them inline (before `schema_version` 4) is left as it is.
pub fn attach(report: &mut Report, summary: &Path) -> anyhow::Result<()> {
    let field = "topic_names_file";
    let Some(path) = level_lines::beside(summary, report.topic_names_file.as_deref(), field)?
    else {
        return Ok(());
    };
    let file = std::fs::File::open(&path)
        .with_context(|| format!("cannot read {} (summary.json's {field})", path.display()))?;
    let (mut topics, mut tenants) = (Vec::new(), Vec::new());
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        let t: TopicLine<String> = serde_json::from_str(&line)
            .with_context(|| format!("{} line {} is not a topic's name", path.display(), n + 1))?;
        topics.push(t.topic.into());
        if let Some(tenant) = t.tenant {
            tenants.push(tenant);
        }
    }
    report.topics = topics;
    report.topic_tenants = tenants;
    Ok(())
}
