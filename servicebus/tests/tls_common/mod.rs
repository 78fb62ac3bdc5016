//! The TLS helpers of the WebSocket test binaries: a throw-away CA and a `localhost` /
//! 127.0.0.1 leaf made with the `openssl` CLI, and an emulator serving AMQP over WebSockets
//! with that leaf beside its AMQP port; the emulator and sender settings those tests share.
// Each test binary uses a part of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use std::time::Duration;

use hubload_servicebus::emulator::{ws, Emulator, EmulatorConfig, EmulatorHandle};
use hubload_servicebus::{ConnectionString, SenderConfig, TransportType};

/// A folder holding `ca.pem`, `leaf.pem` and `leaf.key`; removed when dropped.
pub struct Certs {
    pub dir: tempfile::TempDir,
}

impl Certs {
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("ca.pem")).unwrap()
    }
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().expect("openssl on PATH (.ci/run installs it)");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a `localhost` / 127.0.0.1 leaf it signed.
pub fn make_certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    sh(Command::new("openssl")
        .current_dir(d)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"])
        .args(["-subj", "/CN=hubload throw-away test CA"]));
    sh(Command::new("openssl")
        .current_dir(d)
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
        d.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    sh(Command::new("openssl").current_dir(d).args([
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
    Certs { dir }
}

/// Start the emulator's WebSocket port (127.0.0.1:0) with the leaf of `certs`; a connection
/// string for it naming `localhost` (the certificate's name), `TransportType=AmqpWebSockets`,
/// trusting the throw-away CA.
pub async fn serve_ws(emu: &EmulatorHandle, certs: &Certs) -> ConnectionString {
    let tls = ws::tls_acceptor(&certs.path("leaf.pem"), &certs.path("leaf.key")).unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = emu.serve_websockets(l, tls).unwrap();
    let mut cs = emu.connection_string_parsed();
    cs.host = "localhost".into();
    cs.port = Some(addr.port());
    cs.use_development_emulator = false;
    cs.transport = TransportType::AmqpWebSockets;
    cs.with_ca_pems(vec![certs.ca_pem()])
}

/// An emulator on 127.0.0.1:0 with the default entities.
pub async fn emulator() -> EmulatorHandle {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    Emulator::start(l, EmulatorConfig::default()).await.unwrap()
}

/// Two connections to `cs`, opened within `connect_timeout`; sends settle within 5 s.
pub fn sender_config(cs: ConnectionString, connect_timeout: Duration) -> SenderConfig {
    SenderConfig {
        connection: cs,
        connections: 2,
        connect_timeout,
        send_timeout: Duration::from_secs(5),
        token_ttl: Duration::from_secs(3600),
    }
}
