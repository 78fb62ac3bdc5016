//! Drive `HttpPool` with C concurrent tasks for D seconds against one URL and print req/s in
//! wrk's format: the stand-in for `hubload` in `bench/http-vs-wrk.sh` until the CLI lands.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use hubload::result::Outcome;
use hubload::targets::http::{HttpPool, PoolConfig, Response};
use tokio::time::Instant;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Runtime {
    /// One current-thread runtime.
    Current,
    /// One multi-thread runtime with 2 workers.
    Multi2,
    /// One current-thread runtime per core, each with its own pool and C/cores tasks.
    PerCore,
}

/// POST one body to one URL from C concurrent tasks for D seconds.
#[derive(Debug, Parser)]
struct Args {
    /// Target, e.g. http://127.0.0.1:8080/hub?hub.mode=publish&hub.topic=T
    url: String,
    /// Concurrent tasks (and the per-host connection cap).
    #[arg(short, default_value_t = 50)]
    c: usize,
    /// Seconds to run.
    #[arg(short, default_value_t = 10)]
    d: u64,
    /// File holding the request body (JSON).
    #[arg(long)]
    body_file: std::path::PathBuf,
    /// Tokio runtime layout.
    #[arg(long, value_enum, default_value_t = Runtime::Current)]
    runtime: Runtime,
    /// Send one request, print status and body, exit 0 only if it was accepted.
    #[arg(long)]
    check: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let url = url::Url::parse(&args.url).context("url")?;
    if url.scheme() != "http" {
        bail!("url: only http:// is supported, got {}://", url.scheme());
    }
    let host = url.host_str().context("url: no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let addr: SocketAddr = (host, port)
        .to_socket_addrs()
        .context("url: resolve host")?
        .next()
        .context("url: host has no address")?;
    let body = std::fs::read(&args.body_file).context("body-file")?;
    let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let request: Arc<[u8]> = [
        format!(
            "POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
        &body,
    ]
    .concat()
    .into();

    if args.check {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let resp = rt.block_on(async {
            let pool = HttpPool::new(addr, pool_config(1));
            pool.send(&request, Instant::now() + Duration::from_secs(5))
                .await
        })?;
        println!("{} {}", resp.status, String::from_utf8_lossy(&resp.body));
        if resp.outcome() != Outcome::Accepted {
            bail!("not accepted: {:?}", resp.outcome());
        }
        return Ok(());
    }

    let duration = Duration::from_secs(args.d);
    let (ok, errors, elapsed) = match args.runtime {
        Runtime::Current => run_on(current()?, addr, args.c, &request, duration),
        Runtime::Multi2 => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            run_on(rt, addr, args.c, &request, duration)
        }
        Runtime::PerCore => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let threads: Vec<_> = (0..cores)
                .map(|i| {
                    let request = request.clone();
                    // Spread C over the cores: the first C % cores get one more.
                    let c = args.c / cores + usize::from(i < args.c % cores);
                    std::thread::spawn(move || -> Result<(u64, u64, Duration)> {
                        Ok(run_on(current()?, addr, c, &request, duration))
                    })
                })
                .collect();
            let mut total = (0, 0, Duration::ZERO);
            for t in threads {
                let (ok, err, el) = t.join().expect("bench thread panicked")?;
                total = (total.0 + ok, total.1 + err, total.2.max(el));
            }
            total
        }
    };
    let secs = elapsed.as_secs_f64();
    println!(
        "{} requests in {secs:.2}s, {errors} not accepted ({:?}, c={})",
        ok + errors,
        args.runtime,
        args.c
    );
    println!("Requests/sec: {:.2}", (ok + errors) as f64 / secs);
    Ok(())
}

fn current() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn pool_config(max_conns: usize) -> PoolConfig {
    PoolConfig {
        max_conns,
        connect_timeout: Duration::from_secs(2),
        tls_timeout: Duration::from_secs(2),
        pool_timeout: Duration::from_secs(5),
    }
}

/// Run `c` tasks on `rt` until `duration` has passed; returns (accepted, other, elapsed).
fn run_on(
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    c: usize,
    request: &Arc<[u8]>,
    duration: Duration,
) -> (u64, u64, Duration) {
    rt.block_on(async {
        let pool = Arc::new(HttpPool::new(addr, pool_config(c)));
        let start = Instant::now();
        let stop = start + duration;
        let tasks: Vec<_> = (0..c)
            .map(|_| {
                let (pool, request) = (pool.clone(), request.clone());
                tokio::spawn(async move { worker(&pool, &request, stop).await })
            })
            .collect();
        let (mut ok, mut err) = (0, 0);
        for t in tasks {
            let (o, e) = t.await.unwrap_or((0, 0));
            ok += o;
            err += e;
        }
        (ok, err, start.elapsed())
    })
}

async fn worker(pool: &HttpPool, request: &[u8], stop: Instant) -> (u64, u64) {
    let mut resp = Response::default();
    let (mut ok, mut err) = (0u64, 0u64);
    loop {
        let now = Instant::now();
        if now >= stop {
            return (ok, err);
        }
        match pool
            .send_into(request, now, now + Duration::from_secs(5), &mut resp)
            .await
        {
            Ok(()) if resp.outcome() == Outcome::Accepted => ok += 1,
            _ => err += 1,
        }
    }
}
