//! Starts the embedded Service Bus emulator on 127.0.0.1 with an ephemeral port, on its own
//! runtime thread, so the broker does not queue behind the load generator's tasks (the
//! embedded hub has its own thread for the same reason).
//!
//! On the generator's runtime, the broker path's sends, their AMQP engines and every
//! emulator task shared two workers, while the hub path's sends ran on the hub's thread:
//! the broker path queued behind more tasks than the hub path's broker stage did: at 32 in
//! flight its p95 was several times its median, and once its median came out above the
//! hub's (docs/hub-servicebus.md).

use std::ops::Deref;

use anyhow::Context;
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use tokio::sync::oneshot;

/// A running embedded emulator; [`EmbeddedEmulator::shutdown`] (or dropping it) stops it and
/// its thread.
#[derive(Debug)]
pub(crate) struct EmbeddedEmulator {
    handle: Option<EmulatorHandle>,
    /// Ends the thread's runtime (after the emulator has shut down, or on drop).
    done: Option<oneshot::Sender<()>>,
}

impl EmbeddedEmulator {
    /// Bind 127.0.0.1:0 and serve the emulator with the default configuration on a thread of
    /// its own.
    pub(crate) async fn start() -> anyhow::Result<Self> {
        let (ready, is_ready) = oneshot::channel::<std::io::Result<EmulatorHandle>>();
        let (done, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("embedded-emulator".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("embedded-emulator")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let started = async {
                        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                        Emulator::start(listener, EmulatorConfig::default()).await
                    }
                    .await;
                    let ok = started.is_ok();
                    if ready.send(started).is_ok() && ok {
                        // The emulator's tasks run here until its handle is done with.
                        let _ = stopped.await;
                    }
                });
            })
            .context("cannot start the embedded Service Bus emulator's thread")?;
        let handle = is_ready
            .await
            .context("the embedded Service Bus emulator's thread ended")?
            .context("cannot start the embedded Service Bus emulator")?;
        tracing::info!(addr = %handle.addr(), "embedded Service Bus emulator started");
        Ok(EmbeddedEmulator {
            handle: Some(handle),
            done: Some(done),
        })
    }

    /// Stop accepting, drop every connection, wait for its tasks, then end its thread.
    pub(crate) async fn shutdown(mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown().await;
        }
    }
}

impl Deref for EmbeddedEmulator {
    type Target = EmulatorHandle;

    fn deref(&self) -> &EmulatorHandle {
        self.handle
            .as_ref()
            .expect("an embedded emulator is only shut down by value")
    }
}

impl Drop for EmbeddedEmulator {
    fn drop(&mut self) {
        if let Some(d) = self.done.take() {
            let _ = d.send(());
        }
    }
}
