//! Starts the embedded reference hub on 127.0.0.1 with an ephemeral port, on its own runtime
//! thread so the hub and the load generator do not share a scheduler.

use std::net::SocketAddr;

use anyhow::Context;
use hubload_hub::{HubConfig, HubState};
use tokio::sync::oneshot;

/// A running embedded hub; dropping it shuts the hub down.
#[derive(Debug)]
pub struct EmbeddedHub {
    /// The hub URL (`http://127.0.0.1:PORT/hub`).
    pub url: url::Url,
    /// Its state, for reading the hub's own counts.
    pub state: HubState,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EmbeddedHub {
    /// Bind 127.0.0.1:0 and serve the hub with `cfg`.
    pub fn start(cfg: HubConfig) -> anyhow::Result<Self> {
        let std_listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .context("cannot start the embedded hub: binding 127.0.0.1")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let state = HubState::new(cfg);
        let (stop, stopped) = oneshot::channel::<()>();
        let serve_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("embedded-hub".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("embedded-hub")
                    .enable_all()
                    .build()
                    .expect("embedded hub runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(std_listener).expect("listener");
                    let shutdown = async move {
                        let _ = stopped.await;
                    };
                    if let Err(e) = hubload_hub::serve(listener, serve_state, shutdown).await {
                        tracing::error!("embedded hub stopped: {e}");
                    }
                });
            })
            .context("cannot start the embedded hub thread")?;
        let url = url::Url::parse(&format!("http://{addr}/hub")).expect("valid URL");
        tracing::info!(%url, "embedded reference hub started");
        Ok(EmbeddedHub {
            url,
            state,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EmbeddedHub {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        // Don't join: graceful shutdown may wait on idle keep-alive connections.
        drop(self.thread.take());
    }
}
