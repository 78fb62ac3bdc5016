//! A one-worker runtime on a thread of its own, for the embedded pieces that must not queue
//! behind the load generator's tasks: the emulator, and the Service Bus path's sender when it
//! is compared with the embedded hub's (which has a thread of its own for the same reason).

use std::future::Future;

use anyhow::Context;
use tokio::sync::oneshot;

/// Keeps the thread's runtime (and every task spawned on it) alive; dropping it ends both.
#[derive(Debug)]
pub(crate) struct OwnThread {
    done: Option<oneshot::Sender<()>>,
}

impl Drop for OwnThread {
    fn drop(&mut self) {
        if let Some(d) = self.done.take() {
            let _ = d.send(());
        }
    }
}

/// Run `make` on a new thread named `name` with a one-worker runtime: what it returns, and
/// the guard of that runtime. Tasks `make` spawns (connection engines, accept loops) run
/// there until the guard is dropped.
pub(crate) async fn start<T, F, Fut>(name: &str, make: F) -> anyhow::Result<(T, OwnThread)>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let (ready, is_ready) = oneshot::channel::<std::io::Result<T>>();
    let (done, stopped) = oneshot::channel::<()>();
    let thread_name = name.to_string();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(thread_name)
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
                if ready.send(Ok(make().await)).is_ok() {
                    let _ = stopped.await;
                }
            });
        })
        .with_context(|| format!("cannot start the {name} thread"))?;
    let made = is_ready
        .await
        .with_context(|| format!("the {name} thread ended"))?
        .with_context(|| format!("cannot start the {name} runtime"))?;
    Ok((made, OwnThread { done: Some(done) }))
}
