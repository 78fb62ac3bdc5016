//! Ctrl-C and SIGTERM: the first cancels the run (reports are still written, marked partial);
//! a second one exits at once.

use tokio_util::sync::CancellationToken;

/// Cancel `token` on the first SIGINT/SIGTERM; exit with 130 on the second.
pub fn install(token: CancellationToken) {
    tokio::spawn(async move {
        wait_signal().await;
        tracing::warn!(
            "interrupted: finishing in-flight requests and writing reports (again to exit now)"
        );
        eprintln!("hubload: interrupted, writing reports for what was measured (press Ctrl-C again to exit now)");
        token.cancel();
        wait_signal().await;
        std::process::exit(130);
    });
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
