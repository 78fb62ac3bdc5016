//! `hubload merge`: shard streams (record files, log dumps, or with `--follow` files that grow
//! and stdin) merged level by level into one run's reports; following, each level's row is
//! printed as soon as every shard has sent it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::WebConfig;
use crate::report::judge::Threshold;
use crate::report::model::LevelReport;
use crate::result::Class;
use crate::run::RunRecord;
use crate::shard::follow::{follow, Event};
use crate::shard::merge::StreamMerge;
use crate::shard::{Keyed, MergeError};
use crate::web::WebServer;

use super::exit::{EXIT_INTERRUPTED, EXIT_MISSING_SHARDS, EXIT_THRESHOLDS};
use super::subcommands::summary_text;

/// `--follow` and its stall bound, as given.
#[derive(Debug)]
pub struct Follow {
    /// `--follow`.
    pub on: bool,
    /// `--stall-timeout`.
    pub stall_timeout: Option<String>,
}

/// `hubload merge INPUTS…`, whole inputs or (`follow`) inputs that grow.
pub async fn merge(
    inputs: Vec<PathBuf>,
    out: Option<PathBuf>,
    thresholds: &[String],
    follow: Follow,
    web: &crate::cli::RunArgs,
) -> anyhow::Result<u8> {
    if web.web.is_some() && !follow.on {
        anyhow::bail!("--web needs --follow: a plain merge has no run to watch");
    }
    if follow.stall_timeout.is_some() && !follow.on {
        anyhow::bail!("--stall-timeout needs --follow: a plain merge reads whole inputs");
    }
    let stall = crate::config::stall_timeout(follow.stall_timeout.as_deref())?;
    let follow = follow.on;
    let web = crate::config::resolve_web(web)?;
    let thresholds = thresholds
        .iter()
        .map(|t| {
            t.parse::<Threshold>()
                .map_err(|e| anyhow::anyhow!("invalid {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !follow {
        if let Some(p) = inputs.iter().find(|p| p.as_os_str() == "-") {
            anyhow::bail!("{}: stdin is read with --follow only", p.display());
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    if follow {
        // The first Ctrl-C or SIGTERM ends the follow with what has come (exit 130, as a
        // run's); the second exits at once.
        let stop = stop.clone();
        crate::run::signals::on_first(move || stop.store(true, Ordering::Release));
    }
    let mut m = Merging {
        merge: if follow {
            StreamMerge::with_seconds()
        } else {
            StreamMerge::default()
        },
        rec: None,
        out,
        thresholds,
        follow,
        web: web.map(|w| (w, None)),
        stop: stop.clone(),
        rt: tokio::runtime::Handle::current(),
    };
    tokio::task::spawn_blocking(move || {
        if follow {
            m.follow(&inputs, &stop, stall)
        } else {
            crate::shard::files::read_records(&inputs, |k| m.push(k))?;
            m.finish(true, 0)
        }
    })
    .await?
}

/// The merge and the record its reports are written from (once every head is in).
struct Merging {
    merge: StreamMerge,
    rec: Option<(RunRecord, PathBuf)>,
    out: Option<PathBuf>,
    thresholds: Vec<Threshold>,
    follow: bool,
    /// `--web`, and its server once the merge has started.
    web: Option<(WebConfig, Option<WebServer>)>,
    /// Ends the follow (Ctrl-C, or the page's stop).
    stop: Arc<AtomicBool>,
    rt: tokio::runtime::Handle,
}

impl Merging {
    /// Take one record; write (and, following, print) what it completes.
    fn push(&mut self, k: Keyed) -> anyhow::Result<()> {
        self.merge.push(k)?;
        if self.rec.is_none() {
            if let Some(start) = self.merge.take_start() {
                let dir = self.out.clone().unwrap_or_else(|| {
                    PathBuf::from("reports").join(format!("{}-merged", start.meta.run_id))
                });
                let mut rec =
                    RunRecord::merged(&start, &dir, std::mem::take(&mut self.thresholds))?;
                if !self.follow {
                    rec.hold_writes();
                }
                if let Some((cfg, server @ None)) = &mut self.web {
                    let stop = self.stop.clone();
                    let w = self.rt.block_on(WebServer::start_merge(
                        cfg,
                        start.config.clone(),
                        start.meta.model.as_str(),
                        dir.clone(),
                        Box::new(move || stop.store(true, Ordering::Release)),
                    ))?;
                    eprintln!("hubload: the merge's live page is at {}", w.url());
                    *server = Some(w);
                }
                self.rec = Some((rec, dir));
            }
        }
        let Some((rec, _)) = &mut self.rec else {
            return Ok(());
        };
        let web = self.web.as_ref().and_then(|(_, w)| w.as_ref());
        for s in self.merge.take_seconds(false) {
            if let Some(w) = web {
                w.second(&s);
            }
        }
        while let Some(l) = self.merge.next_level() {
            rec.push_merged_level(&l)?;
            let Some(row) = rec.last_level() else {
                continue;
            };
            if self.follow {
                println!("{}", row_line(row, self.merge.count().unwrap_or(0)));
            }
            if let Some(w) = web {
                w.level_recorded(row);
                w.judged(&rec.report().verdicts, &rec.report().knee);
            }
        }
        if let Some(w) = web {
            let m = &self.merge;
            w.merge_status(serde_json::json!({
                "shards": m.count(),
                "levels_merged": m.levels_done(),
                "shards_ended": m.ended(),
            }));
        }
        Ok(())
    }

    /// Follow `inputs` until every shard's stream has ended, every input has ended, no input
    /// has grown for `stall`, or `stop`.
    fn follow(
        mut self,
        inputs: &[PathBuf],
        stop: &Arc<AtomicBool>,
        stall: Duration,
    ) -> anyhow::Result<u8> {
        let rx = follow(inputs, stop);
        let mut open = inputs.len();
        let mut left = Vec::new();
        let mut grew = Instant::now();
        let interrupted = loop {
            if stop.load(Ordering::Acquire) {
                break true;
            }
            if self.merge.all_ended() {
                break false;
            }
            if grew.elapsed() >= stall {
                eprintln!(
                    "hubload: error: no input has grown for {} (--stall-timeout)",
                    humantime::format_duration(stall)
                );
                break false;
            }
            let event = rx.recv_timeout(Duration::from_millis(100));
            if matches!(event, Ok(Event::Records(..) | Event::Ended(..))) {
                grew = Instant::now();
            }
            match event {
                Ok(Event::Records(_, records)) => {
                    for k in records {
                        self.push(k)?;
                    }
                }
                Ok(Event::Ended(_, records, unended)) => {
                    for k in records {
                        self.push(k)?;
                    }
                    left.extend(unended);
                    open -= 1;
                    if open == 0 {
                        break false;
                    }
                }
                Ok(Event::Failed(_, e)) => {
                    stop.store(true, Ordering::Release);
                    return Err(e);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                // The readers stop when `stop` is set: that is the follow interrupted.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break stop.load(Ordering::Acquire)
                }
            }
        };
        // The readers stop with the follow (one blocked on stdin ends with the process).
        stop.store(true, Ordering::Release);
        let complete = self.merge.all_ended();
        // What every shard sent of its seconds, complete or not, before the page's end.
        let web = self.web.as_ref().and_then(|(_, w)| w.as_ref());
        for s in self.merge.take_seconds(true) {
            if let Some(w) = web {
                w.second(&s);
            }
        }
        if !complete {
            for e in &left {
                eprintln!("hubload: error: {e}");
            }
            let count = self.merge.count();
            for (i, levels) in self.merge.unended() {
                eprintln!(
                    "hubload: error: shard {i}/{}: incomplete, its stream stopped after {levels} level(s) without its end record",
                    count.unwrap_or(0)
                );
            }
        }
        let code = if interrupted {
            EXIT_INTERRUPTED
        } else {
            EXIT_MISSING_SHARDS
        };
        self.finish(complete, code)
    }

    /// Write the end; `complete`: every shard must be there and ended, else what came is
    /// written (marked partial) and the exit code is `incomplete`.
    fn finish(self, complete: bool, incomplete: u8) -> anyhow::Result<u8> {
        let shards = self.merge.count().unwrap_or(0);
        let end = match self.merge.finish(complete) {
            Ok(e) => e,
            Err(e @ MergeError::MissingShards(_)) => {
                eprintln!("hubload: error: {e}");
                return Ok(EXIT_MISSING_SHARDS);
            }
            Err(e) => return Err(e.into()),
        };
        let Some((rec, dir)) = self.rec else {
            if complete {
                return Err(MergeError::Empty.into());
            }
            eprintln!("hubload: error: not every shard's head came; no reports written");
            return Ok(incomplete);
        };
        let report = rec.end_merged(&end)?;
        if let Some((_, Some(w))) = self.web {
            // The page's `end` record: the total, and report.html, which it now links to.
            self.rt
                .block_on(w.finish(&report.total, report.partial, &Default::default()));
        }
        print!("{}", summary_text(&report));
        eprintln!(
            "hubload: merged {shards} shards into {}{}",
            dir.display(),
            if complete {
                ""
            } else {
                " (incomplete, marked partial)"
            }
        );
        if !complete {
            return Ok(incomplete);
        }
        let failed = report.verdicts.iter().any(|v| !v.passed);
        Ok(if failed { EXIT_THRESHOLDS } else { 0 })
    }
}

/// A merged level's row as one line: the label, attempts, throughput, p50 and p99, errors,
/// and the count of every class that occurred.
fn row_line(row: &LevelReport, shards: u32) -> String {
    let classes: Vec<String> = Class::ALL
        .iter()
        .filter(|c| row.stats.counts.get(**c) > 0)
        .map(|c| format!("{} {}", c.name(), row.stats.counts.get(*c)))
        .collect();
    format!(
        "merged level {} ({shards} shards): {} attempts, {:.1}/s, p50 {} ms, p99 {} ms, errors {:.2} % [{}]",
        row.label,
        row.derived.samples,
        row.derived.throughput,
        row.derived.median_ms,
        row.derived.p99_ms,
        row.derived.error_pct,
        classes.join(", ")
    )
}
