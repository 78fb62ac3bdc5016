//! A hub for tests (this crate's and hubload's): served on 127.0.0.1 with an ephemeral port
//! on the caller's runtime, its counts read over HTTP as any client would, stopped on drop.

use std::net::SocketAddr;

use tokio::sync::oneshot;

use crate::{HubConfig, HubState, StatsSnapshot};

/// A running test hub; dropping it stops serving.
#[derive(Debug)]
pub struct TestHub {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>/hub`
    pub url: String,
    /// Its state, for changing faults between runs or reading counts directly.
    pub state: HubState,
    _stop: oneshot::Sender<()>,
}

impl TestHub {
    /// Bind 127.0.0.1:0 and serve `cfg` on the current runtime. Panics on failure (tests only).
    pub async fn start(cfg: HubConfig) -> TestHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let state = HubState::new(cfg);
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(crate::serve(listener, state.clone(), async move {
            let _ = stopped.await;
        }));
        TestHub {
            addr,
            url: format!("http://{addr}/hub"),
            state,
            _stop: stop,
        }
    }

    /// The hub's own counts, from `GET /stats`.
    pub async fn stats(&self) -> StatsSnapshot {
        let url = format!("http://{}/stats", self.addr);
        let r = reqwest::get(&url).await.expect("GET /stats");
        let body = r.text().await.expect("the /stats body");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad /stats JSON: {e}: {body}"))
    }
}
