//! `--resolve HOST:PORT:ADDR[,ADDR...]` (curl's syntax) → the hosts pinned to addresses
//! instead of DNS (docs/http-client.md). Depends on nothing else in `config`; the caller
//! turns a [`BadPin`] into the `ConfigError` (same one line).

use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

/// A `--resolve` entry that is wrong: `invalid --resolve `ENTRY`: WHY`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --resolve `{entry}`: {why}")]
pub struct BadPin {
    /// The entry as given, trimmed.
    pub entry: String,
    /// What is wrong with it.
    pub why: String,
}

/// One `--resolve` entry: connections to `host:port` go to these addresses, in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPin {
    /// The host as a URL names it, lower case; an IPv6 literal without its brackets.
    pub host: String,
    /// The port the pin applies to (a URL's explicit or default port).
    pub port: u16,
    /// At least one, no repeats.
    pub addrs: Vec<IpAddr>,
}

/// Every `--resolve` entry, at most one per host and port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolveHosts(pub Vec<HostPin>);

impl ResolveHosts {
    /// The addresses `host:port` is pinned to (`host` as `url::Url::host_str` gives it, IPv6
    /// in brackets or not); `None` when no entry names it, so DNS decides.
    pub fn lookup(&self, host: &str, port: u16) -> Option<&[IpAddr]> {
        let host = bare(host).to_ascii_lowercase();
        self.0
            .iter()
            .find(|p| p.port == port && p.host == host)
            .map(|p| p.addrs.as_slice())
    }

    /// The socket addresses `url`'s host and port (explicit or the scheme's) are pinned to.
    pub fn for_url(&self, url: &url::Url) -> Option<Vec<SocketAddr>> {
        let port = url.port_or_known_default().unwrap_or(80);
        self.lookup(url.host_str()?, port)
            .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
    }
}

/// Shown in the reports' settings as given: `HOST:PORT:ADDR,ADDR`.
impl Serialize for ResolveHosts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|p| {
            let host = match p.host.contains(':') {
                true => format!("[{}]", p.host),
                false => p.host.clone(),
            };
            let addrs: Vec<String> = p
                .addrs
                .iter()
                .map(|a| match a {
                    IpAddr::V4(v4) => v4.to_string(),
                    IpAddr::V6(v6) => format!("[{v6}]"),
                })
                .collect();
            format!("{host}:{}:{}", p.port, addrs.join(","))
        }))
    }
}

/// `s` without the brackets of an IPv6 literal.
fn bare(s: &str) -> &str {
    s.strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(s)
}

/// `HOST:PORT:ADDR[,ADDR...]`; errors name `--resolve` and the entry.
fn pin(raw: &str) -> Result<HostPin, BadPin> {
    let s = raw.trim();
    let bad = |why: &str| BadPin {
        entry: s.to_owned(),
        why: why.to_owned(),
    };
    const SHAPE: &str = "is not HOST:PORT:ADDR[,ADDR...] (IPv6 in brackets)";
    // The host ends at the first colon, or after the `]` of an IPv6 literal.
    let (host, rest) = match s.strip_prefix('[') {
        Some(v6) => {
            let (h, rest) = v6.split_once(']').ok_or_else(|| bad(SHAPE))?;
            (h, rest.strip_prefix(':').ok_or_else(|| bad(SHAPE))?)
        }
        None => s.split_once(':').ok_or_else(|| bad(SHAPE))?,
    };
    let (port, addrs) = rest.split_once(':').ok_or_else(|| bad(SHAPE))?;
    if host.is_empty() || host.starts_with(['+', '-']) {
        return Err(bad(SHAPE));
    }
    if host == "*" {
        return Err(bad("a wildcard host is not supported; name the host"));
    }
    if host.contains(|c: char| c.is_whitespace() || c.is_control() || "/@?#".contains(c)) {
        return Err(bad("the host is not a host name"));
    }
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => return Err(bad("the port is not a number from 1 to 65535")),
    };
    let mut ips: Vec<IpAddr> = Vec::new();
    for a in addrs.split(',') {
        let a = a.trim();
        let ip: IpAddr = bare(a)
            .parse()
            .map_err(|_| bad(&format!("`{a}` is not an IP address (IPv6 in brackets)")))?;
        if ips.contains(&ip) {
            return Err(bad(&format!("names {a} twice")));
        }
        ips.push(ip);
    }
    Ok(HostPin {
        host: host.to_ascii_lowercase(),
        port,
        addrs: ips,
    })
}

