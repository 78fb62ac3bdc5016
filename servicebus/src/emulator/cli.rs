//! `servicebus-emulator` command: flags, start the emulator, print its connection string,
//! serve `/counts` over HTTP and log the counts until Ctrl-C.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use rand::RngCore as _;

use super::tier::{Tier, DEFAULT_MU_BYTES_PER_SEC, MESSAGING_UNITS};
use super::{config_file, Emulator, EmulatorConfig, EmulatorHandle, DEV_KEY_NAME};

/// The tiers `--tier` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TierArg {
    /// No budget: only --throttle-every / --throttle-ratio throttle.
    None,
    /// 1,000 credits per second per namespace (message op 1, management op 10).
    Standard,
    /// --messaging-units × --mu-bytes-per-sec bytes per second.
    Premium,
}

/// Run a local Azure Service Bus stand-in (AMQP 1.0 with CBS) for tests and demos.
#[derive(Debug, Clone, clap::Args)]
pub struct EmulatorArgs {
    /// Address to listen on (plain AMQP).
    #[arg(long, default_value = "127.0.0.1:5672")]
    pub listen: SocketAddr,
    /// SAS key name tokens must carry.
    #[arg(long, default_value = DEV_KEY_NAME)]
    pub key_name: String,
    /// SAS key tokens must be signed with. Without it a random key is made for this run and
    /// printed in the connection string; a key you give is never printed.
    #[arg(long, env = "HUBLOAD_SB_EMULATOR_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Rights of the key's policy, comma-separated: send, listen, manage (manage needs the
    /// other two). A link or request needing a right it lacks is refused as Azure refuses it.
    #[arg(long, default_value = "send,listen,manage")]
    pub key_rights: String,
    /// Reject every Nth transfer with com.microsoft:server-busy.
    #[arg(long)]
    pub throttle_every: Option<u64>,
    /// Reject this fraction (0-1) of transfers with com.microsoft:server-busy.
    #[arg(long, default_value_t = 0.0)]
    pub throttle_ratio: f64,
    /// Delay before each settlement, e.g. 5ms.
    #[arg(long, default_value = "0ms", value_parser = humantime::parse_duration)]
    pub latency: Duration,
    /// Seed of the throttling choice (--throttle-ratio).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Serve the counts as JSON at http://ADDR/counts.
    #[arg(long)]
    pub counts_addr: Option<SocketAddr>,
    /// Serve the administration API (entity management, ATOM/XML over HTTP, SAS-checked) on
    /// this address (docs/servicebus-admin.md).
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<SocketAddr>,
    /// Log the counts every this many seconds while they change (0 = never).
    #[arg(long, default_value_t = 10)]
    pub log_every: u64,
    /// Declare entities from a Config.json in the official emulator's shape
    /// (UserConfig → Namespaces → Queues / Topics → Subscriptions).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Refuse undeclared entities with amqp:not-found (otherwise they are made on first use).
    #[arg(long)]
    pub strict: bool,
    /// Throttle like an Azure tier.
    #[arg(long, value_enum, default_value = "none")]
    pub tier: TierArg,
    /// Premium messaging units (1, 2, 4, 8 or 16).
    #[arg(long, default_value_t = 1)]
    pub messaging_units: u32,
    /// Bytes per second one Premium messaging unit carries (Microsoft publishes no figure;
    /// the default, 4 MiB/s, is this emulator's assumption).
    #[arg(long, default_value_t = DEFAULT_MU_BYTES_PER_SEC)]
    pub mu_bytes_per_sec: u64,
    /// Concurrent receive requests allowed per entity, a topic's subscriptions summed
    /// (Azure's quota: 5000); a receiver link holds one while it has credit outstanding.
    #[arg(long, default_value_t = super::namespace::MAX_RECEIVERS_PER_ENTITY)]
    pub max_receive_requests: usize,
    /// A new connection that has not finished its AMQP header, SASL and `open` within this
    /// is closed.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub handshake_timeout: std::time::Duration,
    /// Connections open at once; one more is closed as soon as it is accepted.
    #[arg(long, default_value_t = super::MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// An open connection that sends no frame for this long is closed; half of it is
    /// advertised as the AMQP `idle-time-out`, so clients send heartbeats before it.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// Also serve AMQP over WebSockets (TLS, path /$servicebus/websocket, subprotocol
    /// AMQPWSB10) on this address; needs --tls-cert and --tls-key.
    #[arg(long, value_name = "ADDR", requires_all = ["tls_cert", "tls_key"])]
    pub ws_listen: Option<SocketAddr>,
    /// PEM certificate chain (leaf first) of the WebSocket port.
    #[arg(long, value_name = "FILE", requires = "ws_listen")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "ws_listen")]
    pub tls_key: Option<std::path::PathBuf>,
}

/// The tier the flags ask for, or a one-line error naming the flag.
pub fn tier_of(args: &EmulatorArgs) -> anyhow::Result<Tier> {
    Ok(match args.tier {
        TierArg::None => Tier::Unlimited,
        TierArg::Standard => Tier::Standard,
        TierArg::Premium => {
            if !MESSAGING_UNITS.contains(&args.messaging_units) {
                anyhow::bail!("--messaging-units must be 1, 2, 4, 8 or 16 (Azure's Premium sizes)");
            }
            if args.mu_bytes_per_sec == 0 {
                anyhow::bail!("--mu-bytes-per-sec must be above 0");
            }
            Tier::Premium {
                units: args.messaging_units,
                bytes_per_unit: args.mu_bytes_per_sec,
            }
        }
    })
}

