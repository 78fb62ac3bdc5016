//! The topic server for the websub dialect: `GET <topic URL>` answers the topic's next event body.
//!
//! A thin ping carries no content: the hub fetches the topic URL and delivers what it got.
//! So that each ping maps to exactly one event, every fetch gets the oldest published event
//! of that topic not yet fetched (FIFO per topic); with none pending, the latest one again
//! (counted apart). Bodies are regenerated from (seq, send time), never stored. The answer
//! carries the topic's content type and `Link: <hub>; rel="hub", <topic URL>; rel="self"`.
//! docs/delivery.md describes the mapping.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::ops::AddAssign;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::workload::Workload;

/// Where the topic server listens and how topics are named.
#[derive(Debug, Clone)]
pub struct TopicServerConfig {
    /// Bind address (e.g. `127.0.0.1:0`).
    pub listen: SocketAddr,
    /// The hub's URL, for `rel="hub"`.
    pub hub_url: String,
    /// The public prefix a topic name is appended to, e.g. `http://hubload-topics:8081/topics/`;
    /// `None`: `http://<bound address>/topics/`.
    pub topic_url_prefix: Option<String>,
    /// Published events kept pending per topic; beyond, the oldest is dropped (counted).
    pub queue_cap: usize,
}

/// Fetch counters (per level when taken with [`TopicServer::take_stats`]); add with `+=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopicFetchStats {
    /// Every GET of a known topic.
    pub fetches: u64,
    /// Fetches answered with a published event not fetched before (one ping, one event).
    pub fetched_new: u64,
    /// Fetches with nothing pending, answered with the topic's latest event again.
    pub fetched_again: u64,
    /// Fetches of a topic with nothing published yet (204, `Link` headers only).
    pub fetched_empty: u64,
    /// GETs of a path that is no topic (404).
    pub unknown: u64,
    /// Pending events dropped because the topic's queue was full (never fetched).
    pub overflowed: u64,
    /// Fetches per topic index (as `topic_attempts`), trailing zeros left off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_topic: Vec<u64>,
}

impl AddAssign<&TopicFetchStats> for TopicFetchStats {
    fn add_assign(&mut self, o: &TopicFetchStats) {
        self.fetches += o.fetches;
        self.fetched_new += o.fetched_new;
        self.fetched_again += o.fetched_again;
        self.fetched_empty += o.fetched_empty;
        self.unknown += o.unknown;
        self.overflowed += o.overflowed;
        if self.by_topic.len() < o.by_topic.len() {
            self.by_topic.resize(o.by_topic.len(), 0);
        }
        for (a, b) in self.by_topic.iter_mut().zip(&o.by_topic) {
            *a += b;
        }
    }
}

#[derive(Debug, Default)]
struct TopicQueue {
    /// (seq, sent_us) published and not yet fetched, oldest first.
    pending: VecDeque<(u64, u64)>,
    latest: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Shared {
    workload: Arc<Workload>,
    queues: Vec<Mutex<TopicQueue>>,
    /// Request path of each topic → topic index.
    by_path: HashMap<String, usize>,
    /// Per topic, the `Link` header value.
    links: Vec<HeaderValue>,
    queue_cap: usize,
    stats: Mutex<TopicFetchStats>,
}

/// The running topic server; dropping it stops it.
#[derive(Debug)]
pub struct TopicServer {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    prefix: String,
    stop: CancellationToken,
}

impl Drop for TopicServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl TopicServer {
    /// Bind and serve on the current runtime.
    pub async fn start(cfg: TopicServerConfig, workload: Arc<Workload>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(cfg.listen).await?;
        let local_addr = listener.local_addr()?;
        let prefix = cfg
            .topic_url_prefix
            .clone()
            .unwrap_or_else(|| format!("http://{local_addr}/topics/"));
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_owned());
        let prefix_path = url::Url::parse(&prefix)
            .map_err(|_| bad("the topic URL prefix is not a URL"))?
            .path()
            .to_owned();
        let topics = workload.topics();
        let mut by_path = HashMap::with_capacity(topics.len());
        let mut links = Vec::with_capacity(topics.len());
        for (i, t) in topics.iter().enumerate() {
            by_path.insert(format!("{prefix_path}{}", t.name), i);
            let link = format!(
                "<{}>; rel=\"hub\", <{prefix}{}>; rel=\"self\"",
                cfg.hub_url, t.name
            );
            links.push(
                HeaderValue::try_from(link)
                    .map_err(|_| bad("a topic URL is not a header value"))?,
            );
        }
        let shared = Arc::new(Shared {
            queues: topics.iter().map(|_| Mutex::default()).collect(),
            workload,
            by_path,
            links,
            queue_cap: cfg.queue_cap.max(1),
            stats: Mutex::default(),
        });
        let app = Router::new().fallback(fetch).with_state(shared.clone());
        let stop = crate::serve::spawn(listener, app, "topic server");
        Ok(TopicServer {
            shared,
            local_addr,
            prefix,
            stop,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The prefix topic names are appended to (given, or `http://<bound address>/topics/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL of workload topic `topic` (what a thin ping names as `hub.topic`).
    pub fn topic_url(&self, topic: usize) -> Option<String> {
        let t = self.shared.workload.topics().get(topic)?;
        Some(format!("{}{}", self.prefix, t.name))
    }

    /// Event `seq` of `topic`, sent at `sent_us`, is being pinged: queue it for the next fetch.
    /// Call it before the ping is sent, so the hub's fetch finds it.
    pub fn note_published(&self, topic: usize, seq: u64, sent_us: u64) {
        let Some(q) = self.shared.queues.get(topic) else {
            return;
        };
        let mut q = q.lock().unwrap_or_else(|e| e.into_inner());
        let full = q.pending.len() >= self.shared.queue_cap;
        if full {
            q.pending.pop_front();
        }
        q.pending.push_back((seq, sent_us));
        drop(q);
        if full {
            self.shared.stats().overflowed += 1;
        }
    }

    /// The counters since the last call (fetches per level).
    pub fn take_stats(&self) -> TopicFetchStats {
        std::mem::take(&mut *self.shared.stats())
    }

    /// Stop serving.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }
}

impl Shared {
    fn stats(&self) -> std::sync::MutexGuard<'_, TopicFetchStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

async fn fetch(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    let Some(&topic) = sh.by_path.get(req.uri().path()) else {
        sh.stats().unknown += 1;
        return StatusCode::NOT_FOUND.into_response();
    };
    let next = {
        let mut q = sh.queues[topic].lock().unwrap_or_else(|e| e.into_inner());
        match q.pending.pop_front() {
            Some(e) => {
                q.latest = Some(e);
                Some((e, true))
            }
            None => q.latest.map(|e| (e, false)),
        }
    };
    let link = sh.links[topic].clone();
    {
        let mut st = sh.stats();
        st.fetches += 1;
        if st.by_topic.len() <= topic {
            st.by_topic.resize(topic + 1, 0);
        }
        st.by_topic[topic] += 1;
        match next {
            Some((_, true)) => st.fetched_new += 1,
            Some((_, false)) => st.fetched_again += 1,
            None => st.fetched_empty += 1,
        }
    }
    let Some(((seq, sent_us), _)) = next else {
        return (StatusCode::NO_CONTENT, [(header::LINK, link)]).into_response();
    };
    let body = sh.workload.event_at(seq, sent_us).body;
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::LINK, link),
        ],
        body,
    )
        .into_response()
}
