//! One opened target path run into its report directory: JTL, set-up, subscribers, levels,
//! its section, tear-down, and (sharded) the shard's stream of records. Every kind goes
//! through here, generic over its path, so the worker loop stays monomorphic.

use std::path::Path;
use std::thread::JoinHandle;

use anyhow::Context;

use crate::engine::LevelSpec;
use crate::report::document::Report;
use crate::report::jtl::{channel_writer, JtlNames};
use crate::shard::Load as ShardLoad;
use crate::shard_contract::ShardSpec;

use super::levels::{run_levels, shard_part};
use super::path::TargetPath;
use super::record::RunRecord;
use super::run_inputs::{check_phase, owned_topics, Shared};
use super::two_paths::jtl_file;
use super::{subscribers, topic_churn_cycles};

/// Run one opened target path into `dir`: JTL, set-up, levels, its section, tear-down, and
/// (sharded) the shard's stream of records. Every kind goes through here.
pub(super) async fn run_path<P: TargetPath>(
    sh: &Shared<'_>,
    path: P,
    dir: &Path,
    shard: Option<&ShardSpec>,
) -> anyhow::Result<Report> {
    let cfg = sh.cfg;
    let paths = cfg.target.kinds.len();
    let mut rec = RunRecord::with_dir(cfg, &sh.workload, dir)
        .with_context(|| format!("cannot prepare the reports in {}", dir.display()))?;
    if sh.shard.is_sharded() {
        // Shards do not judge thresholds: only the merged run is judged (`hubload merge`).
        rec.clear_thresholds();
    }
    if let Some(spec) = shard {
        // Each level's part of the artifact goes out as the level ends (file and stdout).
        let parts: Vec<ShardLoad> = cfg
            .levels
            .iter()
            .map(|l| shard_part(l, spec.slot()).1)
            .collect();
        rec.stream_shard(spec, parts)?;
    }
    rec.set_target(P::KIND, path.url());
    for w in sh.observers.iter().flat_map(|o| &o.warnings) {
        rec.add_warning(w.clone());
    }
    for w in cfg.levels.iter().filter_map(LevelSpec::sparse_rate) {
        rec.add_warning(w);
    }
    let mut writer = None;
    let mut jtl = None;
    if let Some(file) = &cfg.output.jtl {
        let file = jtl_file(file, P::KIND, paths);
        let names = JtlNames {
            url: path.jtl_url(),
            channels: cfg.workload.channels.clone(),
        };
        let (tx, handle) = channel_writer(&file, names)
            .with_context(|| format!("cannot write the JTL file {}", file.display()))?;
        jtl = Some(tx);
        writer = Some(handle);
    }
    let sh = Shared {
        jtl,
        topic_server: path.topic_server(),
        ..sh.clone()
    };
    // Everything that can fail between opening the JTL file and joining its writer, so that
    // every exit (an error included) joins the writer and its last rows reach the file.
    let ran: anyhow::Result<()> = async {
        let mine = owned_topics(&sh.workload, sh.shard);
        if let Some(prepared) = path.prepare(&mine, &sh.cancel).await {
            // Recorded first, so a failed registration's counts and reasons are in summary.json.
            rec.set_registration(&prepared)?;
            // A phase cut short by the signal is not the hub's failure: the run ends with 130.
            if !sh.cancel.is_cancelled() {
                path.refuse_prepared()?;
                check_phase(&prepared, P::PREPARE, &path.endpoint())?;
            }
        }
        let fleet = match &cfg.delivery {
            Some(d) => path.fleet(d, &mine).await?,
            None => None,
        };
        let fleet = match fleet {
            Some(f) => Some(subscribers::subscribed(f, &sh.cancel, path.url(), &mut rec).await?),
            None => None,
        };
        if let (Some(w), Some(f)) = (sh.web, &fleet) {
            w.watch_delivery(f.live_view());
        }
        let churn = match (cfg.topic_churn, path.topic_registry()) {
            (Some(rate), Some(registry)) => Some(topic_churn_cycles::TopicChurnRun::new(
                registry,
                // The shards together churn at the run's rate, each its own topics.
                rate / f64::from(sh.shard.count.max(1)),
                &mine,
                sh.workload.topics().len(),
                fleet.as_ref().map(|f| f.topic_subscribers()),
            )),
            _ => None,
        };
        let sh = Shared {
            // Topic churn stripes too: a shard churns its own topics, so only it can tell a
            // refusal of theirs inside a window (docs/topic-churn.md).
            own_topics: subscribers::own_topics(
                fleet.is_some() || churn.is_some(),
                &sh.workload,
                sh.shard,
                &mine,
            ),
            delivery: fleet.as_ref(),
            topic_churn: churn.as_ref(),
            ..sh.clone()
        };
        let levels = run_levels(&sh, &mut rec, |spec| path.target(spec)).await;
        path.add_section(&mut rec)?;
        if let Some(e) = match sh.observers {
            Some(o) => o.finish().await,
            None => None,
        } {
            rec.set_exporter(e)?;
        }
        levels?;
        if let Some(unsub) = match &fleet {
            Some(f) => f.finish(&sh.cancel).await,
            None => None,
        } {
            rec.set_unsubscription(&unsub)?;
        }
        if let Some(dereg) = path.teardown(&mine, &sh.cancel).await {
            rec.set_deregistration(&dereg)?;
        }
        path.close().await;
        Ok(())
    }
    .await;
    let interrupted = sh.cancel.is_cancelled();
    drop(sh);
    let joined = join_jtl(writer).await;
    ran?;
    joined?;
    // A shard's stream ends with its end record (partial when interrupted).
    rec.finish(interrupted)
}

/// Wait for the JTL writer (every sender dropped) to write its last rows and close the file.
async fn join_jtl(writer: Option<JoinHandle<std::io::Result<u64>>>) -> anyhow::Result<()> {
    let Some(h) = writer else {
        return Ok(());
    };
    let rows = tokio::task::spawn_blocking(move || h.join())
        .await
        .ok()
        .and_then(|r| r.ok())
        .transpose()
        .context("writing the JTL file")?;
    tracing::info!(rows = rows.unwrap_or(0), "JTL written");
    Ok(())
}