/// Every `--resolve` entry (the flag repeats), at most one per host and port.
pub fn resolve(entries: &[String]) -> Result<ResolveHosts, BadPin> {
    let mut pins: Vec<HostPin> = Vec::new();
    for raw in entries {
        let p = pin(raw)?;
        if pins.iter().any(|q| q.host == p.host && q.port == p.port) {
            return Err(BadPin {
                entry: raw.trim().to_owned(),
                why: format!(
                    "pins {}:{} again (give every address in one entry)",
                    p.host, p.port
                ),
            });
        }
        pins.push(p);
    }
    Ok(ResolveHosts(pins))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--resolve` given once per entry.
    fn entries(list: &[&str]) -> Result<ResolveHosts, BadPin> {
        resolve(&list.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn entries_in_curls_syntax() {
        let table: &[(&str, &str, u16, &[&str])] = &[
            (
                "dual.test:8080:127.0.0.1,[::1]",
                "dual.test",
                8080,
                &["127.0.0.1", "::1"],
            ),
            ("Hub.Example:443:[::1]", "hub.example", 443, &["::1"]),
            (
                " h:1:10.0.0.1 , 10.0.0.2 ",
                "h",
                1,
                &["10.0.0.1", "10.0.0.2"],
            ),
            ("h:80:::1", "h", 80, &["::1"]),
            ("[fe80::1]:80:127.0.0.1", "fe80::1", 80, &["127.0.0.1"]),
        ];
        for (raw, host, port, addrs) in table {
            let r = entries(&[raw]).unwrap();
            let want = HostPin {
                host: host.to_string(),
                port: *port,
                addrs: ips(addrs),
            };
            assert_eq!(r.0, vec![want], "{raw}");
        }
        assert_eq!(entries(&[]).unwrap(), ResolveHosts::default());
    }

    #[test]
    fn bad_entries_are_one_line_naming_the_flag() {
        let table: &[(&str, &str)] = &[
            ("dual.test", "is not HOST:PORT:ADDR"),
            ("dual.test:80", "is not HOST:PORT:ADDR"),
            (":80:127.0.0.1", "is not HOST:PORT:ADDR"),
            ("[::1:80:127.0.0.1", "is not HOST:PORT:ADDR"),
            ("-h:80:127.0.0.1", "is not HOST:PORT:ADDR"),
            ("*:80:127.0.0.1", "a wildcard host"),
            ("h/x:80:127.0.0.1", "the host is not"),
            ("h:0:127.0.0.1", "the port is not"),
            ("h:http:127.0.0.1", "the port is not"),
            ("h:70000:127.0.0.1", "the port is not"),
            ("h:80:", "`` is not an IP address"),
            ("h:80:127.0.0.1,", "`` is not an IP address"),
            ("h:80:localhost", "`localhost` is not an IP address"),
            ("h:80:127.0.0.1,127.0.0.1", "names 127.0.0.1 twice"),
        ];
        for (raw, why) in table {
            let e = entries(&[raw]).unwrap_err().to_string();
            let want = format!("invalid --resolve `{}`: {why}", raw.trim());
            assert!(e.starts_with(&want), "`{e}` does not start with `{want}`");
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            entries(&["h:80:127.0.0.1", " H:80:[::1]"]).unwrap_err(),
            BadPin {
                entry: "H:80:[::1]".into(),
                why: "pins h:80 again (give every address in one entry)".into()
            }
        );
        // Another port of the same host is another entry.
        assert_eq!(
            entries(&["h:80:127.0.0.1", "h:81:[::1]"]).unwrap().0.len(),
            2
        );
    }

    #[test]
    fn lookup_matches_host_and_port_as_urls_give_them() {
        let r = entries(&["dual.test:8080:127.0.0.1,[::1]", "[::1]:80:127.0.0.1"]).unwrap();
        let url = url::Url::parse("http://DUAL.test:8080/hub").unwrap();
        assert_eq!(
            r.lookup(url.host_str().unwrap(), 8080),
            Some(&ips(&["127.0.0.1", "::1"])[..])
        );
        assert_eq!(r.lookup("dual.test", 80), None);
        assert_eq!(r.lookup("other.test", 8080), None);
        assert_eq!(r.lookup("[::1]", 80), Some(&ips(&["127.0.0.1"])[..]));
        let at = |u: &str| r.for_url(&url::Url::parse(u).unwrap());
        let both: Vec<SocketAddr> = vec![
            "127.0.0.1:8080".parse().unwrap(),
            "[::1]:8080".parse().unwrap(),
        ];
        assert_eq!(at("http://dual.test:8080/hub"), Some(both));
        assert_eq!(
            at("http://[::1]/hub"),
            Some(vec!["127.0.0.1:80".parse().unwrap()])
        );
        assert_eq!(at("https://dual.test/hub"), None);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!(["dual.test:8080:127.0.0.1,[::1]", "[::1]:80:127.0.0.1"])
        );
    }
}
