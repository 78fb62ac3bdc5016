//! The reference hub serving TLS on 127.0.0.1:0 with a leaf from a throw-away CA (`ca.pem`
//! in its directory), for the tests that reach an `https://` hub.

use std::path::PathBuf;

use hubload_hub::{HubConfig, HubState};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running TLS hub; [`stop`](Self::stop) ends it.
pub struct TlsHub {
    /// The hub's own state: its counts are the oracle.
    pub state: HubState,
    /// Its port on 127.0.0.1 (the certificate names `localhost` and 127.0.0.1).
    pub port: u16,
    /// Holds `ca.pem`, `leaf.pem` and `leaf.key`.
    pub dir: tempfile::TempDir,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl TlsHub {
    /// Start one; `None` when openssl is not installed (outside CI, after a loud skip line).
    pub async fn start() -> Option<TlsHub> {
        let openssl = crate::util::tool("openssl", "the TLS hub tests")?;
        let dir = tempfile::tempdir().unwrap();
        crate::https::make_certs(&openssl, dir.path());
        let tls =
            hubload_hub::tls::acceptor(&dir.path().join("leaf.pem"), &dir.path().join("leaf.key"))
                .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = HubState::new(HubConfig::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(hubload_hub::serve_tls(
            listener,
            state.clone(),
            tls,
            async {
                let _ = stopped.await;
            },
        ));
        Some(TlsHub {
            state,
            port,
            dir,
            stop,
            task,
        })
    }

    /// `https://localhost:PORT/hub`.
    pub fn url(&self) -> String {
        format!("https://localhost:{}/hub", self.port)
    }

    /// The CA that signed the hub's certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Stop serving and wait for the server to end.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}