/// The entities a `--config` file declares, or a one-line error naming the file and the JSON
/// path.
pub fn declared_of(args: &EmulatorArgs) -> anyhow::Result<Option<config_file::Declared>> {
    let Some(path) = &args.config else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--config {}: cannot read", path.display()))?;
    config_file::parse(&text)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("--config {}: {e}", path.display()))
}

/// Run until Ctrl-C, then print the final counts as JSON on stdout.
pub async fn run(args: EmulatorArgs) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&args.throttle_ratio) {
        anyhow::bail!("--throttle-ratio must be between 0 and 1");
    }
    if args.handshake_timeout.is_zero() || args.max_connections == 0 {
        anyhow::bail!("--handshake-timeout and --max-connections must be above zero");
    }
    if args.idle_timeout < std::time::Duration::from_millis(2) {
        anyhow::bail!("--idle-timeout must be at least 2ms");
    }
    if args.max_receive_requests == 0 {
        anyhow::bail!("--max-receive-requests must be at least 1");
    }
    let tier = tier_of(&args)?;
    let key_rights = super::rights::Rights::parse(&args.key_rights)
        .map_err(|e| anyhow::anyhow!("--key-rights {e}"))?;
    let declared = declared_of(&args)?;
    let (key, generated) = match args.key {
        Some(k) if !k.is_empty() => (k, false),
        Some(_) => anyhow::bail!("--key is empty"),
        None => {
            let mut bytes = [0u8; 32];
            rand::thread_rng().fill_bytes(&mut bytes);
            (
                base64::engine::general_purpose::STANDARD.encode(bytes),
                true,
            )
        }
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let cfg = EmulatorConfig {
        key_name: args.key_name,
        key,
        key_rights,
        throttle_every: args.throttle_every,
        throttle_ratio: args.throttle_ratio,
        latency: args.latency,
        seed: args.seed,
        declared,
        strict: args.strict,
        tier,
        receive_limit: args.max_receive_requests,
        handshake_timeout: args.handshake_timeout,
        max_connections: args.max_connections,
        idle_timeout: args.idle_timeout,
        ..EmulatorConfig::default()
    };
    let emu = Arc::new(Emulator::start(listener, cfg).await?);
    let cs = emu.connection_string_parsed();
    if generated {
        println!("connection string (a dev key made for this run):");
        println!("{}", cs.expose());
    } else {
        println!("connection string (your key is not printed):");
        println!("{}", cs.redacted());
    }
    if let (Some(addr), Some(cert), Some(key)) = (args.ws_listen, &args.tls_cert, &args.tls_key) {
        let tls = super::ws::tls_acceptor(cert, key)
            .map_err(|e| anyhow::anyhow!("--tls-cert/--tls-key: {e}"))?;
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("--ws-listen {addr}: cannot listen"))?;
        let a = emu.serve_websockets(l, tls)?;
        println!("AMQP over WebSockets at wss://{a}/$servicebus/websocket (add ;TransportType=AmqpWebSockets and that port)");
    }
    let admin = match args.admin_listen {
        Some(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("--admin-listen {addr}: cannot listen"))?;
            let a = super::admin::AdminHandle::start(&emu, l)?;
            println!("administration API at http://{}", a.addr());
            Some(a)
        }
        None => None,
    };
    let http = match args.counts_addr {
        Some(addr) => Some(serve_counts(addr, emu.clone()).await?),
        None => None,
    };
    let logger = tokio::spawn(log_counts(emu.clone(), args.log_every));
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    logger.abort();
    drop(admin);
    if let Some(h) = http {
        h.abort();
    }
    println!("{}", serde_json::to_string_pretty(&emu.counts())?);
    if let Ok(emu) = Arc::try_unwrap(emu) {
        emu.shutdown().await;
    }
    Ok(())
}

async fn serve_counts(
    addr: SocketAddr,
    emu: Arc<EmulatorHandle>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for /counts"))?;
    println!("counts at http://{}/counts", listener.local_addr()?);
    let app = axum::Router::new().route(
        "/counts",
        axum::routing::get(move || {
            let emu = emu.clone();
            async move { axum::Json(emu.counts()) }
        }),
    );
    Ok(tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    }))
}

async fn log_counts(emu: Arc<EmulatorHandle>, every: u64) {
    if every == 0 {
        return;
    }
    let mut last = emu.counts();
    loop {
        tokio::time::sleep(Duration::from_secs(every)).await;
        let now = emu.counts();
        if now != last {
            tracing::info!(
                accepted = now.accepted,
                throttled = now.throttled,
                unauthorized = now.unauthorized,
                cbs_ok = now.cbs_ok,
                cbs_denied = now.cbs_denied,
                connections = now.connections,
                "emulator counts"
            );
            last = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: EmulatorArgs,
    }

    #[test]
    fn verify_cli() {
        Wrapper::command().debug_assert();
        let w = Wrapper::try_parse_from([
            "x",
            "--listen",
            "127.0.0.1:0",
            "--throttle-every",
            "10",
            "--latency",
            "5ms",
        ])
        .unwrap();
        assert_eq!(w.args.throttle_every, Some(10));
        assert_eq!(w.args.latency, Duration::from_millis(5));
        assert!(Wrapper::try_parse_from(["x", "--latency", "soon"]).is_err());
    }
}
