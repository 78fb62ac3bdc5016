//! The network checks every target shares: name resolution, a TCP connect, a TLS handshake;
//! each bounded, each failure with its cause and fix.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use super::step::Step;

/// Resolve `host:port`; the addresses, or the failed step.
pub async fn resolve(
    host: &str,
    port: u16,
    bound: Duration,
) -> Result<(Vec<SocketAddr>, Step), Step> {
    let fix = "check the host name in the URL or connection string, and the DNS";
    match tokio::time::timeout(bound, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(addrs)) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            if addrs.is_empty() {
                return Err(Step::fail("dns", format!("{host} has no address"), fix));
            }
            let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
            let step = Step::ok("dns", format!("{host} is {}", shown.join(", ")));
            Ok((addrs, step))
        }
        Ok(Err(e)) => Err(Step::fail(
            "dns",
            format!("{host} does not resolve: {e}"),
            fix,
        )),
        Err(_) => Err(Step::fail(
            "dns",
            format!("{host} did not resolve within {bound:?}"),
            fix,
        )),
    }
}

/// Connect to the first address that answers.
pub async fn connect(
    addrs: &[SocketAddr],
    bound: Duration,
    what: &str,
) -> Result<(TcpStream, Step), Step> {
    let mut last = String::new();
    for a in addrs {
        match tokio::time::timeout(bound, TcpStream::connect(a)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok((s, Step::ok("tcp", format!("{a} accepts connections"))));
            }
            Ok(Err(e)) => last = format!("{a}: {e}"),
            Err(_) => last = format!("{a}: no answer within {bound:?}"),
        }
    }
    Err(Step::fail(
        "tcp",
        last,
        format!("is {what} listening on that port, and does a firewall let it through?"),
    ))
}

/// The TLS handshake; a certificate failure says which name and hints at `--ca-cert`.
pub async fn tls(
    tcp: TcpStream,
    connector: &TlsConnector,
    host: &str,
    bound: Duration,
) -> Result<(TlsStream<TcpStream>, Step), Step> {
    let Ok(name) = ServerName::try_from(host.to_string()) else {
        return Err(Step::fail(
            "tls",
            format!("{host} is not a TLS server name"),
            "use a host name",
        ));
    };
    match tokio::time::timeout(bound, connector.connect(name, tcp)).await {
        Ok(Ok(s)) => Ok((s, Step::ok("tls", format!("{host}: certificate verified")))),
        Ok(Err(e)) => {
            let text = e.to_string();
            let fix = if text.contains("UnknownIssuer") {
                "the server's certificate is signed by a CA this machine does not trust: give that CA's PEM with --ca-cert FILE".to_string()
            } else if text.contains("NotValidForName") {
                format!("the certificate does not name {host}: connect by a name it carries")
            } else if text.contains("Expired") {
                "the server's certificate has expired (or this machine's clock is wrong)".into()
            } else {
                "is the port a TLS port? (AMQP without TLS is 5672; with TLS 5671; WebSockets 443)"
                    .into()
            };
            Err(Step::fail("tls", format!("{host}: {text}"), fix))
        }
        Err(_) => Err(Step::fail(
            "tls",
            format!("{host}: no handshake within {bound:?}"),
            "is the port a TLS port?",
        )),
    }
}
