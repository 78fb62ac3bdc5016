//! [`ProxyUrl`]: `[http://][user[:password]@]host[:port][/]`, as curl takes it; the
//! credentials kept only as the `Proxy-Authorization: Basic` value, never shown.

use base64::Engine;

/// The port of a proxy URL without one: 1080, as curl.
pub const DEFAULT_PORT: u16 = 1080;

/// An HTTP proxy. `Debug` and [`Self::shown`] leave the credentials out.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyUrl {
    host: String,
    port: u16,
    /// `Basic <base64 of user:password>`, when the URL carries a user.
    authorization: Option<String>,
}

/// Why a proxy URL was refused. Never quotes the URL (it may hold a password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyUrlError {
    /// Not a URL at all.
    #[error("not a proxy URL (expected http://[user:password@]host[:port])")]
    Malformed,
    /// A scheme other than `http`.
    #[error("only http:// proxies are supported (the scheme is {0})")]
    Scheme(String),
    /// No host.
    #[error("the proxy URL has no host")]
    NoHost,
    /// A path, query or fragment that a proxy URL cannot have.
    #[error("the proxy URL has a path, query or fragment (expected http://host:port)")]
    Path,
}

impl ProxyUrl {
    /// Parse a proxy URL; without a scheme it is `http://`.
    pub fn parse(s: &str) -> Result<Self, ProxyUrlError> {
        let owned;
        let s = if s.contains("://") {
            s
        } else {
            owned = format!("http://{s}");
            &owned
        };
        let url = ::url::Url::parse(s).map_err(|_| ProxyUrlError::Malformed)?;
        if url.scheme() != "http" {
            return Err(ProxyUrlError::Scheme(url.scheme().to_string()));
        }
        let host = match url.host() {
            Some(::url::Host::Ipv6(a)) => a.to_string(),
            Some(h) => h.to_string(),
            None => return Err(ProxyUrlError::NoHost),
        };
        if (url.path() != "/" && !url.path().is_empty())
            || url.query().is_some()
            || url.fragment().is_some()
        {
            return Err(ProxyUrlError::Path);
        }
        // `Url` drops port 80 as the scheme's default: put it back only when it was written.
        let port = match url.port() {
            Some(p) => p,
            None if has_port(s) => 80,
            None => DEFAULT_PORT,
        };
        let authorization = (!url.username().is_empty()).then(|| {
            let decode = |t: &str| percent_encoding::percent_decode_str(t).collect::<Vec<u8>>();
            let mut pair = decode(url.username());
            pair.push(b':');
            pair.extend(decode(url.password().unwrap_or("")));
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        Ok(ProxyUrl {
            host,
            port,
            authorization,
        })
    }

    /// The proxy's host (an IPv6 address without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `Proxy-Authorization` value, when the URL carries credentials. Never log it.
    pub fn authorization(&self) -> Option<&str> {
        self.authorization.as_deref()
    }

    /// `http://host:port`, credentials left out: the form every line people read shows.
    pub fn shown(&self) -> String {
        if self.host.contains(':') {
            format!("http://[{}]:{}", self.host, self.port)
        } else {
            format!("http://{}:{}", self.host, self.port)
        }
    }
}

/// Whether the authority of `s` (`scheme://[userinfo@]host[:port]...`) writes a port.
fn has_port(s: &str) -> bool {
    let rest = &s[s.find("://").map_or(0, |i| i + 3)..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let after_v6 = host_port.rsplit(']').next().unwrap_or("");
    after_v6.contains(':')
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_curl_takes() {
        for (input, shown, auth) in [
            ("http://127.0.0.1:3128", "http://127.0.0.1:3128", None),
            ("http://proxy.corp:3128/", "http://proxy.corp:3128", None),
            ("proxy.corp:8080", "http://proxy.corp:8080", None),
            ("http://proxy.corp", "http://proxy.corp:1080", None),
            ("http://proxy.corp:80", "http://proxy.corp:80", None),
            ("http://[::1]:3128", "http://[::1]:3128", None),
            (
                "http://user:pass@p:3128",
                "http://p:3128",
                // base64("user:pass")
                Some("Basic dXNlcjpwYXNz"),
            ),
            (
                // Percent-encoded credentials are decoded first: "a@b:p:w".
                "http://a%40b:p%3Aw@p:3128",
                "http://p:3128",
                Some("Basic YUBiOnA6dw=="),
            ),
            (
                "http://user@p:3128",
                "http://p:3128",
                Some("Basic dXNlcjo="),
            ),
        ] {
            let p = ProxyUrl::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(
                (p.shown().as_str(), p.authorization()),
                (shown, auth),
                "{input}"
            );
        }
    }

    #[test]
    fn refuses_other_schemes_paths_and_garbage_without_quoting() {
        for (input, want) in [
            ("https://p:3128", ProxyUrlError::Scheme("https".into())),
            ("socks5://p:1080", ProxyUrlError::Scheme("socks5".into())),
            ("http://p:3128/path", ProxyUrlError::Path),
            ("http://p:3128/?q=1", ProxyUrlError::Path),
            ("http://", ProxyUrlError::Malformed),
            ("http://p:99999", ProxyUrlError::Malformed),
        ] {
            assert_eq!(ProxyUrl::parse(input), Err(want), "{input}");
        }
    }

    #[test]
    fn debug_never_shows_the_credentials() {
        let p = ProxyUrl::parse("http://user:s3cret@p:3128").unwrap();
        let d = format!("{p:?}");
        assert!(
            !d.contains("s3cret") && !d.contains("dXNlcjpzM2NyZXQ="),
            "{d}"
        );
        assert!(d.contains("<redacted>"), "{d}");
        assert_eq!(p.shown(), "http://p:3128");
    }
}
