//! `topics.csv` (one row per level and topic) and `tenants.csv` (the same rolled up per
//! tenant): attempts, every outcome class, error % and p50/p99/max from the per-topic
//! compact histograms (the rows' `topics`: `topics.jsonl`, or inline in older summaries).
//!
//! A class column exists for every class hubload knows (`Class::ALL`, by name), so the class
//! columns of a level's rows sum exactly to that level's `aggregate.csv` counts. Topics that
//! saw no attempt in a level get a row of zeros. Topics shared by several tenants
//! (`--topics shared` or a count) roll up under the tenant `shared`.

use std::collections::BTreeMap;

use super::Format;
use crate::report::document::Report;
use crate::report::model::{LevelReport, TopicFigures, TopicReport};
use crate::result::Class;
use crate::stats::TopicStats;
use crate::workload::tenant_name;

/// Writes `topics.csv`.
#[derive(Debug, Default)]
pub struct TopicsCsvFormat;

/// Writes `tenants.csv`.
#[derive(Debug, Default)]
pub struct TenantsCsvFormat;

fn header(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .map(|s| s.to_string())
        .chain(Class::ALL.iter().map(|c| c.name().to_string()))
        .chain(["Error %", "p50_us", "p99_us", "max_us"].map(String::from))
        .collect()
}

fn stat_fields(s: &TopicStats) -> Vec<String> {
    let f = TopicFigures::of(s);
    std::iter::once(f.attempts.to_string())
        .chain(Class::ALL.iter().map(|k| s.counts.get(*k).to_string()))
        .chain([
            format!("{:.3}%", f.error_pct),
            f.p50_us.to_string(),
            f.p99_us.to_string(),
            f.max_us.to_string(),
        ])
        .collect()
}

