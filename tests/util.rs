//! Shared test helpers: a real reference hub on 127.0.0.1:0, running hubload in-process or as
//! the built binary, and reading the hub's own counts.

use std::path::Path;
use std::process::{Command, Output};

use hubload::cli::Cli;
use hubload::run::RunOutcome;
use hubload_hub::{FaultConfig, HubConfig, HubState, StatsSnapshot};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// In-process runs take this in turn, so a timing-sensitive run never shares the 2 cores
/// with another load.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A reference hub serving on 127.0.0.1 with an ephemeral port, stopped on drop.
pub struct TestHub {
    pub url: String,
    /// The hub's state, for changing faults between runs.
    #[allow(dead_code)]
    pub state: HubState,
    _stop: oneshot::Sender<()>,
}

impl TestHub {
    /// Start a hub with `faults` on the current runtime.
    pub async fn start(faults: FaultConfig) -> TestHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = HubState::new(HubConfig {
            faults,
            ..HubConfig::default()
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let s = state.clone();
        tokio::spawn(async move {
            hubload_hub::serve(listener, s, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        TestHub {
            url: format!("http://{addr}/hub"),
            state,
            _stop: stop,
        }
    }

    /// The hub's own counts, read over HTTP from `GET /stats` as any client would.
    pub async fn stats(&self) -> StatsSnapshot {
        let base = self.url.trim_end_matches("/hub");
        let body = http_get(&format!("{base}/stats")).await;
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad /stats JSON: {e}: {body}"))
    }
}

/// A minimal HTTP/1.1 GET over a fresh connection (test-only; no client crates needed).
pub async fn http_get(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let u = url::Url::parse(url).unwrap();
    let mut s = tokio::net::TcpStream::connect((u.host_str().unwrap(), u.port().unwrap()))
        .await
        .unwrap();
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        u.path()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8(buf).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").unwrap();
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
}

/// Run hubload in-process with these arguments (plus `--quiet`), one run at a time.
pub async fn run(args: &[&str]) -> RunOutcome {
    let _turn = SERIAL.lock().await;
    let mut all = vec!["hubload", "--quiet"];
    all.extend_from_slice(args);
    let cli = <Cli as clap::Parser>::try_parse_from(&all).unwrap();
    let cfg = hubload::config::resolve(&cli.run).unwrap();
    hubload::run::run_load(&cfg, CancellationToken::new())
        .await
        .unwrap()
}

/// Run the built `hubload` binary.
pub fn bin(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hubload"))
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// A hubload count by class name from a report row.
pub fn count(row: &hubload::report::LevelReport, class: &str) -> u64 {
    *row.counts
        .get(class)
        .unwrap_or_else(|| panic!("no class {class}"))
}
