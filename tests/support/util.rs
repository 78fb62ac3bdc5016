//! Shared test helpers: a real reference hub on 127.0.0.1:0, the one in-process runner (and
//! the built binary), the scenario helper (hub, Service Bus emulator, flags, reports, and the
//! servers' own counts).

use std::path::Path;
use std::process::{Command, Output};

use hubload::report::document::Report;
use hubload::RunOutcome;
use hubload_hub::{FaultConfig, HubConfig, StatsSnapshot};
use hubload_servicebus::emulator::{Emulator, EmulatorConfig, EmulatorCounts, EmulatorHandle};
use tokio_util::sync::CancellationToken;

/// Every in-process run, and every other timing-sensitive test, takes this in turn, so a
/// measured run never shares the 2 cores with another load.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The one test hub: the hub crate's own ([`hubload_hub::testing::TestHub`]).
pub use hubload_hub::testing::TestHub;

/// A hub with `faults` (and otherwise the defaults).
pub async fn hub_with(faults: FaultConfig) -> TestHub {
    TestHub::start(HubConfig {
        faults,
        ..HubConfig::default()
    })
    .await
}

/// Run hubload in-process as `hubload --quiet ARGS` would (profile merging included), one run
/// at a time (behind [`SERIAL`]), keeping the error.
pub async fn try_run(args: &[&str]) -> anyhow::Result<RunOutcome> {
    let _turn = SERIAL.lock().await;
    let mut all = vec!["hubload", "--quiet"];
    all.extend_from_slice(args);
    let cli = hubload::app::parse_args(all.iter().map(Into::into).collect())
        .unwrap_or_else(|e| panic!("bad test arguments {args:?}: {e:?}"));
    // No proxy variables: a proxy set for the machine must not reroute loopback connections.
    hubload::run_with_proxy_env(&cli.run, CancellationToken::new(), &|_| None).await
}

/// [`try_run`], which must succeed.
pub async fn run(args: &[&str]) -> RunOutcome {
    try_run(args)
        .await
        .unwrap_or_else(|e| panic!("run {args:?} failed: {e:#}"))
}

/// Flags written on one line, split at white space (for flags whose values have none).
pub fn line(flags: &str) -> Vec<&str> {
    flags.split_whitespace().collect()
}

/// The small workload many tests load: 2 tenants × 2 SPs × 3 users (8 topics).
pub const SMALL_WORKLOAD: &str = "--tenants 2 --sps 2 --users 3";

/// [`SMALL_WORKLOAD`] in two levels: 60 requests at concurrency 2, then 60 at 4.
pub const SMALL_RUN: &str = "--tenants 2 --sps 2 --users 3 --concurrency 2,4 --requests 60";

/// One integration scenario: a reference hub with given faults (and, for a Service Bus target,
/// the emulator), a report directory, runs with given flags against them, and what each side
/// counted.
pub struct Scenario {
    /// The hub the runs load.
    pub hub: TestHub,
    /// Reports (`--out`) and any other files of the scenario.
    pub dir: tempfile::TempDir,
    /// The Service Bus emulator ([`Scenario::servicebus`]), given to runs by its connection
    /// string; `None` for a hub-only scenario.
    emulator: Option<EmulatorHandle>,
}

impl Scenario {
    /// A hub with `faults` and an empty report directory.
    pub async fn start(faults: FaultConfig) -> Scenario {
        Scenario::start_with(HubConfig {
            faults,
            ..HubConfig::default()
        })
        .await
    }

    /// A hub with the whole `cfg` (queues, delivery concurrency, …) and an empty report directory.
    pub async fn start_with(cfg: HubConfig) -> Scenario {
        Scenario {
            hub: TestHub::start(cfg).await,
            dir: tempfile::tempdir().unwrap(),
            emulator: None,
        }
    }

    /// A default hub and a Service Bus emulator with `cfg` on 127.0.0.1:0; runs name the
    /// target themselves (`--target servicebus`, or `websub,servicebus` for side by side).
    pub async fn servicebus(cfg: EmulatorConfig) -> Scenario {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Scenario {
            emulator: Some(Emulator::start(listener, cfg).await.unwrap()),
            ..Scenario::start_with(HubConfig::default()).await
        }
    }