/// Every topic of the run for one level, in topic order (zeros for topics without attempts);
/// nothing for a level that has attempts but no per-topic statistics (an older summary). One
/// topic at a time: no dense copy of every topic.
fn level_topics<'a>(
    report: &Report,
    l: &'a LevelReport,
    none: &'a TopicStats,
) -> impl Iterator<Item = (usize, &'a TopicStats)> + 'a {
    let mut rows: Vec<&TopicReport> = l.topics.iter().collect();
    // Rows are in topic order as written; a topic named twice keeps its last row.
    rows.sort_by_key(|t| t.topic);
    rows.reverse();
    rows.dedup_by_key(|t| t.topic);
    let len = match rows.first() {
        None if l.derived.samples > 0 => 0,
        last => report.topics.len().max(last.map_or(0, |t| t.topic + 1)),
    };
    let mut rows = rows.into_iter().rev().peekable();
    (0..len).map(move |i| (i, rows.next_if(|t| t.topic == i).map_or(none, |t| &t.stats)))
}

/// A topic's tenant as `topic_tenants` has it (`None`: beyond the list) → its name.
fn name_of(tenant: Option<Option<u32>>) -> String {
    match tenant {
        Some(Some(t)) => tenant_name(t),
        Some(None) => "shared".into(),
        None => String::new(),
    }
}

/// The files a run appends one level's rows to as the level ends, never rewriting them
/// (`hubload report` writes them whole).
pub const APPENDED: [&str; 2] = ["topics.csv", "tenants.csv"];

/// Where rows go: a buffer, or straight to the file they are appended to.
type Out<'a> = csv::Writer<&'a mut dyn std::io::Write>;

type Rows = fn(&mut Out<'_>, &Report, &LevelReport) -> anyhow::Result<()>;

/// Each file's header and how one level's rows are written, in the order of [`APPENDED`].
fn files() -> [(Vec<String>, Rows); 2] {
    [
        (
            header(&["Level", "Topic", "Tenant", "Attempts"]),
            topic_rows,
        ),
        (
            header(&["Level", "Tenant", "Topics", "Attempts"]),
            tenant_rows,
        ),
    ]
}

/// One row per topic of the run (zeros for a topic without attempts).
fn topic_rows(w: &mut Out<'_>, report: &Report, l: &LevelReport) -> anyhow::Result<()> {
    // Field by field, and a topic without attempts (most of them, at 100,000 topics and short
    // levels) from one set of zero fields: a level's rows cost little beyond their bytes.
    let none = TopicStats::default();
    let zero = stat_fields(&none);
    // A tenant's topics are next to each other: its name is made once for them.
    let mut tenant = (None, String::new());
    for (i, s) in level_topics(report, l, &none) {
        w.write_field(&l.label)?;
        match report.topics.get(i) {
            Some(name) => w.write_field(name.as_bytes())?,
            None => w.write_field(i.to_string())?,
        }
        let t = report.topic_tenants.get(i).copied();
        if tenant.0 != Some(t) {
            tenant = (Some(t), name_of(t));
        }
        w.write_field(&tenant.1)?;
        let fields = (*s != none).then(|| stat_fields(s));
        for f in fields.as_ref().unwrap_or(&zero) {
            w.write_field(f)?;
        }
        w.write_record(std::iter::empty::<&[u8]>())?;
    }
    Ok(())
}

/// One row per tenant: the sum of its topics (histograms added).
fn tenant_rows(w: &mut Out<'_>, report: &Report, l: &LevelReport) -> anyhow::Result<()> {
    // Summed by tenant number, then named once per tenant (in the names' order).
    let mut by_number: BTreeMap<Option<Option<u32>>, (u64, TopicStats)> = BTreeMap::new();
    let none = TopicStats::default();
    for (i, s) in level_topics(report, l, &none) {
        let e = by_number
            .entry(report.topic_tenants.get(i).copied())
            .or_default();
        e.0 += 1;
        e.1 += s;
    }
    let by_tenant: BTreeMap<String, (u64, TopicStats)> = by_number
        .into_iter()
        .map(|(t, sums)| (name_of(t), sums))
        .collect();
    for (tenant, (topics, s)) in by_tenant {
        let mut row = vec![l.label.clone(), tenant, topics.to_string()];
        row.extend(stat_fields(&s));
        w.write_record(&row)?;
    }
    Ok(())
}

/// File `file` of [`APPENDED`]: its header (when `head`), then the rows of `levels`.
fn render(
    file: usize,
    head: bool,
    report: &Report,
    levels: &[LevelReport],
) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    write(file, head, report, levels, &mut buf)?;
    Ok(buf)
}

/// [`render`] into `out`, a few KB at a time.
fn write(
    file: usize,
    head: bool,
    report: &Report,
    levels: &[LevelReport],
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let (names, rows) = &files()[file];
    let mut w = csv::Writer::from_writer(out);
    if head {
        w.write_record(names)?;
    }
    for l in levels {
        rows(&mut w, report, l)?;
    }
    Ok(w.flush()?)
}

/// Render `topics.csv`.
pub fn render_topics_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    render(0, true, report, &report.levels)
}

/// Render `tenants.csv`: per level and tenant, the sum of its topics (histograms added).
pub fn render_tenants_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    render(1, true, report, &report.levels)
}

/// The headers of the [`APPENDED`] files, which a run starts them with.
pub fn headers(report: &Report) -> anyhow::Result<[Vec<u8>; 2]> {
    Ok([render(0, true, report, &[])?, render(1, true, report, &[])?])
}

/// The rows of level `i` of `report` in [`APPENDED`] file number `file`, without the header,
/// written into `out` as they are made (a level's topics.csv rows are 16 MB at 100,000
/// topics): what a run appends as the level ends.
pub fn write_level_rows(
    report: &Report,
    i: usize,
    file: usize,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let l = report.levels.get(i..=i).unwrap_or_default();
    write(file, false, report, l, out)
}

impl Format for TopicsCsvFormat {
    fn file_name(&self) -> &'static str {
        "topics.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_topics_csv(report)
    }
}

impl Format for TenantsCsvFormat {
    fn file_name(&self) -> &'static str {
        "tenants.csv"
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_tenants_csv(report)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_older_summary_without_topic_statistics_gives_headers_only() {
        let r = crate::report::html::tests::sample();
        assert!(r
            .levels
            .iter()
            .all(|l| l.topics.is_empty() && l.derived.samples > 0));
        let csv = String::from_utf8(super::render_topics_csv(&r).unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 1, "{csv}");
        let csv = String::from_utf8(super::render_tenants_csv(&r).unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 1, "{csv}");
    }
}
