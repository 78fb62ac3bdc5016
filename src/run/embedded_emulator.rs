//! Starts the embedded Service Bus emulator on 127.0.0.1 with an ephemeral port, on its own runtime
//! thread, so the broker does not queue behind the load generator's tasks (the embedded hub has its
//! own thread for the same reason).
//!
//! On the generator's runtime, the broker path's sends, their AMQP engines and every emulator task
//! shared two workers, while the hub path's sends ran on the hub's thread: the broker path queued
//! behind more tasks than the hub path's broker stage did: at 32 in flight its p95 was several
//! times its median, and once its median came out above the hub's (docs/hub-servicebus.md).

use std::ops::Deref;

use anyhow::Context;
use hubload_servicebus::admin::AdminHandle;
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorHandle};

use super::own_thread::{self, OwnThread};

/// A running embedded emulator; [`EmbeddedEmulator::shutdown`] (or dropping it) stops it and
/// its thread.
#[derive(Debug)]
pub(crate) struct EmbeddedEmulator {
    handle: Option<EmulatorHandle>,
    /// Its administration API (Azure's entity management), which the embedded hub's broker
    /// mode creates and deletes topics and subscriptions through.
    admin: Option<AdminHandle>,
    /// Dropped after the handle: the emulator's tasks run on it.
    _thread: OwnThread,
}

impl EmbeddedEmulator {
    /// Bind 127.0.0.1:0 and serve the emulator with the default configuration, and its
    /// administration API on another 127.0.0.1:0, on a thread of their own.
    pub(crate) async fn start() -> anyhow::Result<Self> {
        let (started, thread) = own_thread::start("embedded-emulator", || async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let handle = Emulator::start(listener, EmulatorConfig::default()).await?;
            let admin = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let admin = AdminHandle::start(&handle, admin)?;
            std::io::Result::Ok((handle, admin))
        })
        .await?;
        let (handle, admin) = started.context("cannot start the embedded Service Bus emulator")?;
        tracing::info!(addr = %handle.addr(), admin = %admin.addr(), "embedded Service Bus emulator started");
        Ok(EmbeddedEmulator {
            handle: Some(handle),
            admin: Some(admin),
            _thread: thread,
        })
    }

    /// `http://127.0.0.1:PORT` of its administration API.
    pub(crate) fn admin_url(&self) -> Option<String> {
        self.admin.as_ref().map(|a| format!("http://{}", a.addr()))
    }

    /// Stop accepting, drop every connection, wait for its tasks, then end its thread.
    pub(crate) async fn shutdown(mut self) {
        self.admin = None;
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