    /// The emulator of a [`Scenario::servicebus`].
    pub fn emulator(&self) -> &EmulatorHandle {
        self.emulator
            .as_ref()
            .expect("a Service Bus scenario (Scenario::servicebus)")
    }

    /// The emulator's connection string (with its development key).
    pub fn connection_string(&self) -> String {
        self.emulator().connection_string()
    }

    /// The emulator's own counts.
    pub fn emulator_counts(&self) -> EmulatorCounts {
        self.emulator().counts()
    }

    /// The flags that aim a run at this scenario: `--hub-url HUB`, `--sb-connection-string CS`
    /// for a Service Bus scenario, and `--out DIR`. A server flag that `flags` already give is
    /// left to them (a wrong key, say).
    fn args<'a>(&'a self, target: &'a [String], flags: &[&'a str]) -> Vec<&'a str> {
        let mut all: Vec<&str> = Vec::new();
        for pair in target.chunks(2) {
            if !flags.contains(&pair[0].as_str()) {
                all.extend(pair.iter().map(String::as_str));
            }
        }
        all.extend_from_slice(flags);
        all
    }

    /// `--hub-url`, the emulator's connection string and `--out`, as flag/value pairs.
    fn target_args(&self) -> Vec<String> {
        let mut a = vec!["--hub-url".into(), self.hub.url.clone()];
        if let Some(emu) = &self.emulator {
            a.extend(["--sb-connection-string".into(), emu.connection_string()]);
        }
        a.extend(["--out".into(), self.dir.path().display().to_string()]);
        a
    }

    /// Run hubload in-process against the scenario's servers, reports into the directory, plus
    /// `flags`.
    pub async fn run(&self, flags: &[&str]) -> RunOutcome {
        let target = self.target_args();
        run(&self.args(&target, flags)).await
    }

    /// [`Scenario::run`] with its flags on one line ([`line`]), then the hub's counts once no
    /// delivery is pending ([`settled`]).
    pub async fn run_settled(&self, flags: &str) -> (RunOutcome, StatsSnapshot) {
        let o = self.run(&line(flags)).await;
        (o, settled(&self.hub).await)
    }

    /// [`Scenario::run`], keeping the error.
    pub async fn try_run(&self, flags: &[&str]) -> anyhow::Result<RunOutcome> {
        let target = self.target_args();
        try_run(&self.args(&target, flags)).await
    }

    /// Run hubload in-process with only `--out DIR` and `flags`: the embedded hub and
    /// emulator, not the scenario's servers (which must then see nothing).
    pub async fn run_embedded(&self, flags: &[&str]) -> RunOutcome {
        let out = ["--out".to_string(), self.dir.path().display().to_string()];
        run(&self.args(&out, flags)).await
    }

    /// Run the built binary as [`Scenario::run`] would, in the directory, behind [`SERIAL`].
    pub async fn bin(&self, flags: &[&str]) -> Output {
        let _turn = SERIAL.lock().await;
        let target = self.target_args();
        let args: Vec<String> = self
            .args(&target, flags)
            .into_iter()
            .map(String::from)
            .collect();
        let cwd = self.dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            bin(&args, &cwd)
        })
        .await
        .unwrap()
    }

    /// `summary.json` as written (in `sub` of the directory, "" for the top).
    pub fn summary(&self, sub: &str) -> Report {
        read_summary(&self.dir.path().join(sub))
    }

    /// The hub's own counts.
    pub async fn hub_stats(&self) -> StatsSnapshot {
        self.hub.stats().await
    }
}

/// The hub's stats once no delivery is pending (bounded wait).
pub async fn settled(hub: &TestHub) -> StatsSnapshot {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let s = hub.stats().await;
        if s.distribution.pending == 0 || tokio::time::Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `dir/summary.json`, parsed, with what the files beside it hold (topic-names.jsonl,
/// topics.jsonl, fairness.jsonl, subscribers.jsonl).
pub fn read_summary(dir: &Path) -> Report {
    hubload::report::json::read_whole(dir).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()))
}

