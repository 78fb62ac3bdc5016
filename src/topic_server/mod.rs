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

use std::time::Duration;

use hubload_http1::answer::{self, Answer, Persist};
use hubload_http1::request::{Head, Method};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::serve::{Handler, ServerCounts, ServerDeadlines, ServerStats};
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
    /// How long a connection may wait and take (docs/deadlines.md).
    pub deadlines: ServerDeadlines,
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
    /// Fetches per topic index (`Report::topics`), trailing zeros left off.
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
    links: Vec<Vec<u8>>,
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
    server_stats: Arc<ServerStats>,
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
            // A field value is visible ASCII and spaces: nothing that could end the field.
            if !link.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
                return Err(bad("a topic URL is not a header value"));
            }
            links.push(link.into_bytes());
        }
        let shared = Arc::new(Shared {
            queues: topics.iter().map(|_| Mutex::default()).collect(),
            workload,
            by_path,
            links,
            queue_cap: cfg.queue_cap.max(1),
            stats: Mutex::default(),
        });
        let server_stats = Arc::new(ServerStats::default());
        let stop = crate::serve::spawn(
            listener,
            shared.clone(),
            cfg.deadlines,
            server_stats.clone(),
            "topic server",
        );
        Ok(TopicServer {
            shared,
            local_addr,
            prefix,
            stop,
            server_stats,
        })
    }

    /// The server's connection counts so far (deadlines reached among them).
    pub fn server_counts(&self) -> ServerCounts {
        self.server_stats.counts()
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

/// What a request asks: its path (the query left off), and whether it is a GET.
#[derive(Debug)]
pub(crate) struct Asked {
    get: bool,
    path: Vec<u8>,
}

impl Handler for Shared {
    type Asked = Asked;
    /// A fetch has no body; a stray one is read and ignored up to this.
    const MAX_BODY: usize = 64 * 1024;

    fn asked(&self, head: &Head, buf: &[u8]) -> Asked {
        let mut target = &buf[head.target.clone()];
        // The absolute form (`http://host/topics/x`, as a proxy sends it): its path.
        if let Some(at) = target.windows(3).position(|w| w == b"://") {
            let rest = &target[at + 3..];
            target = &rest[rest.iter().position(|b| *b == b'/').unwrap_or(rest.len())..];
        }
        let path = target.split(|b| *b == b'?').next().unwrap_or(target);
        Asked {
            get: head.method == Method::Get,
            path: path.to_vec(),
        }
    }

    fn answer(&self, asked: Asked, _body: &[u8], out: &mut Vec<u8>, persist: Persist) -> Duration {
        fetch(self, &asked, out, persist);
        Duration::ZERO
    }
}

/// The answer to one request: the topic's next event, or 204, 404, 405.
fn fetch(sh: &Shared, asked: &Asked, out: &mut Vec<u8>, persist: Persist) {
    let topic = std::str::from_utf8(&asked.path)
        .ok()
        .and_then(|p| sh.by_path.get(p));
    let Some(&topic) = topic else {
        sh.stats().unknown += 1;
        return answer::write_full(out, &Answer::empty(404), persist);
    };
    if !asked.get {
        return answer::write_full(out, &Answer::empty(405), persist);
    }
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
    let link = [("link", &sh.links[topic][..])];
    let Some(((seq, sent_us), _)) = next else {
        let a = Answer {
            fields: &link,
            ..Answer::empty(204)
        };
        return answer::write_full(out, &a, persist);
    };
    let body = sh.workload.event_at(seq, sent_us).body;
    let a = Answer {
        status: 200,
        content_type: Some("application/json"),
        fields: &link,
        body: &body,
    };
    answer::write_full(out, &a, persist);
}

#[cfg(test)]
mod misbehaving_fetcher_tests;
#[cfg(test)]
mod slow_reader_tcp_tests;
