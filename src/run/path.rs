//! One target kind of a run, behind two traits: [`PathKind`], what is known of a kind from the
//! configuration alone (its banner line, pre-flight steps, side-by-side role, and how its path
//! opens), and [`TargetPath`], the kind opened, which `run_path`'s one loop drives.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::check::Steps;
use crate::config::{DeliveryConfig, RunConfig, TargetKind};
use crate::engine::LevelSpec;
use crate::report::document::Report;
use crate::shard_contract::ShardSpec;
use crate::targets::{PhaseResult, Target, TopicRegistry};
use crate::topic_server::TopicServer;
use crate::workload::Topic;

use super::embedded_emulator::EmbeddedEmulator;
use super::record::RunRecord;
use super::run_inputs::Shared;
use super::subscribers::DeliveryRun;
use super::two_paths::Role;

/// A target kind before it opens: one static value per kind, which `run/mod.rs` maps each
/// `TargetKind` to (the one arm). Asked once per run, so dynamic dispatch costs nothing here.
pub(crate) trait PathKind: Sync {
    /// What the banner says after `target    ` (never a secret).
    fn banner_line(&self, cfg: &RunConfig) -> String;
    /// Its steps of `hubload check`, in order; each network step bounded by `bound`.
    fn check<'a>(
        &'a self,
        cfg: &'a RunConfig,
        bound: Duration,
        steps: &'a mut Steps,
    ) -> BoxFuture<'a, ()>;
    /// Its part in a side-by-side run (`None`: it is not compared with another kind).
    fn role(&self) -> Option<Role>;
    /// Open its path and run it into `dir` (through `run_path`). `shared`: the emulator the
    /// embedded hub and the Service Bus path share (`--hub-servicebus`).
    fn run<'a>(
        &'a self,
        sh: &'a Shared<'a>,
        shared: Option<&'a EmbeddedEmulator>,
        dir: &'a Path,
        shard: Option<&'a ShardSpec>,
    ) -> BoxFuture<'a, anyhow::Result<Report>>;
}

/// A target kind, opened (its embedded server or connection up), ready for the levels.
pub(crate) trait TargetPath {
    /// What each level sends to.
    type Target: Target;
    /// Which kind this is.
    const KIND: TargetKind;
    /// The set-up phase, for its error line: "register topics at the hub".
    const PREPARE: &'static str;

    /// Where the load goes, as recorded in the report (a URL password is redacted there).
    fn url(&self) -> &url::Url;
    /// Where the load goes, for messages and JTL rows (never a secret).
    fn endpoint(&self) -> String;
    /// The URL each JTL row names.
    fn jtl_url(&self) -> String {
        self.endpoint()
    }
    /// Register topics / attach links for the topics this shard owns; stops on `cancel`
    /// (`None`: this kind or dialect has no set-up phase, as a thin-ping hub has no
    /// registration).
    async fn prepare(&self, mine: &[Topic], cancel: &CancellationToken) -> Option<PhaseResult>;
    /// After [`Self::prepare`]: what it found that stops the run before any load, as bad
    /// configuration does (exit 2), such as a Service Bus topic that does not exist.
    fn refuse_prepared(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// The subscriber fleet that checks delivery (`--subscribers`) for the topics of `mine`,
    /// not yet subscribed; `None` when the kind has none (by default).
    async fn fleet(
        &self,
        _d: &DeliveryConfig,
        _mine: &[Topic],
    ) -> anyhow::Result<Option<DeliveryRun>> {
        Ok(None)
    }
    /// A fresh target for one level.
    fn target(&self, spec: &LevelSpec) -> Self::Target;
    /// After the levels: add this kind's own section to the record (none by default).
    fn add_section(&self, _rec: &mut RunRecord) -> anyhow::Result<()> {
        Ok(())
    }
    /// After the levels: undo the set-up when the run asks for it (`--deregister`).
    async fn teardown(&self, _mine: &[Topic], _cancel: &CancellationToken) -> Option<PhaseResult> {
        None
    }
    /// The topic server this kind serves topic URLs from (websub dialect), whose fetches each
    /// level's row counts.
    fn topic_server(&self) -> Option<Arc<TopicServer>> {
        None
    }
    /// What `--topic-churn` deregisters and registers topics through (`None`: the kind, or
    /// its dialect, keeps no topic registry).
    fn topic_registry(&self) -> Option<Arc<dyn TopicRegistry>> {
        None
    }
    /// Stop what `open` started (an embedded server).
    async fn close(self);
}
