//! Bench helper: `sends serve` runs the emulator; `sends load` measures sends/s against it.
//!
//! Used by bench/servicebus-sends.sh. `load` is bounded by `--duration` and prints one JSON
//! line: sends, accepted, other outcomes, sends/s, p50/p99 latency (µs), reconnects.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use hubload_servicebus::emulator::cli::{run, EmulatorArgs};
use hubload_servicebus::{ConnectionString, OutgoingMessage, SbSender, SendOutcome, SenderConfig};

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the emulator until Ctrl-C.
    Serve(Box<EmulatorArgs>),
    /// Send for a bounded time and print the figures as JSON.
    Load(LoadArgs),
}

#[derive(Debug, clap::Args)]
struct LoadArgs {
    /// Connection string (the emulator's).
    #[arg(long, env = "HUBLOAD_SB_CONNECTION_STRING", hide_env_values = true)]
    connection_string: String,
    /// Pooled connections.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Concurrent sending tasks.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// How long to send, e.g. 5s (at most 60s).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Topics to spread the sends over.
    #[arg(long, default_value_t = 4)]
    topics: usize,
    /// Body size, bytes.
    #[arg(long, default_value_t = 543)]
    body_size: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::Serve(args) => run(*args).await,
        Cmd::Load(args) => load(args).await,
    }
}

async fn load(args: LoadArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.duration <= Duration::from_secs(60),
        "--duration is at most 60s"
    );
    let cs: ConnectionString = args.connection_string.parse()?;
    let sender = Arc::new(
        SbSender::connect(SenderConfig {
            connection: cs,
            connections: args.connections,
            connect_timeout: Duration::from_secs(5),
            send_timeout: Duration::from_secs(5),
            token_ttl: Duration::from_secs(3600),
        })
        .await?,
    );
    let topics: Arc<Vec<String>> =
        Arc::new((0..args.topics).map(|i| format!("bench-{i}")).collect());
    let body: Arc<Vec<u8>> = Arc::new(vec![b'x'; args.body_size]);
    let start = Instant::now();
    let deadline = start + args.duration;
    let mut tasks = Vec::new();
    for w in 0..args.concurrency {
        let (sender, topics, body) = (sender.clone(), topics.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat_us = Vec::new();
            let mut outcomes = BTreeMap::<String, u64>::new();
            let mut i = 0usize;
            while Instant::now() < deadline {
                let id = format!("w{w}-{i}");
                let topic = &topics[(w + i) % topics.len()];
                let t0 = Instant::now();
                let r = sender
                    .send(
                        topic,
                        OutgoingMessage {
                            body: &body,
                            message_id: &id,
                            content_type: "application/json",
                            properties: &[("tenant", "t")],
                        },
                    )
                    .await;
                lat_us.push(t0.elapsed().as_micros() as u64);
                let key = match r.outcome {
                    SendOutcome::Accepted => "accepted".to_string(),
                    o => format!("{o:?}"),
                };
                *outcomes.entry(key).or_default() += 1;
                i += 1;
            }
            (lat_us, outcomes)
        }));
    }
    let mut lat = Vec::new();
    let mut outcomes = BTreeMap::<String, u64>::new();
    for t in tasks {
        let (l, o) = t.await?;
        lat.extend(l);
        for (k, v) in o {
            *outcomes.entry(k).or_default() += v;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    let line = serde_json::json!({
        "connections": args.connections,
        "concurrency": args.concurrency,
        "sends": lat.len(),
        "outcomes": outcomes,
        "seconds": (elapsed * 100.0).round() / 100.0,
        "sends_per_s": (lat.len() as f64 / elapsed).round(),
        "p50_us": pct(0.50),
        "p99_us": pct(0.99),
        "reconnects": sender.reconnects(),
    });
    println!("{line}");
    if let Ok(s) = Arc::try_unwrap(sender) {
        s.close().await;
    }
    Ok(())
}
