//! `ServerScraper`: the server's metrics pages and PromQL queries, sampled on a thread of its
//! own (never on the load's runtime) at each level's start and end and every interval between.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::future::join_all;
use tokio::sync::{mpsc, oneshot};

use super::exposition::{parse, Exposition};
use super::fetch::Endpoint;
use super::promql::{query_path, read_answer};
use super::series::LevelSeries;
use super::server_live::LivePublisher;
use crate::config::{ObservedUrl, RunConfig};
use crate::report::model::observations::ServerLevel;

/// Where one series of samples comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A text-format page.
    Page(Endpoint),
    /// An instant query (`name`, its endpoint with the query in its path).
    Query(String, Endpoint),
}

impl Source {
    fn shown(&self) -> &str {
        match self {
            Source::Page(e) => &e.shown,
            Source::Query(..) => "promql",
        }
    }
}

/// What the scraping thread is asked to do.
enum Cmd {
    /// Take the level's first samples now; answer once they are in.
    LevelStart(oneshot::Sender<()>),
    /// Take the level's last samples now; answer with its figures.
    LevelEnd(oneshot::Sender<ServerLevel>),
}

/// Samples the server for every level. Dropping it ends its thread (after a scrape in
/// progress, bounded by its timeout); nothing waits for that.
#[derive(Debug)]
pub struct ServerScraper {
    tx: mpsc::UnboundedSender<Cmd>,
}

/// What the first scrape (before any load) found: one warning line per unreachable source.
#[derive(Debug, Default)]
pub struct StartCheck {
    pub warnings: Vec<String>,
}

impl ServerScraper {
    /// Check every source once before any load and start the scraping thread. An invalid
    /// query (the server answers a 4xx with its error) is an error: the run must not start.
    /// An unreachable source is a warning: the run goes on and its failures are counted.
    /// `live` (`--web`) gets every round taken in a level.
    pub async fn start(
        cfg: &RunConfig,
        live: Option<LivePublisher>,
    ) -> anyhow::Result<Option<(Self, StartCheck)>> {
        let o = &cfg.observe;
        if !o.scrapes() {
            return Ok(None);
        }
        let endpoint = |u: &ObservedUrl| -> anyhow::Result<Endpoint> {
            let url = url::Url::parse(u.url.expose()).context("a metrics URL")?;
            let tls = cfg.tls.for_url(&url).map_err(|e| {
                anyhow::anyhow!("{}: {}", u.shown, e.to_string().replace("--hub-url", "TLS"))
            })?;
            Ok(Endpoint::new(url, tls))
        };
        let mut sources = Vec::new();
        for u in &o.server_metrics {
            sources.push(Source::Page(endpoint(u)?));
        }
        if let Some(p) = &o.prometheus {
            let prom = endpoint(p)?;
            for q in &o.queries {
                sources.push(Source::Query(
                    q.name.clone(),
                    prom.at(&query_path(&q.promql)),
                ));
            }
        }
        let timeout = scrape_timeout(o.interval);
        let keep = o.series_match.clone();
        let sources = Arc::new(Scrape {
            sources,
            keep,
            timeout,
        });
        let mut check = StartCheck::default();
        for (src, got) in sources.sources.iter().zip(sources.round().await) {
            match (src, got) {
                (_, Ok(_)) => {}
                (Source::Query(name, _), Err(Failure::Refused(why))) => {
                    anyhow::bail!(
                        "invalid --server-query `{name}`: the Prometheus server answered {why}"
                    );
                }
                (s, Err(f)) => {
                    let line = format!(
                        "server metrics {}: {} (the run goes on; failures are counted per level)",
                        s.shown(),
                        f.text()
                    );
                    tracing::warn!("{line}");
                    check.warnings.push(line);
                }
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let interval = o.interval;
        std::thread::Builder::new()
            .name("hubload-scraper".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime");
                rt.block_on(serve(sources, interval, rx, live));
            })
            .context("cannot start the server-metrics thread")?;
        Ok(Some((ServerScraper { tx }, check)))
    }

    /// Take the level's first samples (returns once they are taken).
    pub async fn level_start(&self) {
        let (reply, done) = oneshot::channel();
        if self.tx.send(Cmd::LevelStart(reply)).is_ok() {
            let _ = done.await;
        }
    }

    /// Take the level's last samples and return its figures.
    pub async fn level_end(&self) -> Option<ServerLevel> {
        let (reply, done) = oneshot::channel();
        self.tx.send(Cmd::LevelEnd(reply)).ok()?;
        done.await.ok()
    }
}

/// Each scrape's bound: the interval, at least 1 s and at most 5 s, so a silent source
/// delays a level's edge by 5 s at most.
fn scrape_timeout(interval: Duration) -> Duration {
    interval.clamp(Duration::from_secs(1), Duration::from_secs(5))
}

/// Why a source gave no samples.
#[derive(Debug)]
enum Failure {
    /// The server refused the request (4xx; for a query, its error text).
    Refused(String),
    /// No usable answer (connect, timeout, 5xx).
    Failed(String),
}

impl Failure {
    fn text(&self) -> String {
        match self {
            Failure::Refused(s) | Failure::Failed(s) => s.clone(),
        }
    }
}

/// The sources and how they are read.
#[derive(Debug)]
struct Scrape {
    sources: Vec<Source>,
    keep: Option<regex::Regex>,
    timeout: Duration,
}

impl Scrape {
    /// Every source once, concurrently.
    async fn round(&self) -> Vec<Result<Exposition, Failure>> {
        join_all(self.sources.iter().map(|s| self.one(s))).await
    }

