//! Observers beside the run (never inside the engine's worker loop): the server's metrics
//! per level (`scraper`), the generator's own health (`monitor`), and hubload's series pushed
//! to and served for Prometheus (`exporter`). `Observers` opens and closes each level on all.

pub mod cpu;
pub mod exporter;
pub mod exposition;
pub mod fetch;
pub mod knee;
pub mod monitor;
pub mod own_series;
pub mod promql;
pub mod remote_write;
pub mod scraper;
pub mod series;
pub mod server_live;

use std::sync::Arc;

use crate::config::RunConfig;
use crate::engine::Live;
use crate::report::model::observations::{ExporterReport, GeneratorLevel, ServerLevel};
use crate::report::model::LevelReport;

pub use exporter::Exporter;
pub use monitor::GeneratorMonitor;
pub use scraper::ServerScraper;

/// What the observers saw of one level.
#[derive(Debug, Default)]
pub struct LevelObservation {
    /// The server's series (`--server-metrics`, `--server-query`); `None` when not observed.
    pub server: Option<ServerLevel>,
    /// The generator's CPU and scheduling delay.
    pub generator: Option<GeneratorLevel>,
}

/// Every observer of a run.
#[derive(Debug)]
pub struct Observers {
    scraper: Option<ServerScraper>,
    monitor: Arc<GeneratorMonitor>,
    exporter: Option<Exporter>,
    /// Warnings from the first scrape (unreachable sources), for the report.
    pub warnings: Vec<String>,
}

impl Observers {
    /// Start them before any load: an invalid `--server-query` is an error here, as is a
    /// `--metrics-listen` address that cannot be bound. `live` is the engine's live view,
    /// `control` the run's steering (`--web`), whose changes the exporter counts; `server_now`
    /// (`--web`) gets every scrape round of the server's series.
    pub async fn start(
        cfg: &RunConfig,
        live: Arc<Live>,
        control: Option<Arc<crate::engine::Control>>,
        server_now: Option<tokio::sync::watch::Sender<crate::report::model::server_now::ServerNow>>,
    ) -> anyhow::Result<Self> {
        let monitor = Arc::new(GeneratorMonitor::start());
        let exporter = Exporter::start(cfg, live, monitor.clone(), control)?;
        let publisher = server_now.map(server_live::LivePublisher::new);
        let (scraper, warnings) = match ServerScraper::start(cfg, publisher).await? {
            Some((s, check)) => (Some(s), check.warnings),
            None => (None, Vec::new()),
        };
        Ok(Observers {
            scraper,
            monitor,
            exporter,
            warnings,
        })
    }

    /// A level's load is about to start: take the server's first samples. `label`, `load`
    /// and `inflight_bound` name the level in the exported series.
    pub async fn level_start(&self, label: &str, load: f64, inflight_bound: f64) {
        if let Some(s) = &self.scraper {
            s.level_start().await;
        }
        self.monitor.level_start().await;
        if let Some(e) = &self.exporter {
            e.level_start(label, load, inflight_bound);
        }
    }

    /// The level's row is recorded: the exporter takes its final figures and pushes.
    pub fn level_recorded(&self, row: Option<&LevelReport>) {
        if let (Some(e), Some(row)) = (&self.exporter, row) {
            e.level_recorded(row);
        }
    }

    /// The run's levels are over: the exporter's last push (awaited, bounded).
    pub async fn finish(&self) -> Option<ExporterReport> {
        match &self.exporter {
            Some(e) => Some(e.finish().await),
            None => None,
        }
    }

    /// Where `/metrics` is served (`--metrics-listen`).
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.exporter.as_ref().and_then(|e| e.listening)
    }

    /// The level's load has ended: take the last samples; `median_latency_us` judges the
    /// scheduling delay.
    pub async fn level_end(&self, median_latency_us: u64) -> LevelObservation {
        let generator = self.monitor.level_end(median_latency_us);
        let server = match &self.scraper {
            Some(s) => s.level_end().await,
            None => None,
        };
        LevelObservation { server, generator }
    }

    /// The generator's CPU share in the level so far.
    pub fn cpu_ratio_now(&self) -> Option<f64> {
        self.monitor.cpu_ratio_now()
    }
}
