//! The proxy checks: which way a connection goes (through the proxy, bypassed by
//! `NO_PROXY`, or direct), and the CONNECT tunnel as its own step, bounded, with the
//! proxy's refusal named and its fix.

use std::time::Duration;

use hubload_http1::proxy::{ProxyConfig, ProxyUrl, Route};
use hubload_servicebus::transport::tunnel;
use tokio::net::TcpStream;

use super::step::Step;

/// The line saying how a connection to `host:port` goes; `None` when no proxy is set.
/// `direct_when` says which connections the proxy does move, for a `Direct` route.
pub fn route_step(
    cfg: &ProxyConfig,
    route: Route<'_>,
    host: &str,
    port: u16,
    direct_when: &str,
) -> Option<Step> {
    let proxy = cfg.proxy.as_ref()?;
    let detail = match route {
        Route::Via(p) => format!(
            "{host}:{port} goes through {} (from {}{})",
            p.shown(),
            cfg.proxy_from,
            if p.authorization().is_some() {
                ", with credentials"
            } else {
                ""
            }
        ),
        Route::Bypassed => format!(
            "{host}:{port} bypasses {} ({} names it)",
            proxy.shown(),
            cfg.no_proxy_from
        ),
        Route::Direct => format!(
            "{host}:{port} is reached directly: {} applies to {direct_when}",
            cfg.proxy_from
        ),
    };
    Some(Step::ok("proxy", detail))
}

/// `CONNECT host:port` on `tcp` (a connection to `proxy`), within `bound`.
pub async fn tunnel(
    tcp: TcpStream,
    proxy: &ProxyUrl,
    host: &str,
    port: u16,
    bound: Duration,
) -> Result<(TcpStream, Step), Step> {
    match tokio::time::timeout(bound, tunnel::open(tcp, proxy, host, port)).await {
        Ok(Ok(s)) => Ok((
            s,
            Step::ok(
                "connect",
                format!("{} opened a tunnel to {host}:{port}", proxy.shown()),
            ),
        )),
        Ok(Err(e)) => {
            let fix = if e.reason.contains("(proxy_407)") {
                "give the proxy's credentials in its URL: http://user:password@host:port (--proxy or HTTPS_PROXY)".to_string()
            } else if e.reason.contains("(proxy_403)") {
                format!("ask for CONNECT to {host}:{port} to be allowed, or list the host in NO_PROXY if it is reachable directly")
            } else {
                "is the proxy an HTTP proxy that allows CONNECT?".to_string()
            };
            Err(Step::fail("connect", e.reason, fix))
        }
        Err(_) => Err(Step::fail(
            "connect",
            format!(
                "{} did not answer CONNECT {host}:{port} within {bound:?}",
                proxy.shown()
            ),
            "is the proxy an HTTP proxy that allows CONNECT?",
        )),
    }
}
