//! `hubload-hub --servicebus … --servicebus-ca-cert FILE`: broker mode on the emulator's AMQP
//! over WebSockets port behind a throw-away CA. Without the CA the broker cannot connect,
//! naming the unknown issuer; with it, it connects (the emulator counts its connections); a
//! file without a certificate is one line naming the flag; the proxy flags override the
//! variables.
//!
//! Needs `openssl` on PATH (`.ci/run` installs it).

use clap::Parser;
use hubload_hub::cli::{servicebus_connection, HubArgs};
use hubload_hub::Broker;

use crate::tls_common::{emulator, make_certs, serve_ws};

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    hub: HubArgs,
}

fn hub_args(flags: &[&str]) -> HubArgs {
    Flags::try_parse_from(std::iter::once("hubload-hub").chain(flags.iter().copied()))
        .unwrap()
        .hub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_trusts_the_servicebus_ca_cert() {
    let certs = make_certs();
    let emu = emulator().await;
    // The string as a user has it: no CA in it.
    let cs = serve_ws(&emu, &certs).await.expose();
    let ca = certs.path("ca.pem");
    let ca = ca.to_str().unwrap();
    let no_env = |_: &str| None;

    let without = servicebus_connection(&hub_args(&["--servicebus", &cs]), &cs, &no_env).unwrap();
    let e = Broker::connect(without, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("TLS: invalid peer certificate: UnknownIssuer"),
        "{e}"
    );
    assert_eq!(emu.counts().connections, 0);

    let args = hub_args(&["--servicebus", &cs, "--servicebus-ca-cert", ca]);
    let with = servicebus_connection(&args, &cs, &no_env).unwrap();
    let _broker = Broker::connect(with, None).await.unwrap();
    // The broker's sender pool: two connections, both over WebSockets.
    assert_eq!(emu.counts().connections, 2);

    let key = certs.path("leaf.key");
    let args = hub_args(&[
        "--servicebus",
        &cs,
        "--servicebus-ca-cert",
        key.to_str().unwrap(),
    ]);
    let e = servicebus_connection(&args, &cs, &no_env)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "--servicebus-ca-cert: Service Bus sender: CA certificate: no PEM CERTIFICATE block"
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn the_proxy_flags_override_the_variables() {
    let cs = "Endpoint=sb://ns.example/;SharedAccessKeyName=k;SharedAccessKey=a2V5;TransportType=AmqpWebSockets";
    let env = |k: &str| (k == "HTTPS_PROXY").then(|| "http://env.proxy:3128".to_string());
    let proxy_of = |flags: &[&str]| {
        let mut all = vec!["--servicebus", cs];
        all.extend_from_slice(flags);
        servicebus_connection(&hub_args(&all), cs, &env)
            .unwrap()
            .proxy
            .map(|p| p.shown())
    };
    assert_eq!(proxy_of(&[]), Some("http://env.proxy:3128".into()));
    assert_eq!(
        proxy_of(&["--proxy", "http://flag.proxy:8080"]),
        Some("http://flag.proxy:8080".into())
    );
    assert_eq!(proxy_of(&["--proxy", ""]), None);
    assert_eq!(proxy_of(&["--no-proxy", "ns.example"]), None);
    let e = servicebus_connection(
        &hub_args(&["--servicebus", cs, "--proxy", "socks5://u:pw@p"]),
        cs,
        &env,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "invalid --proxy: only http:// proxies are supported (the scheme is socks5)"
    );
}
