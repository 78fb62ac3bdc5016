//! The Service Bus path over AMQP over WebSockets: a run with
//! `--sb-connection-string …;TransportType=AmqpWebSockets` and `--ca-cert` against the
//! emulator's WebSocket port (TLS from a throw-away CA) reconciles exactly with the emulator.
//!
//! Needs `openssl` on PATH (`.ci/run` installs it).

use hubload_servicebus::emulator::{ws, EmulatorConfig};
use hubload_servicebus::TransportType;

use crate::util::{count, Scenario};

/// Serve the scenario's emulator over WebSockets too, with a throw-away CA made in the
/// scenario's folder (`ca.pem` there); the connection string naming `localhost` and that port
/// with `TransportType=AmqpWebSockets`. `None` without openssl (outside CI).
pub(crate) async fn serve_ws(sc: &Scenario) -> Option<String> {
    let openssl = crate::util::tool("openssl", "the WebSocket tests")?;
    let d = sc.dir.path();
    crate::https::make_certs(&openssl, d);
    let tls = ws::tls_acceptor(&d.join("leaf.pem"), &d.join("leaf.key")).unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = sc.emulator().serve_websockets(l, tls).unwrap().port();
    let mut cs = sc.emulator().connection_string_parsed();
    cs.host = "localhost".into();
    cs.port = Some(port);
    cs.use_development_emulator = false;
    cs.transport = TransportType::AmqpWebSockets;
    Some(cs.expose())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_websockets_reconciles_with_the_emulator() {
    let sc = Scenario::servicebus(EmulatorConfig::default()).await;
    let Some(cs) = serve_ws(&sc).await else {
        return;
    };
    let port = cs
        .parse::<hubload_servicebus::ConnectionString>()
        .unwrap()
        .port
        .unwrap();
    assert!(cs.ends_with(";TransportType=AmqpWebSockets"), "{cs}");
    let ca = sc.dir.path().join("ca.pem");
    let o = sc
        .run(&[
            "--tenants",
            "5",
            "--sps",
            "2",
            "--users",
            "3",
            "--target",
            "servicebus",
            "--sb-connection-string",
            &cs,
            "--ca-cert",
            ca.to_str().unwrap(),
            "--sb-connections",
            "2",
            "--requests",
            "200",
            "--concurrency",
            "8",
        ])
        .await;
    let r = &o.report;
    assert_eq!(r.target_url, format!("amqps://localhost:{port}"));
    assert_eq!(r.levels[0].derived.samples, 200);
    assert_eq!(count(&r.levels[0], "accepted"), 200);
    let c = sc.emulator_counts();
    assert_eq!((c.accepted, c.connections), (200, 2));
    let sb = r.servicebus.as_ref().unwrap();
    assert_eq!((sb.connections, sb.reconnects), (2, 0));
}