/// Attempts per topic index over every level of `r`, a summary read back (its levels' rows
/// come from topics.jsonl; a run's own report keeps only a few rows per level in memory).
pub fn attempts_by_topic(r: &Report) -> Vec<u64> {
    let mut out = vec![0; r.topics.len()];
    for l in &r.levels {
        for (i, n) in l.topic_attempts().into_iter().enumerate() {
            out[i] += n;
        }
    }
    out
}

/// The complete lines of the JSON-lines file `name` in `dir`, parsed (none when it is
/// missing; a last line without its newline is left out, as hubload's readers do).
pub fn jsonl_lines(dir: &Path, name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |i| &text[..i]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The data rows of a JTL file (header checked and skipped).
pub fn jtl_rows(path: &Path) -> Vec<csv::StringRecord> {
    let mut rd = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    assert_eq!(
        rd.headers().unwrap().iter().collect::<Vec<_>>().join(","),
        hubload::report::jtl::JTL_HEADER
    );
    rd.records().map(Result::unwrap).collect()
}

/// Run the built `hubload` binary.
pub fn bin(args: &[&str], cwd: &Path) -> Output {
    bin_env(args, cwd, &[])
}

/// [`bin`] with extra environment variables (the shard contract's, for instance).
pub fn bin_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    hubload_command()
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The built `hubload` binary without the machine's proxy variables (a test that wants a
/// proxy sets its own): they would reroute the tests' loopback connections.
pub fn hubload_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hubload"));
    for v in hubload_http1::proxy::PROXY_VARS
        .iter()
        .chain(&hubload_http1::proxy::NO_PROXY_VARS)
    {
        c.env_remove(v);
    }
    c
}

/// Start the built `hubload` binary in `cwd` (stdout discarded, stderr to `stderr`), for tests
/// that signal or kill it mid-run.
pub fn bin_child(args: &[&str], cwd: &Path, stderr: std::process::Stdio) -> std::process::Child {
    hubload_command()
        .args(args)
        .current_dir(cwd)
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// A hubload count by class name from a report row.
pub fn count(row: &hubload::report::model::LevelReport, class: &str) -> u64 {
    let class =
        hubload::result::Class::from_name(class).unwrap_or_else(|| panic!("no class {class}"));
    row.stats.counts.get(class)
}

/// The process exited with `code`; its stderr is the failure message otherwise.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A port free a moment ago on 127.0.0.1, for a server whose address must be known up front
/// (one started as another process, or named in a URL before it binds).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A port on 127.0.0.1 that refuses every connection for as long as the returned socket
/// lives: bound, so no other test's server can take it (as one can take a port merely free a
/// moment ago), and never listening, so a connect is answered with a reset.
pub fn refusing_port() -> (socket2::Socket, u16) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let port = s.local_addr().unwrap().as_socket().unwrap().port();
    (s, port)
}

/// `Some(path)` of an installed tool, or `None` after a skip line naming `tests` (a failure
/// when `CI` is set, where `.ci/run` must have installed it).
pub fn tool(name: &str, tests: &str) -> Option<std::path::PathBuf> {
    let found = ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is not installed and CI is set: install it (see .ci/run)"
        );
        eprintln!("!!!!!!!! SKIPPED: {name} is not installed; {tests} did not run !!!!!!!!");
    }
    found
}

/// Nothing went wrong with a level's deliveries: no loss, duplicate, redelivery, bad signature,
/// body mismatch, unexpected or late delivery. `at` names the level (or run) in the message.
pub fn assert_no_delivery_fault(c: &hubload::subscriber::DeliveryCounts, at: &str) {
    assert_eq!(
        (
            c.lost,
            c.duplicates,
            c.redeliveries,
            c.bad_signature,
            c.body_mismatch,
            c.unexpected,
            c.late
        ),
        (0, 0, 0, 0, 0, 0, 0),
        "{at}: {c:?}"
    );
}
