//! The hub's command line: every flag parsed, defaulted and refused as documented.

use super::*;
use clap::{CommandFactory, Parser};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    hub: HubArgs,
}

#[test]
fn verify_cli() {
    Cli::command().debug_assert();
}

#[test]
fn flags_override_the_file() {
    let dir = std::env::temp_dir().join(format!("hubload-hub-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("faults.toml");
    std::fs::write(&file, "fail_502_every = 5\nlatency_ms = 10\n").unwrap();
    let cli = Cli::try_parse_from([
        "x",
        "--config",
        file.to_str().unwrap(),
        "--latency-ms",
        "3",
        "--stall-window",
        "100-200",
        "--token",
        "tok-secret",
    ])
    .unwrap();
    let cfg = cli.hub.to_config().unwrap();
    assert_eq!(cfg.faults.fail_502_every, Some(5));
    assert_eq!(cfg.faults.latency_ms, 3);
    assert_eq!(cfg.faults.stall_windows, vec![[100, 200]]);
    assert_eq!(cfg.bearer_token.as_deref(), Some("tok-secret"));
    assert!(!format!("{:?}", cli.hub).contains("tok-secret"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn byte_sizes() {
    assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
    assert_eq!(parse_bytes("64K"), Ok(64 << 10));
    assert_eq!(parse_bytes("16m"), Ok(16 << 20));
    assert_eq!(parse_bytes("2G"), Ok(2 << 30));
    assert!(parse_bytes("").is_err());
    assert!(parse_bytes("M").is_err());
    assert!(parse_bytes("-1").is_err());
    assert!(parse_bytes("99999999999G").is_err());
    let cfg = Cli::try_parse_from(["x"]).unwrap().hub.to_config().unwrap();
    let d = HubConfig::default();
    assert_eq!(
        (
            cfg.max_queue_bytes,
            cfg.max_memory_bytes,
            cfg.delivery_concurrency,
            cfg.delivery_pipeline
        ),
        (
            d.max_queue_bytes,
            d.max_memory_bytes,
            d.delivery_concurrency,
            d.delivery_pipeline
        )
    );
    assert_eq!(cfg.delivery_timeout, d.delivery_timeout);
    assert_eq!(cfg.tenant_limit, None);
}

#[test]
fn tenant_limit_flags() {
    let cli = Cli::try_parse_from(["x", "--tenant-rate-limit", "50/s"]).unwrap();
    let limit = cli.hub.to_config().unwrap().tenant_limit.unwrap();
    assert_eq!((limit.rate.to_string(), limit.burst), ("50/s".into(), 50));
    assert_eq!(limit.max_tenants, crate::admission::MAX_TENANTS);
    let cli = Cli::try_parse_from(["x", "--tenant-rate-limit", "2/m", "--tenant-burst", "7"]);
    let limit = cli.unwrap().hub.to_config().unwrap().tenant_limit.unwrap();
    assert_eq!((limit.rate.to_string(), limit.burst), ("2/m".into(), 7));
}

#[test]
fn delivery_workers_flags() {
    assert_eq!(hub(&[]).delivery_limit, None);
    let l = hub(&["--delivery-workers", "4"]).delivery_limit.unwrap();
    assert_eq!(
        (l.workers, l.order, l.queue_size),
        (
            4,
            crate::QueueOrder::Fifo,
            crate::delivery_limit::QUEUE_SIZE
        )
    );
    let l = hub(&[
        "--delivery-workers",
        "2",
        "--delivery-queue",
        "fair",
        "--delivery-queue-size",
        "10",
    ]);
    let l = l.delivery_limit.unwrap();
    assert_eq!(
        (l.workers, l.order, l.queue_size),
        (2, crate::QueueOrder::Fair, 10)
    );
    // An order or a size without the limit means nothing: refused.
    assert!(Cli::try_parse_from(["x", "--delivery-queue", "fair"]).is_err());
    assert!(Cli::try_parse_from(["x", "--delivery-queue-size", "9"]).is_err());
    let err = Cli::try_parse_from(["x", "--delivery-workers", "2", "--delivery-queue", "lifo"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("--delivery-queue") && err.contains("fifo or fair"),
        "{err}"
    );
    let zero = Cli::try_parse_from(["x", "--delivery-workers", "0"]).unwrap();
    let err = zero.hub.to_config().unwrap_err().to_string();
    assert_eq!(err, "--delivery-workers must be at least 1");
}

fn hub(flags: &[&str]) -> HubConfig {
    let argv = std::iter::once("x").chain(flags.iter().copied());
    Cli::try_parse_from(argv).unwrap().hub.to_config().unwrap()
}

#[test]
fn bad_input_names_the_problem() {
    let bad = Cli::try_parse_from(["x", "--reset-ratio", "2"]).unwrap();
    let err = bad.hub.to_config().unwrap_err().to_string();
    assert!(err.contains("reset_ratio"), "{err}");
    assert!(Cli::try_parse_from(["x", "--stall-window", "5"]).is_err());
    assert!(Cli::try_parse_from(["x", "--max-memory", "12X"]).is_err());
    let zero = Cli::try_parse_from(["x", "--delivery-concurrency", "0"]).unwrap();
    let err = zero.hub.to_config().unwrap_err().to_string();
    assert_eq!(err, "--delivery-concurrency must be at least 1");
    let zero = Cli::try_parse_from(["x", "--delivery-pipeline", "0"]).unwrap();
    let err = zero.hub.to_config().unwrap_err().to_string();
    assert_eq!(err, "--delivery-pipeline must be at least 1");
    let zero = Cli::try_parse_from(["x", "--tenant-rate-limit", "5/s", "--tenant-burst", "0"]);
    let err = zero.unwrap().hub.to_config().unwrap_err().to_string();
    assert_eq!(err, "--tenant-burst must be at least 1");
    for bad in ["5", "0/s", "5/week", "many/s"] {
        let err = Cli::try_parse_from(["x", "--tenant-rate-limit", bad])
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--tenant-rate-limit"), "{bad}: {err}");
    }
    // A burst without a limit means nothing: refused.
    assert!(Cli::try_parse_from(["x", "--tenant-burst", "5"]).is_err());
    let missing = Cli::try_parse_from(["x", "--config", "/nonexistent/f.toml"]).unwrap();
    let err = format!("{:#}", missing.hub.to_config().unwrap_err());
    assert!(err.contains("--config /nonexistent/f.toml"), "{err}");
}
