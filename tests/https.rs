//! https through a TLS terminator we did not write: nginx, with a certificate from a
//! throw-away CA made here with the `openssl` CLI, proxying to the reference hub. Counts
//! reconcile exactly with the hub's `/stats`; without `--ca-cert` every attempt is a
//! `tls_error` naming the unknown issuer; `--insecure` works and the reports say so.
//!
//! Needs `nginx` and `openssl` on PATH (`.ci/run` installs them). Without them the tests fail
//! when `CI` is set, and otherwise print a loud skip line and pass.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hubload_hub::FaultConfig;

use crate::util::{bin, count, free_port, hub_with, line, run, tool, TestHub};

/// A one-process nginx terminating TLS on 127.0.0.1 and proxying to `upstream`; killed on drop.
pub(crate) struct Nginx {
    pub(crate) child: Child,
    pub(crate) port: u16,
    pub(crate) dir: PathBuf,
}

impl Nginx {
    /// nginx with `conf` written to `dir/nginx.conf` (its prefix), once it listens on every one
    /// of `ports` (bounded wait); `port` is the first.
    pub(crate) fn spawn(nginx: &Path, dir: &Path, conf: &str, ports: &[u16]) -> Nginx {
        let d = dir.display();
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(nginx)
            .args(["-p", &d.to_string(), "-c", &format!("{d}/nginx.conf")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let n = Nginx {
            child,
            port: ports[0],
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in ports {
            while std::net::TcpStream::connect(("127.0.0.1", *port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "nginx did not listen: {}",
                    std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        n
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// Requests nginx logged (one access-log line each).
    fn requests(&self) -> usize {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a `localhost` / 127.0.0.1 leaf it signed, as PEM files in `dir`.
pub(crate) fn make_certs(openssl: &Path, dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    sh(Command::new(openssl)
        .current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"])
        .args(["-subj", "/CN=hubload throw-away test CA"]));
    sh(Command::new(openssl)
        .current_dir(dir)
        .arg("req")
        .args(ec)
        .args([
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/CN=localhost",
        ]));
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    sh(Command::new(openssl).current_dir(dir).args([
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]));
}

/// Start nginx in `dir` (which holds the certificates) in front of `upstream` (`host:port`).
fn start_nginx(nginx: &Path, dir: &Path, upstream: &str) -> Nginx {
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log {d}/access.log;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
           fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
           upstream hub {{ server {upstream}; keepalive 64; }}\n\
           server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {d}/leaf.pem;\n    ssl_certificate_key {d}/leaf.key;\n\
             keepalive_requests 100000;\n\
             location / {{ proxy_pass http://hub; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n  }}\n}}\n"
    );
    Nginx::spawn(nginx, dir, &conf, &[port])
}

/// The hub, nginx in front of it, and the CA file; `None` when a tool is missing.
async fn setup() -> Option<(TestHub, Nginx, tempfile::TempDir)> {
    let openssl = tool("openssl", "the https tests")?;
    let nginx = tool("nginx", "the https tests")?;
    let dir = tempfile::tempdir().unwrap();
    make_certs(&openssl, dir.path());
    let hub = hub_with(FaultConfig::default()).await;
    let upstream = hub
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/hub")
        .to_string();
    let n = start_nginx(&nginx, dir.path(), &upstream);
    Some((hub, n, dir))
}

const LOAD: &str = "--tenants 5 --sps 2 --users 3 --concurrency 4,16 --requests 300";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_ca_cert_reconciles_exactly_with_the_hub() {
    let Some((hub, nginx, dir)) = setup().await else {
        return;
    };
    let out = dir.path().join("out");
    let url = format!("https://localhost:{}/hub", nginx.port);
    let ca = dir.path().join("ca.pem");
    let mut args = vec![
        "--hub-url",
        &url,
        "--ca-cert",
        ca.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(line(LOAD));
    let o = run(&args).await;
    let r = &o.report;
    let total = r.total.as_ref().unwrap();
    let s = hub.stats().await;
    assert_eq!(total.derived.samples, 600);
    assert_eq!(count(total, "accepted"), 600);
    assert_eq!(count(total, "tls_error"), 0);
    assert_eq!(s.publish.accepted, 600);
    assert_eq!(s.publish.total(), 600);
    let reg = r.registration.as_ref().unwrap();
    // 5 tenants × 4 channels.
    assert_eq!((reg.result.topics, reg.accepted), (20, 20));
    assert_eq!(s.register.accepted, 20);
    // nginx logged every request that reached it: registrations plus publishes.
    assert_eq!(nginx.requests(), 620);
    // `localhost` is also ::1, where nothing listens: only 127.0.0.1 is used.
    let host = r.hub.as_ref().unwrap();
    assert_eq!(host.addresses.len(), 1, "{:?}", host.addresses);
    assert_eq!(
        host.addresses[0].address,
        format!("127.0.0.1:{}", nginx.port)
    );
    assert_eq!(host.addresses[0].attempts, 600);
    let hs = host.tls_handshakes.as_ref().unwrap();
    // One handshake per connection: at most 4 + 16 for the two levels.
    assert!(hs.count >= 2 && hs.count <= 20, "{hs:?}");
    assert!(!host.tls_insecure);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_without_the_ca_is_tls_error_unknown_issuer_for_every_attempt() {
    let Some((hub, nginx, dir)) = setup().await else {
        return;
    };
    let out = dir.path().join("out");
    let url = format!("https://localhost:{}/hub", nginx.port);
    let mut args = vec!["--hub-url", &url, "--out", out.to_str().unwrap()];
    args.extend(line(LOAD));
    let o = bin(&args, dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("tls_error.unknown_issuer") && stderr.contains("--ca-cert"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let reg = &summary["registration"];
    assert_eq!(reg["topics"], 20);
    assert_eq!(reg["counts"]["tls_error"], 20);
    assert_eq!(reg["reasons"]["tls_error.unknown_issuer"], 20);
    assert_eq!(reg["reasons"].as_object().unwrap().len(), 1);
    // No request got through the handshake.
    assert_eq!(nginx.requests(), 0);
    assert_eq!(hub.stats().await.register.total(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_insecure_works_and_the_reports_say_so() {
    let Some((hub, nginx, dir)) = setup().await else {
        return;
    };
    let out = dir.path().join("out");
    let url = format!("https://127.0.0.1:{}/hub", nginx.port);
    let mut args = vec![
        "--hub-url",
        &url,
        "--insecure",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(line(LOAD));
    let o = bin(&args, dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stderr.matches("--insecure").count(), 1, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["config"]["tls"]["insecure"], true);
    assert_eq!(summary["hub"]["tls_insecure"], true);
    assert_eq!(summary["total"]["stats"]["counts"]["accepted"], 600);
    assert_eq!(hub.stats().await.publish.accepted, 600);
    assert_eq!(nginx.requests(), 620);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("NOT verified (--insecure)"));
}
