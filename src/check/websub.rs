//! The WebSub checks: the proxy's route when one is set, DNS (or the `--resolve` pin), TCP
//! (to the proxy, then its tunnel, when the hub is reached through one) and TLS to the hub
//! URL's host, then whether an HTTP server answers there: one `GET` of the hub URL
//! (harmless: a hub acts only on a POST), whose status line is shown.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use hubload_http1::proxy::Route;

use super::step::{Step, Steps};
use super::{net, proxy};
use crate::config::RunConfig;
use crate::targets::http::Tls;

/// Bound on the answer's bytes read to find its status line.
const HEAD_LIMIT: usize = 8 * 1024;

/// This kind's steps, appended to `steps`; each network step bounded by `bound`.
pub(crate) async fn check(cfg: &RunConfig, bound: Duration, steps: &mut Steps) {
    let Some(url) = &cfg.target.hub_url else {
        steps.push(Step::ok(
            "websub",
            "no --hub-url: the run starts its own hub",
        ));
        return;
    };
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url.port_or_known_default().unwrap_or(80);
    let route = cfg.proxy.route_for_hub(url);
    let direct_when = "https:// hubs (--proxy moves http:// hubs too)";
    if let Some(step) = proxy::route_step(&cfg.proxy.0, route, &host, port, direct_when) {
        steps.push(step);
    }
    let via = match route {
        Route::Via(p) => Some(p),
        Route::Direct | Route::Bypassed => None,
    };
    // `--resolve` pins the host as it does for the run's connections: no DNS then.
    let pinned = cfg.target.resolve.lookup(&host, port);
    let addrs = match (pinned, via) {
        (Some(_), Some(_)) => {
            let fix = "drop --resolve, or list the hub in --no-proxy";
            let why = "--resolve pins the hub's address, but the proxy resolves it";
            return give_up(steps, Step::fail("dns", why, fix));
        }
        (Some(ips), None) => {
            let shown: Vec<String> = ips.iter().map(ToString::to_string).collect();
            steps.push(Step::ok(
                "dns",
                format!(
                    "{host}:{port} is pinned to {} by --resolve",
                    shown.join(", ")
                ),
            ));
            ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()
        }
        (None, _) => {
            let (name, at) = via.map_or((host.as_str(), port), |p| (p.host(), p.port()));
            match net::resolve(name, at, bound).await {
                Ok((a, s)) => {
                    steps.push(s);
                    a
                }
                Err(s) => return give_up(steps, s),
            }
        }
    };
    let what = if via.is_some() {
        "the proxy"
    } else {
        "the hub"
    };
    let mut tcp = match net::connect(&addrs, bound, what).await {
        Ok((t, s)) => {
            steps.push(s);
            t
        }
        Err(s) => return give_up(steps, s),
    };
    if let Some(p) = via {
        match proxy::tunnel(tcp, p, &host, port, bound).await {
            Ok((s, step)) => {
                steps.push(step);
                tcp = s;
            }
            Err(step) => return give_up(steps, step),
        }
    }
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    if url.scheme() != "https" {
        let step = answer(tcp, &host, &path, bound).await;
        steps.push(step);
        return;
    }
    let tls = if cfg.tls.insecure {
        Tls::insecure(&host)
    } else {
        Tls::webpki_plus(&host, &cfg.tls.ca_pems)
    };
    let tls = match tls {
        Ok(t) => t,
        Err(e) => {
            return give_up(
                steps,
                Step::fail("tls", e.to_string(), "check the --ca-cert files"),
            )
        }
    };
    match net::tls(tcp, &tls.connector, &host, bound).await {
        Ok((stream, s)) => {
            steps.push(s);
            steps.push(answer(stream, &host, &path, bound).await);
        }
        Err(s) => give_up(steps, s),
    }
}

fn give_up(steps: &mut Steps, failed: Step) {
    steps.push(failed);
    steps.skip("hub");
}

/// One GET of the hub URL; an HTTP status line of any code is an answer.
async fn answer(
    mut s: impl AsyncRead + AsyncWrite + Unpin,
    host: &str,
    path: &str,
    bound: Duration,
) -> Step {
    let fix = "is the URL the hub's, and is an HTTP server listening there?";
    let exchange = async {
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: hubload-check\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await?;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        while !buf.contains(&b'\n') && buf.len() < HEAD_LIMIT {
            let n = s.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(buf)
    };
    match tokio::time::timeout(bound, exchange).await {
        Ok(Ok(buf)) => {
            let line = String::from_utf8_lossy(&buf);
            let line = line.lines().next().unwrap_or("").trim();
            if line.starts_with("HTTP/1.") && line.len() >= 12 {
                Step::ok("hub", format!("answers GET {path}: {line}"))
            } else if line.is_empty() {
                Step::fail("hub", "the connection closed without an answer", fix)
            } else {
                Step::fail("hub", "the answer is not HTTP/1.x", fix)
            }
        }
        Ok(Err(e)) => Step::fail("hub", format!("GET {path}: {e}"), fix),
        Err(_) => Step::fail("hub", format!("no answer within {bound:?}"), fix),
    }
}
