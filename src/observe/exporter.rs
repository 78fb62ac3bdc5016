//! `Exporter`: hubload's own series pushed to a Prometheus remote-write receiver (every
//! `--push-interval`, at each level's end, at the run's end) and served at `/metrics`
//! (`--metrics-listen`), from a thread of its own so a slow receiver never holds up the load.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use tokio::sync::{mpsc, oneshot};

use super::fetch::Endpoint;
use super::monitor::GeneratorMonitor;
use super::own_series::{exposition, LevelFigures, Snapshot};
use super::remote_write;
use crate::config::RunConfig;
use crate::engine::{Control, Live};
use crate::report::model::observations::ExporterReport;
use crate::report::model::LevelReport;

/// What the exporter knows of the run so far.
#[derive(Debug, Default)]
struct State {
    finished: Vec<(String, LevelFigures)>,
    /// The running level: its label, load and in-flight bound.
    running: Option<(String, f64, f64)>,
    report: ExporterReport,
}

/// Where the series come from.
struct Source {
    state: Mutex<State>,
    live: Arc<Live>,
    monitor: Arc<GeneratorMonitor>,
    /// `--web`: the run's steering, whose changes are counted.
    control: Option<Arc<Control>>,
    /// Run id, shard, `--push-label`.
    common: Vec<(String, String)>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source").finish_non_exhaustive()
    }
}

impl Source {
    fn snapshot(&self) -> Snapshot {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut levels = st.finished.clone();
        let (mut level, mut inflight, mut inflight_limit) = (0.0, 0.0, 0.0);
        if let Some((label, load, bound)) = &st.running {
            let (counts, q) = self.live.quantiles();
            levels.push((label.clone(), LevelFigures::live(&counts, q)));
            (level, inflight_limit) = (*load, *bound);
            inflight = self.live.inflight() as f64;
        }
        Snapshot {
            levels,
            level,
            inflight,
            inflight_limit,
            cpu_ratio: self.monitor.cpu_ratio_now().unwrap_or(0.0),
            control: self.control.as_ref().map(|c| {
                let mut actions = std::collections::BTreeMap::new();
                for e in c.events() {
                    *actions.entry(e.action).or_insert(0) += 1;
                }
                (actions, if c.is_paused() { 1.0 } else { 0.0 })
            }),
        }
    }

    fn page(&self) -> String {
        exposition(&self.snapshot().series(&self.common))
    }
}

/// What the exporter thread is asked to do.
enum Cmd {
    /// Push now; answer when done (or failed).
    Flush(Option<oneshot::Sender<()>>),
}

/// Pushes and serves hubload's series. Dropping it ends its thread.
#[derive(Debug)]
pub struct Exporter {
    source: Arc<Source>,
    tx: mpsc::UnboundedSender<Cmd>,
    /// Where `/metrics` is served (`--metrics-listen`, its port resolved).
    pub listening: Option<std::net::SocketAddr>,
}

