//! `--web`: the live page and the control API, served while the run goes (docs/live.md).
//!
//! A view beside the run, like the exporter: it reads the engine's live totals once a second
//! and the level rows as they are written, and steers through the engine's
//! [`Control`](crate::engine::Control); the publish path knows nothing of it.

mod api;
mod auth;
mod delivery_feed;
mod feed;
mod json_out;
mod page;
mod state;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::config::{RunConfig, WebConfig};
use feed::Feed;
use state::WebState;

pub use delivery_feed::{take as take_delivery, DeliveryPrev, DeliverySlot};
pub use feed::{offered, CpuGauge, Sources};

/// The running server.
#[derive(Debug)]
pub struct WebServer {
    state: Arc<WebState>,
    /// The address it listens on (the port resolved).
    pub addr: SocketAddr,
    /// The server's task, done once its connections have closed after `shutdown`.
    served: tokio::task::JoinHandle<()>,
    sampler: tokio::task::JoinHandle<()>,
    /// What the sampler reads and remembers (`None` for a merge, which samples nothing).
    sampling: Option<Arc<std::sync::Mutex<feed::Sampler>>>,
    /// Asks the sampler for its last record.
    last_second: CancellationToken,
    /// Where the fleet's view goes once there is one.
    delivery: DeliverySlot,
    shutdown: CancellationToken,
}

impl WebServer {
    /// Bind `web.addr` and serve what `sources` show, steering the run through their
    /// control; `on_stop` stops it as the first SIGINT does.
    pub async fn start(
        web: &WebConfig,
        cfg: &RunConfig,
        sources: Sources,
        on_stop: Box<dyn Fn() + Send + Sync>,
    ) -> anyhow::Result<Self> {
        let control = sources.control.clone();
        let listener = tokio::net::TcpListener::bind(web.addr)
            .await
            .with_context(|| format!("cannot listen on --web {}", web.addr))?;
        let addr = listener.local_addr()?;
        let feed = Arc::new(Feed::default());
        let started = Instant::now();
        let shutdown = CancellationToken::new();
        let state = Arc::new(WebState {
            control: control.clone(),
            feed: feed.clone(),
            token: web.token.clone(),
            config: cfg.shown.clone(),
            model: cfg.model.as_str(),
            levels: cfg.levels.len(),
            max_rate: control.max_rate(),
            started,
            out_dir: cfg.output.out_dir.clone(),
            ended: AtomicBool::new(false),
            linger: web.linger,
            linger_end: CancellationToken::new(),
            on_stop,
            server: sources.server.clone(),
            merge: None,
        });
        let delivery = sources.delivery.clone();
        let last_second = CancellationToken::new();
        let sampling = Arc::new(std::sync::Mutex::new(feed::Sampler::new(sources, started)));
        let sampler = tokio::spawn(feed::sample(feed, sampling.clone(), last_second.clone()));
        let served = serve(listener, state.clone(), shutdown.clone());
        Ok(WebServer {
            state,
            addr,
            served,
            sampler,
            sampling: Some(sampling),
            last_second,
            delivery,
            shutdown,
        })
    }

