//! A real HTTP proxy for the proxy tests: Debian's tinyproxy, started in the foreground with
//! its own config on a free 127.0.0.1 port, its log read to count the CONNECTs it took. Used
//! by hubload-servicebus's `proxy.rs` and hubload's `servicebus_proxy.rs`.
// Each test binary uses a part of these.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running tinyproxy; killed (by its own pid) when dropped.
pub struct Tinyproxy {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// tinyproxy's path, or `None` after a loud skip line; under `CI` a missing tinyproxy fails.
pub fn tinyproxy_path() -> Option<PathBuf> {
    let found = ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join("tinyproxy"))
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tinyproxy is not installed and CI is set: install it (see .ci/run)"
        );
        eprintln!(
            "!!!!!!!! SKIPPED: tinyproxy is not installed; the proxy tests did not run !!!!!!!!"
        );
    }
    found
}

impl Tinyproxy {
    /// Start one; `basic_auth` makes it require those credentials (`user`, `password`).
    /// `None` when tinyproxy is not installed (outside CI).
    pub fn start(basic_auth: Option<(&str, &str)>) -> Option<Tinyproxy> {
        let bin = tinyproxy_path()?;
        let dir = tempfile::tempdir().unwrap();
        // A free port: bound, read and released; tinyproxy takes it at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.path().join("tinyproxy.log");
        let mut conf = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 100\nLogLevel Connect\nLogFile \"{}\"\n",
            log.display()
        );
        if let Some((u, p)) = basic_auth {
            conf.push_str(&format!("BasicAuth {u} {p}\n"));
        }
        let conf_path = dir.path().join("tinyproxy.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-d")
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let tp = Tinyproxy {
            child,
            port,
            log,
            _dir: dir,
        };
        // Ready when it accepts a connection: 5 s at most.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tinyproxy did not listen within 5 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(tp)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The CONNECT requests for `authority` (`host:port`) in its log so far.
    pub fn connects(&self, authority: &str) -> usize {
        let want = format!(": CONNECT {authority} HTTP/1.1");
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter(|l| l.contains("Request (file descriptor") && l.ends_with(&want))
            .count()
    }

    /// Every CONNECT request in its log so far, whatever the target.
    pub fn all_connects(&self) -> usize {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .filter(|l| l.contains("Request (file descriptor") && l.contains(": CONNECT "))
            .count()
    }

    /// The tunnels it established to `host` so far.
    pub fn established(&self, host: &str) -> usize {
        let want = format!("Established connection to host \"{host}\"");
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter(|l| l.contains(&want)).count()
    }

    /// Wait (5 s at most) until `f` of the log reaches `n`, then return it: the log is written
    /// as tinyproxy gets to it, after the client already saw its answer.
    pub fn wait_for(&self, n: usize, f: impl Fn(&Self) -> usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let got = f(self);
            if got >= n || Instant::now() >= deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
