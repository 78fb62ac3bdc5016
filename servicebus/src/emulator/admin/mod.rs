//! The emulator's administration API: Azure Service Bus entity management (create, get,
//! list and delete queues, topics and subscriptions) over ATOM/XML on its own HTTP port,
//! SAS-checked like CBS. `server` serves it, `atom` writes and reads the bodies.
//! docs/servicebus-admin.md describes it.

pub mod atom;
mod server;

use std::net::SocketAddr;

use tokio::net::TcpListener;

use crate::emulator::EmulatorHandle;

/// The administration endpoint of a running emulator; it stops when dropped.
#[derive(Debug)]
pub struct AdminHandle {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl AdminHandle {
    /// Serve the administration API of `emu` on `listener`.
    pub fn start(emu: &EmulatorHandle, listener: TcpListener) -> std::io::Result<AdminHandle> {
        let addr = listener.local_addr()?;
        let task = tokio::spawn(server::serve(listener, emu.shared().clone()));
        Ok(AdminHandle { addr, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for AdminHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}
