//! What the live server's handlers share: the control, the feed, the token and the run's
//! redacted settings.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::feed::Feed;
use crate::engine::{Control, ControlEvent};
use crate::report::model::server_now::ServerNow;
use crate::secret::Secret;

/// What the handlers share.
pub struct WebState {
    pub(super) control: Arc<Control>,
    pub(super) feed: Arc<Feed>,
    pub(super) token: Option<Secret>,
    /// The run's settings as summary.json shows them (secrets redacted).
    pub(super) config: Value,
    pub(super) model: &'static str,
    pub(super) levels: usize,
    pub(super) max_rate: f64,
    pub(super) started: Instant,
    pub(super) out_dir: PathBuf,
    pub(super) ended: AtomicBool,
    /// `--web-linger`: how long the server stays up after the run.
    pub(super) linger: Duration,
    /// Ends the linger early (`POST /v1/stop` after the run).
    pub(super) linger_end: CancellationToken,
    /// Stops the run as the first SIGINT does.
    pub(super) on_stop: Box<dyn Fn() + Send + Sync>,
    /// The server's series as last scraped (`None`: not scraped).
    pub(super) server: Option<tokio::sync::watch::Receiver<ServerNow>>,
    /// `merge --follow`: how the merge stands (shards, levels merged, streams ended); it
    /// steers nothing, so the control verbs but stop are refused. `None` for a run.
    pub(super) merge: Option<std::sync::Mutex<Value>>,
}

impl std::fmt::Debug for WebState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebState").finish_non_exhaustive()
    }
}

impl WebState {
    pub(super) fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// A change: a line on stderr, a record in the feed.
    pub(super) fn announce(&self, e: &ControlEvent) {
        let value = e.value.map_or_else(String::new, |v| format!(" {v}"));
        crate::console::say!(
            "hubload: control: {}{value} at level {} (from {})",
            e.action,
            e.level,
            e.client
        );
        self.feed
            .push("control", &serde_json::to_value(e).unwrap_or(Value::Null));
    }
}
