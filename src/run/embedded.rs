//! Starts the embedded reference hub on 127.0.0.1 with an ephemeral port, on its own runtime
//! thread so the hub and the load generator do not share a scheduler; in broker mode
//! (`--hub-servicebus`) connected to Service Bus before it serves.

use std::net::SocketAddr;

use anyhow::Context;
use hubload_hub::{HubConfig, HubState};
use hubload_servicebus::ConnectionString;
use tokio::sync::oneshot;

/// The namespace the embedded hub runs on in broker mode: its connection string and the
/// `http://host:port` of its administration API (entities are then created and deleted as
/// on Azure; `None` leaves them to the emulator, which makes them on first use).
#[derive(Debug, Clone)]
pub struct HubBroker {
    pub cs: ConnectionString,
    pub admin: Option<String>,
}

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
    /// Bind 127.0.0.1:0 and serve the hub with `cfg`; with `broker`, in broker mode on that
    /// namespace (the hub connects first: a failure is this call's error).
    pub fn start(cfg: HubConfig, broker: Option<HubBroker>) -> anyhow::Result<Self> {
        let std_listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .context("cannot start the embedded hub: binding 127.0.0.1")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let state = HubState::new(cfg);
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel::<Result<(), String>>();
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
                    // The broker's tasks (sender, receive loops) live on the hub's runtime.
                    if let Some(b) = broker {
                        match hubload_hub::Broker::connect(b.cs, b.admin.as_deref()).await {
                            Ok(b) => {
                                serve_state.set_broker(b);
                            }
                            Err(e) => {
                                let _ = ready.send(Err(e.to_string()));
                                return;
                            }
                        }
                    }
                    let _ = ready.send(Ok(()));
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
        match is_ready.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("the embedded hub's broker: {e}"),
            Err(_) => anyhow::bail!("the embedded hub did not start within 30 s"),
        }
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