    async fn one(&self, s: &Source) -> Result<Exposition, Failure> {
        let keep = |name: &str| self.keep.as_ref().is_none_or(|r| r.is_match(name));
        match s {
            Source::Page(e) => {
                let (status, body) = e.get(self.timeout).await.map_err(Failure::Failed)?;
                match status {
                    200..=299 => Ok(parse(&body, keep)),
                    400..=499 => Err(Failure::Refused(format!("HTTP {status}"))),
                    _ => Err(Failure::Failed(format!("HTTP {status}"))),
                }
            }
            Source::Query(name, e) => {
                let (status, body) = e.get(self.timeout).await.map_err(Failure::Failed)?;
                let answer = read_answer(name, status, &body);
                match (status, answer) {
                    (200..=299, Ok(x)) => Ok(x),
                    (400..=499, a) => Err(Failure::Refused(match a {
                        Err(why) => format!("HTTP {status}: {why}"),
                        Ok(_) => format!("HTTP {status}"),
                    })),
                    (_, Err(why)) => Err(Failure::Failed(why)),
                    (_, Ok(_)) => Err(Failure::Failed(format!("HTTP {status}"))),
                }
            }
        }
    }

    /// One round into `level`, `t` seconds after it started, and to the live page.
    async fn sample_into(&self, level: &mut LevelSeries, t: f64, live: &mut Option<LivePublisher>) {
        let got: Vec<_> = self
            .round()
            .await
            .into_iter()
            .map(|g| g.map_err(|f| f.text()))
            .collect();
        for (s, got) in self.sources.iter().zip(&got) {
            level.add(t, s.shown(), got);
        }
        if let Some(p) = live.as_mut() {
            p.publish(
                Instant::now(),
                self.sources.iter().map(Source::shown).zip(&got),
            );
        }
    }
}

/// The scraping thread's loop: edges on request, the interval between them.
async fn serve(
    scrape: Arc<Scrape>,
    interval: Duration,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
    mut live: Option<LivePublisher>,
) {
    let mut level: Option<(Instant, LevelSeries)> = None;
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                None => break,
                Some(Cmd::LevelStart(reply)) => {
                    let mut l = LevelSeries::default();
                    let start = Instant::now();
                    scrape.sample_into(&mut l, 0.0, &mut live).await;
                    level = Some((start, l));
                    tick.reset();
                    let _ = reply.send(());
                }
                Some(Cmd::LevelEnd(reply)) => {
                    if let Some((start, mut l)) = level.take() {
                        scrape.sample_into(&mut l, start.elapsed().as_secs_f64(), &mut live)
                            .await;
                        let _ = reply.send(l.finish());
                    }
                }
            },
            _ = tick.tick(), if level.is_some() => {
                if let Some((start, l)) = level.as_mut() {
                    let t = start.elapsed().as_secs_f64();
                    scrape.sample_into(l, t, &mut live).await;
                }
            }
        }
    }
}