    /// Bind `web.addr` and serve the page of a merge that follows shards (`merge --follow`):
    /// the level table fills in as levels are merged ([`level_recorded`](Self::level_recorded),
    /// [`judged`](Self::judged)), `/v1/status` says how the merge stands ([`merge_status`](
    /// Self::merge_status)); `on_stop` ends the follow, and the other verbs are refused.
    pub async fn start_merge(
        web: &WebConfig,
        config: Value,
        model: &'static str,
        out_dir: std::path::PathBuf,
        on_stop: Box<dyn Fn() + Send + Sync>,
    ) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind(web.addr)
            .await
            .with_context(|| format!("cannot listen on --web {}", web.addr))?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let state = Arc::new(WebState {
            control: Arc::new(crate::engine::Control::new(CancellationToken::new(), 0.0)),
            feed: Arc::new(Feed::default()),
            token: web.token.clone(),
            config,
            model,
            levels: 0,
            max_rate: 0.0,
            started: Instant::now(),
            out_dir,
            ended: AtomicBool::new(false),
            linger: web.linger,
            linger_end: CancellationToken::new(),
            on_stop,
            server: None,
            merge: Some(std::sync::Mutex::new(Value::Null)),
        });
        let served = serve(listener, state.clone(), shutdown.clone());
        Ok(WebServer {
            state,
            addr,
            served,
            // A merge samples nothing: its seconds are the shards' ([`second`](Self::second)).
            sampler: tokio::spawn(async {}),
            sampling: None,
            last_second: CancellationToken::new(),
            delivery: DeliverySlot::default(),
            shutdown,
        })
    }

    /// `merge --follow`: how the merge stands now, as `/v1/status` shows it under `merge`.
    pub fn merge_status(&self, v: Value) {
        if let Some(m) = &self.state.merge {
            *m.lock().unwrap_or_else(|e| e.into_inner()) = v;
        }
    }

    /// `merge --follow`: a merged second (the shards' seconds added up), as a `second` record.
    pub fn second(&self, s: &impl serde::Serialize) {
        let v = serde_json::to_value(s).unwrap_or(Value::Null);
        self.state.feed.push("second", &v);
    }

    /// The level running has ended (its stripes are final, the control still shows it): the
    /// page gets its last part, the time since the last `second`, as a `second` of its own.
    pub fn level_ended(&self) {
        if let Some(s) = &self.sampling {
            feed::lock(s).level_ended(&self.state.feed);
        }
    }

    /// The run's subscriber fleet (one per target path), read every second from now on.
    pub fn watch_delivery(&self, view: crate::subscriber::DeliveryView) {
        self.delivery.set(view);
    }

    /// The page's URL, as the banner prints it.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// A level's row was written (`row`: its summary.json entry).
    pub fn level_recorded(&self, row: &impl serde::Serialize) {
        let row = serde_json::to_value(row).unwrap_or(Value::Null);
        self.state.feed.push("level", &row);
    }

    /// The run's verdicts and knee so far, after a level's row (`level` record) was written:
    /// the page's level table marks each row with its verdicts.
    pub fn judged(&self, verdicts: &impl serde::Serialize, knee: &impl serde::Serialize) {
        let v = json!({
            "verdicts": serde_json::to_value(verdicts).unwrap_or(Value::Null),
            "knee": serde_json::to_value(knee).unwrap_or(Value::Null),
        });
        self.state.feed.push("judged", &v);
    }

    /// The run ended and its reports are written (`total`: summary.json's TOTAL row): the
    /// `end` record; then, with `--web-linger`, the final page and report.html stay served
    /// until the linger passes, `stop` is cancelled (SIGINT) or `POST /v1/stop` comes; then
    /// the server closes (pages keep what they have). A stopped run does not linger: it exits
    /// as a stop does.
    pub async fn finish(
        mut self,
        total: &impl serde::Serialize,
        partial: bool,
        stop: &CancellationToken,
    ) {
        // The part of a second since the last record, so the seconds add up to the run.
        self.last_second.cancel();
        let _ = (&mut self.sampler).await;
        let total = serde_json::to_value(total).unwrap_or(Value::Null);
        self.state.ended.store(true, Ordering::Release);
        self.state.feed.push(
            "end",
            &json!({"partial": partial, "total": total, "report": "report.html"}),
        );
        let linger = self.state.linger;
        if !linger.is_zero() && !stop.is_cancelled() {
            crate::console::say!(
                "hubload: the run ended; its page and report.html stay at {} for {} (Ctrl-C or POST /v1/stop ends it sooner)",
                self.url(),
                humantime::format_duration(linger)
            );
            tokio::select! {
                _ = tokio::time::sleep(linger) => {}
                _ = stop.cancelled() => {}
                _ = self.state.linger_end.cancelled() => {}
            }
        }
        self.shutdown.cancel();
        if self.state.merge.is_some() {
            // A merge exits as soon as this returns: its open pages get their `end` first
            // (their streams end with it), within a bound.
            let _ = tokio::time::timeout(MERGE_DRAIN, &mut self.served).await;
        }
    }
}

/// How long a merge's page server may take to hand its open streams their `end`.
const MERGE_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Serve `state`'s routes on `listener` until `shutdown`.
fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<WebState>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
    })
}

/// The routes.
fn router(state: Arc<WebState>) -> Router {
    let guarded = Router::new()
        .route("/v1/status", get(api::get_status).patch(api::patch_status))
        .route("/v1/control", get(api::get_control))
        .route("/v1/config", get(api::get_config))
        .route("/v1/events", get(events))
        .route("/v1/load", post(api::post_load))
        .route("/v1/{verb}", post(api::post_verb))
        .route("/report.html", get(report))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_token,
        ));
    Router::new()
        .route("/", get(index))
        .merge(guarded)
        .with_state(state)
}

/// Every route but the page itself: the token, when one is set.
async fn require_token(
    State(s): State<Arc<WebState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match auth::check_token(s.token.as_ref(), req.headers(), None) {
        Ok(()) => next.run(req).await,
        Err(d) => d.answer().into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// `GET /`: the page; with a token set, only for a request that carries it (`?token=` sets
/// the cookie the page's later requests carry).
async fn index(
    State(s): State<Arc<WebState>>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    if let Err(d) = auth::check_token(s.token.as_ref(), &headers, q.token.as_deref()) {
        return d.answer().into_response();
    }
    let mut r = Html(page::PAGE).into_response();
    if let (Some(t), Some(_)) = (&s.token, &q.token) {
        let cookie = format!(
            "{}={}; HttpOnly; SameSite=Strict; Path=/",
            auth::COOKIE,
            t.expose()
        );
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
    }
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
        ),
    );
    r
}

/// `GET /v1/events`: the whole feed so far, then each record as it comes (Server-Sent Events).
async fn events(
    State(s): State<Arc<WebState>>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let (kept, rx) = s.feed.subscribe();
    // The stream ends with the `end` record, so the server's graceful close is not held.
    let done = kept.iter().any(|r| r.kind == "end");
    let first = futures_util::stream::iter(kept.into_iter().map(to_event).map(Ok));
    let rest = futures_util::stream::unfold((rx, done), |(mut rx, done)| async move {
        if done {
            return None;
        }
        loop {
            match rx.recv().await {
                Ok(r) => {
                    let done = r.kind == "end";
                    return Some((Ok(to_event(r)), (rx, done)));
                }
                // A page too slow to read: it misses some seconds, not the end.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    use futures_util::StreamExt;
    Sse::new(first.chain(rest)).keep_alive(KeepAlive::default())
}

fn to_event(r: feed::Record) -> Event {
    Event::default().event(r.kind).data(&*r.data)
}

/// `GET /report.html`: the run's report as last written.
async fn report(State(s): State<Arc<WebState>>) -> Response {
    match tokio::fs::read(s.out_dir.join("report.html")).await {
        Ok(b) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], b).into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "no report.html yet\n").into_response(),
    }
}
