//! A hub for tests (this crate's and hubload's): served on 127.0.0.1 (or a given listener)
//! with an ephemeral port on the caller's runtime, its counts read over HTTP as any client
//! would, stopped on drop.

use std::net::SocketAddr;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::{HubConfig, HubState, StatsSnapshot};

/// A running test hub; dropping it stops serving.
#[derive(Debug)]
pub struct TestHub {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://<addr>/hub`, e.g. `http://127.0.0.1:<port>/hub`
    pub url: String,
    /// Its state, for changing faults between runs or reading counts directly.
    pub state: HubState,
    /// A client for talking to it.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestHub {
    /// Bind 127.0.0.1:0 and serve `cfg` on the current runtime. Panics on failure (tests only).
    pub async fn start(cfg: HubConfig) -> TestHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        TestHub::start_on(listener, cfg)
    }

    /// Serve `cfg` on `listener` (another loopback address, `[::1]:0` say) on the current
    /// runtime.
    pub fn start_on(listener: tokio::net::TcpListener, cfg: HubConfig) -> TestHub {
        let addr = listener.local_addr().expect("local address");
        let state = HubState::new(cfg);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(crate::serve(listener, state.clone(), async move {
            let _ = stopped.await;
        }));
        TestHub {
            addr,
            url: format!("http://{addr}/hub"),
            state,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A hub with the default settings.
    pub async fn default() -> TestHub {
        TestHub::start(HubConfig::default()).await
    }

    /// Stop serving and wait for `serve` to return (open requests finish first); panics if
    /// `serve` failed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the serve task").expect("serve");
        }
    }

    /// POST to the hub with a query string, a content type and a body: (status, body).
    pub async fn post(&self, query: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let r = self
            .client
            .post(format!("{}?{query}", self.url))
            .header("content-type", content_type)
            .body(body.to_vec())
            .send()
            .await
            .expect("POST to the hub");
        (
            r.status().as_u16(),
            r.text().await.expect("the response body"),
        )
    }

    /// POST a form body: (status, body).
    pub async fn form(&self, pairs: &[(&str, &str)]) -> (u16, String) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        self.post("", "application/x-www-form-urlencoded", body.as_bytes())
            .await
    }

    /// Publish content the identity-publisher way (docs/protocol.md §3).
    pub async fn publish(&self, topic: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let q = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("hub.mode", "publish")
            .append_pair("hub.topic", topic)
            .finish();
        self.post(&q, content_type, body).await
    }

    /// Register a topic the identity-publisher way, and insist it worked.
    pub async fn register(&self, topic: &str) {
        let q = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("hub.mode", "register")
            .append_pair("hub.topic", topic)
            .finish();
        let r = self.post(&q, "application/json", b"").await;
        assert_eq!(r, (200, "hub.mode=accepted".to_owned()), "register {topic}");
    }

    /// The hub's own counts, from `GET /stats`.
    pub async fn stats(&self) -> StatsSnapshot {
        let url = format!("http://{}/stats", self.addr);
        let r = self.client.get(&url).send().await.expect("GET /stats");
        let body = r.text().await.expect("the /stats body");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad /stats JSON: {e}: {body}"))
    }
}
