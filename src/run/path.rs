//! One target kind of a run: the small interface `run_load`'s one loop drives for every kind
//! (set up, make the target for a level, add its own section to the record, tear down).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::TargetKind;
use crate::engine::LevelSpec;
use crate::targets::{PhaseResult, Target};
use crate::topic_server::TopicServer;
use crate::workload::Topic;

use super::record::RunRecord;

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
    /// What a topic name is prefixed with in `hub.topic`: the websub dialect's topic URL
    /// prefix, so subscribers name the topic exactly as the publishes do (empty otherwise).
    fn topic_url_prefix(&self) -> &str {
        ""
    }
    /// The Service Bus connection the path sends on, for broker subscribers (none for WebSub).
    fn sb_connection(&self) -> Option<hubload_servicebus::ConnectionString> {
        None
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
    /// The client `--topic-churn` deregisters and registers topics with: the registration
    /// phase's (Ballerina dialect; `None` for kinds without a topic registry).
    fn topic_registry(&self) -> Option<Arc<crate::targets::websub::WebSubTarget>> {
        None
    }
    /// Stop what `open` started (an embedded server).
    async fn close(self);
}
