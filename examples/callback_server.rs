//! Serve one subscriber's callback for D seconds, for benchmarking the delivery path with wrk.
//!
//! Publishes one event through the tracker, writes its body and `X-Hub-Signature` to
//! `<dir>/body` and `<dir>/signature`, prints `http://<addr>/cb/0/0`, and after D seconds
//! prints the fleet's counters (every POST after the first is a duplicate: the full check
//! path, HMAC and body regeneration included).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use hubload::config::Secret;
use hubload::subscriber::{Behaviour, DeliveryTracker, Fleet, FleetConfig};
use hubload::workload::{Distribution, TopicLayout, Workload, WorkloadConfig};
use sha2::Sha256;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().unwrap_or_else(|| "10".into()).parse()?;
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| ".".into()));
    let w = Arc::new(Workload::new(WorkloadConfig {
        tenants: 1,
        sps: 1,
        users: 1,
        channels: vec!["login".into()],
        layout: TopicLayout::PerTenantChannel,
        payload_bytes: None,
        seed: 1,
        distribution: Distribution::Uniform,
    }));
    let secret = "bench-secret";
    let fleet = Fleet::start(
        FleetConfig {
            listen: "127.0.0.1:0".parse()?,
            callback_url: None,
            per_topic: 1,
            topics: vec![(0, w.topics()[0].name.to_string())],
            secret: Some(Secret::new(secret)),
            lease_seconds: 3600,
            behaviour: Behaviour::default(),
            deadlines: Default::default(),
        },
        w.clone(),
        Arc::new(DeliveryTracker::new(1024)),
    )
    .await?;
    fleet.open_level(0);
    let now_us = SystemTime::now().duration_since(UNIX_EPOCH)?.as_micros() as u64;
    let e = w.event_at(0, now_us);
    fleet
        .tracker()
        .note_published(0, 0, std::time::Instant::now());
    fleet.tracker().note_accepted(0, std::time::Instant::now());
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())?;
    mac.update(&e.body);
    let sig = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    std::fs::write(dir.join("body"), &e.body)?;
    std::fs::write(dir.join("signature"), sig)?;
    println!("http://{}/cb/0/0", fleet.local_addr());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let c = fleet.close_level(Duration::ZERO).await.counts;
    println!(
        "received {} delivered {} duplicates {} bad_signature {} unexpected {}",
        c.received, c.delivered, c.duplicates, c.bad_signature, c.unexpected
    );
    Ok(())
}