impl Exporter {
    /// Start when `--prometheus-remote-write` or `--metrics-listen` is given. A listen address
    /// that cannot be bound is an error (before any load).
    pub fn start(
        cfg: &RunConfig,
        live: Arc<Live>,
        monitor: Arc<GeneratorMonitor>,
        control: Option<Arc<Control>>,
    ) -> anyhow::Result<Option<Self>> {
        let o = &cfg.observe;
        if o.remote_write.is_none() && o.metrics_listen.is_none() {
            return Ok(None);
        }
        let mut common: Vec<(String, String)> = o.push_labels.clone();
        match &cfg.shard {
            Some(s) => {
                common.push(("run_id".into(), s.run_id.clone()));
                common.push(("shard".into(), s.index.to_string()));
            }
            None => common.push(("run_id".into(), uuid::Uuid::new_v4().to_string())),
        }
        let push = match &o.remote_write {
            Some(u) => {
                let url = url::Url::parse(u.url.expose()).context("--prometheus-remote-write")?;
                let tls = cfg
                    .tls
                    .for_url(&url)
                    .map_err(|e| anyhow::anyhow!("--prometheus-remote-write: {e}"))?;
                Some(Endpoint::new(url, tls))
            }
            None => None,
        };
        let listener = match o.metrics_listen {
            Some(addr) => {
                let l = std::net::TcpListener::bind(addr)
                    .with_context(|| format!("cannot listen on --metrics-listen {addr}"))?;
                l.set_nonblocking(true)?;
                Some(l)
            }
            None => None,
        };
        let listening = listener.as_ref().and_then(|l| l.local_addr().ok());
        let source = Arc::new(Source {
            state: Mutex::new(State::default()),
            live,
            monitor,
            control,
            common,
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let (s, interval) = (source.clone(), o.push_interval);
        std::thread::Builder::new()
            .name("hubload-exporter".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime");
                rt.block_on(serve(s, push, interval, listener, rx));
            })
            .context("cannot start the exporter thread")?;
        Ok(Some(Exporter {
            source,
            tx,
            listening,
        }))
    }

    /// A level starts: its live counts are exported from now on.
    pub fn level_start(&self, label: &str, load: f64, inflight_bound: f64) {
        let mut st = self.source.state.lock().unwrap_or_else(|e| e.into_inner());
        st.running = Some((label.to_string(), load, inflight_bound));
    }

    /// A level's row was recorded: its final figures replace the live ones, and a push goes
    /// out now (without waiting for it: the next level does not wait for the receiver).
    pub fn level_recorded(&self, row: &LevelReport) {
        {
            let mut st = self.source.state.lock().unwrap_or_else(|e| e.into_inner());
            st.running = None;
            let figures = LevelFigures::of_row(row);
            match st.finished.iter_mut().find(|(l, _)| *l == row.label) {
                Some(f) => f.1 = figures,
                None => st.finished.push((row.label.clone(), figures)),
            }
        }
        let _ = self.tx.send(Cmd::Flush(None));
    }

    /// The run ended: push once more and wait for it (bounded by the push timeout), so the
    /// last interval is never lost. Returns the pushes' tally.
    pub async fn finish(&self) -> ExporterReport {
        let (reply, done) = oneshot::channel();
        if self.tx.send(Cmd::Flush(Some(reply))).is_ok() {
            let _ = done.await;
        }
        let st = self.source.state.lock().unwrap_or_else(|e| e.into_inner());
        st.report.clone()
    }
}

/// Each push's bound: the interval, at least 1 s and at most 5 s.
fn push_timeout(interval: Duration) -> Duration {
    interval.clamp(Duration::from_secs(1), Duration::from_secs(5))
}

/// Push the current series; count the outcome.
async fn push_now(source: &Source, to: &Endpoint, timeout: Duration) {
    let ts = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let body = remote_write::body(&source.snapshot().series(&source.common), ts);
    let answer = to.post(body, &remote_write::HEADERS, timeout).await;
    let failed = match answer {
        Ok((200..=299, _)) => None,
        Ok((status, text)) => Some(format!(
            "HTTP {status}: {}",
            text.lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect::<String>()
        )),
        Err(why) => Some(why),
    };
    let mut st = source.state.lock().unwrap_or_else(|e| e.into_inner());
    st.report.pushes += 1;
    if let Some(why) = failed {
        st.report.push_failures += 1;
        if st.report.first_error.is_none() {
            tracing::warn!(to = %to.shown, "remote write failed: {why}");
            st.report.first_error = Some(format!("{}: {why}", to.shown));
        }
    }
}

/// The exporter thread: pushes on the interval and on request, and serves `/metrics`.
async fn serve(
    source: Arc<Source>,
    push: Option<Endpoint>,
    interval: Duration,
    listener: Option<std::net::TcpListener>,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
) {
    if let Some(l) = listener {
        let page = source.clone();
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let page = page.clone();
                async move { ([("content-type", "text/plain; version=0.0.4")], page.page()) }
            }),
        );
        if let Ok(l) = tokio::net::TcpListener::from_std(l) {
            tokio::spawn(async move {
                let _ = axum::serve(l, app).await;
            });
        }
    }
    let timeout = push_timeout(interval);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: nothing to push yet.
    tick.tick().await;
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                None => break,
                Some(Cmd::Flush(reply)) => {
                    if let Some(to) = &push {
                        push_now(&source, to, timeout).await;
                    }
                    if let Some(r) = reply {
                        let _ = r.send(());
                    }
                }
            },
            _ = tick.tick() => {
                if let Some(to) = &push {
                    push_now(&source, to, timeout).await;
                }
            }
        }
    }
}
