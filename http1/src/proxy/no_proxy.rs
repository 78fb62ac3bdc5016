//! [`NoProxy`]: the hosts reached directly even when a proxy is set, read as curl reads
//! `NO_PROXY`, plus an optional port per entry. Host names are compared as text, never resolved.

use std::net::IpAddr;

/// The bypass list: entries separated by commas (spaces around them ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoProxy(Vec<Entry>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `*`: every host.
    All,
    /// `example.com`, `.example.com` or `*.example.com`: the name and every name under it.
    Domain { name: String, port: Option<u16> },
    /// `10.1.2.3`, `::1`, `[::1]:443`, `10.1.2.3:443`: that address.
    Ip { ip: IpAddr, port: Option<u16> },
    /// `10.0.0.0/8`, `fd00::/8`: every address in the block.
    Cidr { net: IpAddr, bits: u8 },
}

impl NoProxy {
    /// Parse a list; an error names the entry by its number (1-based), never quotes it.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut entries = Vec::new();
        for (i, raw) in list.split(',').map(str::trim).enumerate() {
            if raw.is_empty() {
                continue;
            }
            let n = i + 1;
            entries.push(entry(raw).map_err(|why| format!("entry {n} {why}"))?);
        }
        Ok(NoProxy(entries))
    }

    /// Whether no entry is given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `host:port` bypasses the proxy (`host` as a URL names it: an IPv6 address with
    /// or without brackets, any case, a trailing dot ignored).
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let ip: Option<IpAddr> = host.parse().ok();
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        self.0.iter().any(|e| match e {
            Entry::All => true,
            Entry::Domain { name, port } => {
                port_ok(port)
                    && (host == *name
                        || (host.len() > name.len()
                            && host.ends_with(name.as_str())
                            && host.as_bytes()[host.len() - name.len() - 1] == b'.'))
            }
            Entry::Ip { ip: want, port } => port_ok(port) && ip == Some(*want),
            Entry::Cidr { net, bits } => ip.is_some_and(|ip| in_block(ip, *net, *bits)),
        })
    }
}

fn entry(raw: &str) -> Result<Entry, &'static str> {
    if raw == "*" {
        return Ok(Entry::All);
    }
    if let Some((addr, bits)) = raw.split_once('/') {
        let net: IpAddr = addr.parse().map_err(|_| "is not an address/prefix")?;
        let bits: u8 = bits.parse().map_err(|_| "has a bad prefix length")?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        if bits > max {
            return Err("has a prefix length past the address's bits");
        }
        return Ok(Entry::Cidr { net, bits });
    }
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Ok(Entry::Ip { ip, port: None });
    }
    let port = |p: &str| p.parse::<u16>().map_err(|_| "has a bad port");
    if let Some(rest) = raw.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').ok_or("has an unclosed [")?;
        let ip: IpAddr = addr.parse().map_err(|_| "is not an IPv6 address in [ ]")?;
        let port = match after {
            "" => None,
            p => Some(port(p.strip_prefix(':').ok_or("has text after ]")?)?),
        };
        return Ok(Entry::Ip { ip, port });
    }
    let (name, port) = match raw.rsplit_once(':') {
        Some((name, p)) => (name, Some(port(p)?)),
        None => (raw, None),
    };
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(Entry::Ip { ip, port });
    }
    let name = name
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if name.is_empty() || name.contains(['*', ' ', '/', '@']) {
        return Err("is not a host name");
    }
    Ok(Entry::Domain { name, port })
}

fn in_block(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_as_curl_does_plus_ports() {
        let list = NoProxy::parse(
            "localhost, .corp.example, *.svc.cluster.local,10.0.0.0/8, 192.168.1.7, [::1]:4443, fd00::/8, api.example:443",
        )
        .unwrap();
        for (host, port, want) in [
            ("localhost", 443, true),
            ("LOCALHOST.", 443, true),
            ("notlocalhost", 443, false),
            ("corp.example", 443, true),
            ("a.b.corp.example", 443, true),
            ("xcorp.example", 443, false),
            ("sb.ns.svc.cluster.local", 443, true),
            ("svc.cluster.local", 443, true),
            ("10.200.3.4", 443, true),
            ("11.0.0.1", 443, false),
            ("192.168.1.7", 5671, true),
            ("192.168.1.8", 5671, false),
            ("[::1]", 4443, true),
            ("::1", 4443, true),
            ("::1", 443, false),
            ("[fd12::1]", 443, true),
            ("api.example", 443, true),
            ("api.example", 8443, false),
            ("sub.api.example", 443, true),
            ("myns.servicebus.windows.net", 443, false),
        ] {
            assert_eq!(list.matches(host, port), want, "{host}:{port}");
        }
    }

    #[test]
    fn a_star_matches_everything_and_an_empty_list_nothing() {
        assert!(NoProxy::parse("*").unwrap().matches("any.where", 1));
        assert!(NoProxy::parse("a.b, *").unwrap().matches("x", 1));
        let none = NoProxy::parse(" , ").unwrap();
        assert!(none.is_empty() && !none.matches("localhost", 443));
    }

    #[test]
    fn bad_entries_are_named_by_number() {
        for (list, want) in [
            (
                "a.b, 10.0.0.0/40",
                "entry 2 has a prefix length past the address's bits",
            ),
            ("host:port", "entry 1 has a bad port"),
            ("[::1", "entry 1 has an unclosed ["),
            ("x,,a*b", "entry 3 is not a host name"),
            ("300.1.1.1/8", "entry 1 is not an address/prefix"),
        ] {
            assert_eq!(NoProxy::parse(list), Err(want.to_string()), "{list}");
        }
    }
}
