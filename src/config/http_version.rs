//! `--http-version` and `--h2-streams` → `HttpConfig`: which HTTP the hub requests speak.

use serde::Serialize;

use super::error::ConfigError;
use super::parse::{count32, opt};
use crate::cli::RunArgs;

/// Which HTTP version hub requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum HttpVersion {
    /// HTTP/1.1 on the hand-written client.
    #[default]
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2: h2 by ALPN over https (the server choosing http/1.1 is an error), h2c with
    /// prior knowledge over http.
    #[serde(rename = "2")]
    Http2,
    /// h2 when an https server chooses it by ALPN, else HTTP/1.1 (http:// is HTTP/1.1).
    #[serde(rename = "auto")]
    Auto,
}

impl HttpVersion {
    /// The flag word.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
            HttpVersion::Auto => "auto",
        }
    }
}

/// The HTTP settings of hub requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HttpConfig {
    /// `--http-version`.
    pub version: HttpVersion,
    /// `--h2-streams`: most streams in flight per HTTP/2 connection.
    pub h2_streams: u32,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            version: HttpVersion::Http1,
            h2_streams: DEFAULT_H2_STREAMS,
        }
    }
}

/// `--h2-streams` when not given: nginx's default `http2_max_concurrent_streams` is 128,
/// hyper's 200; 100 is RFC 9113's recommended minimum a server should allow.
pub const DEFAULT_H2_STREAMS: u32 = 100;
/// Most `--h2-streams`: stream ids are 31 bits and odd, so a connection has at most 2^30.
const MAX_H2_STREAMS: u32 = 1 << 30;

/// Resolve the two flags.
pub(super) fn resolve(a: &RunArgs) -> Result<HttpConfig, ConfigError> {
    let version = match opt(&a.http_version).map(str::trim) {
        None | Some("1.1") => HttpVersion::Http1,
        Some("2") => HttpVersion::Http2,
        Some("auto") => HttpVersion::Auto,
        Some(other) => {
            return Err(ConfigError::invalid(
                "http-version",
                other,
                "is not 1.1, 2 or auto",
            ))
        }
    };
    let h2_streams = match opt(&a.h2_streams) {
        None => DEFAULT_H2_STREAMS,
        Some(s) => {
            if version == HttpVersion::Http1 {
                return Err(ConfigError::Conflict(
                    "--h2-streams needs --http-version 2 or auto".into(),
                ));
            }
            let n = count32("h2-streams", s, 1)?;
            if n > MAX_H2_STREAMS {
                return Err(ConfigError::invalid(
                    "h2-streams",
                    s,
                    "must be at most 1073741824",
                ));
            }
            n
        }
    };
    Ok(HttpConfig {
        version,
        h2_streams,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    #[test]
    fn versions_and_streams() {
        let table: &[(&[&str], HttpVersion, u32)] = &[
            (&[], HttpVersion::Http1, 100),
            (&["--http-version", "1.1"], HttpVersion::Http1, 100),
            (&["--http-version", "2"], HttpVersion::Http2, 100),
            (
                &["--http-version", "auto", "--h2-streams", "7"],
                HttpVersion::Auto,
                7,
            ),
        ];
        for (argv, version, streams) in table {
            let c = resolve(&args(argv)).unwrap();
            assert_eq!((c.version, c.h2_streams), (*version, *streams), "{argv:?}");
        }
    }

    #[test]
    fn rules_and_messages() {
        for (argv, want) in [
            (
                &["--http-version", "3"][..],
                "invalid --http-version `3`: is not 1.1, 2 or auto",
            ),
            (
                &["--http-version", "2", "--h2-streams", "0"],
                "invalid --h2-streams `0`: must be at least 1",
            ),
            (
                &["--http-version", "2", "--h2-streams", "ten"],
                "invalid --h2-streams `ten`: is not a whole number",
            ),
            (
                &["--h2-streams", "10"],
                "--h2-streams needs --http-version 2 or auto",
            ),
        ] {
            err(resolve(&args(argv)), want);
        }
    }
}
