//! HTTP proxies as curl reads them: which proxy a connection to `host:port` goes through
//! (the flag, else `https_proxy`/`HTTPS_PROXY`, else `all_proxy`/`ALL_PROXY`, minus the hosts
//! `NO_PROXY` names), and the bytes of the CONNECT exchange that opens the tunnel.
//!
//! No I/O, like the rest of the codec: the caller reads the environment (through the lookup
//! it passes) and the socket.

mod connect;
mod no_proxy;
mod url;

pub use connect::{connect_request, read_connect_answer, ConnectAnswer, CONNECT_HEAD_LIMIT};
pub use no_proxy::NoProxy;
pub use url::{ProxyUrl, ProxyUrlError};

/// The flag that names a proxy, overriding the variables.
pub const FLAG_PROXY: &str = "--proxy";
/// The flag that names the bypass list, overriding the variables.
pub const FLAG_NO_PROXY: &str = "--no-proxy";

/// The environment variables a proxy is read from, in the order they are tried (lower case
/// first, as curl does).
pub const PROXY_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];
/// The environment variables the bypass list is read from, in order.
pub const NO_PROXY_VARS: [&str; 2] = ["no_proxy", "NO_PROXY"];

/// The proxy settings of a process: the proxy (if any), the hosts that bypass it, and where
/// each came from (for the lines people read; never the credentials).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// The proxy, or `None` for direct connections.
    pub proxy: Option<ProxyUrl>,
    /// Where the proxy came from: `--proxy` or the variable's name.
    pub proxy_from: &'static str,
    /// The hosts that are reached directly even with a proxy.
    pub no_proxy: NoProxy,
    /// Where the bypass list came from: `--no-proxy` or the variable's name (empty: none).
    pub no_proxy_from: &'static str,
}

/// How a connection to one host goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// No proxy is set.
    Direct,
    /// A proxy is set but the bypass list names this host.
    Bypassed,
    /// Through this proxy, with a CONNECT tunnel.
    Via(&'a ProxyUrl),
}

/// A proxy setting that cannot be used: names the flag or variable, never its value (the
/// value may hold a password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {reason}")]
pub struct ProxyConfigError {
    /// `--proxy`, `--no-proxy` or the variable's name.
    pub source_name: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl ProxyConfig {
    /// The settings from the flags (`flag_proxy`, `flag_no_proxy`; each overrides its
    /// variables, and an empty value means none) and the environment, read through `env`.
    /// An empty variable counts as unset, as in curl.
    pub fn resolve(
        flag_proxy: Option<&str>,
        flag_no_proxy: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProxyConfigError> {
        let from_env = |names: &[&'static str]| {
            names
                .iter()
                .find_map(|n| env(n).filter(|v| !v.trim().is_empty()).map(|v| (v, *n)))
        };
        let proxy = match flag_proxy {
            Some(v) => Some((v.to_string(), FLAG_PROXY)),
            None => from_env(&PROXY_VARS),
        };
        let no_proxy = match flag_no_proxy {
            Some(v) => Some((v.to_string(), FLAG_NO_PROXY)),
            None => from_env(&NO_PROXY_VARS),
        };
        let mut cfg = ProxyConfig::default();
        if let Some((v, from)) = proxy.filter(|(v, _)| !v.trim().is_empty()) {
            cfg.proxy = Some(ProxyUrl::parse(v.trim()).map_err(|e| ProxyConfigError {
                source_name: from,
                reason: e.to_string(),
            })?);
            cfg.proxy_from = from;
        }
        if let Some((v, from)) = no_proxy {
            cfg.no_proxy = NoProxy::parse(&v).map_err(|reason| ProxyConfigError {
                source_name: from,
                reason,
            })?;
            cfg.no_proxy_from = from;
        }
        Ok(cfg)
    }

    /// Whether the proxy was named by `--proxy` (not read from a variable).
    pub fn from_flag(&self) -> bool {
        self.proxy.is_some() && self.proxy_from == FLAG_PROXY
    }

    /// How a connection to `host:port` goes (`host` as a URL names it; IPv6 with or without
    /// brackets).
    pub fn route(&self, host: &str, port: u16) -> Route<'_> {
        match &self.proxy {
            None => Route::Direct,
            Some(_) if self.no_proxy.matches(host, port) => Route::Bypassed,
            Some(p) => Route::Via(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_flag_wins_then_lower_case_then_upper_then_all_proxy() {
        let all = [
            ("https_proxy", "http://a:1"),
            ("HTTPS_PROXY", "http://b:2"),
            ("all_proxy", "http://c:3"),
            ("ALL_PROXY", "http://d:4"),
        ];
        let got = |flag: Option<&str>, vars: &[(&str, &str)]| {
            let c = ProxyConfig::resolve(flag, None, env(vars)).unwrap();
            (c.proxy.map(|p| p.shown()), c.proxy_from)
        };
        assert_eq!(
            got(Some("http://f:9"), &all),
            (Some("http://f:9".into()), "--proxy")
        );
        assert_eq!(got(None, &all), (Some("http://a:1".into()), "https_proxy"));
        assert_eq!(
            got(None, &all[1..]),
            (Some("http://b:2".into()), "HTTPS_PROXY")
        );
        assert_eq!(
            got(None, &all[2..]),
            (Some("http://c:3".into()), "all_proxy")
        );
        assert_eq!(
            got(None, &all[3..]),
            (Some("http://d:4".into()), "ALL_PROXY")
        );
        // An empty variable is unset; an empty flag means no proxy whatever the variables say.
        assert_eq!(
            got(None, &[("https_proxy", " "), ("HTTPS_PROXY", "http://b:2")]),
            (Some("http://b:2".into()), "HTTPS_PROXY")
        );
        assert_eq!(got(Some(""), &all), (None, ""));
        // http_proxy is for http:// URLs: not read here.
        assert_eq!(got(None, &[("http_proxy", "http://e:5")]), (None, ""));
    }

    #[test]
    fn no_proxy_decides_the_route_and_the_flag_overrides_it() {
        let vars = [("HTTPS_PROXY", "http://p:3128"), ("NO_PROXY", "localhost")];
        let c = ProxyConfig::resolve(None, None, env(&vars)).unwrap();
        assert_eq!(c.no_proxy_from, "NO_PROXY");
        assert_eq!(c.route("localhost", 443), Route::Bypassed);
        assert!(
            matches!(c.route("example.com", 443), Route::Via(p) if p.shown() == "http://p:3128")
        );
        let c = ProxyConfig::resolve(None, Some(""), env(&vars)).unwrap();
        assert_eq!(c.no_proxy_from, "--no-proxy");
        assert!(matches!(c.route("localhost", 443), Route::Via(_)));
        let c = ProxyConfig::resolve(None, None, env(&[])).unwrap();
        assert_eq!(c.route("localhost", 443), Route::Direct);
    }

    #[test]
    fn a_bad_setting_names_its_source_never_its_value() {
        let vars = [("HTTPS_PROXY", "socks5://user:s3cret@p:1080")];
        let e = ProxyConfig::resolve(None, None, env(&vars)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "HTTPS_PROXY: only http:// proxies are supported (the scheme is socks5)"
        );
        assert!(!e.to_string().contains("s3cret"));
        let e = ProxyConfig::resolve(None, Some("10.0.0.0/33"), env(&[])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--no-proxy: entry 1 has a prefix length past the address's bits"
        );
    }
}
