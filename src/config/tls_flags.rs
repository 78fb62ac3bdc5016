//! `--ca-cert`, `--insecure` and `--tls-timeout`: the TLS settings of every https request,
//! read and checked once here.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::error::ConfigError;
use super::parse::positive_duration;
use crate::cli::RunArgs;
use crate::targets::http::Tls;

/// How hubload verifies an `https://` hub.
#[derive(Debug, Clone, Serialize)]
pub struct TlsConfig {
    /// Extra trusted roots (PEM files), besides the web PKI roots.
    pub ca_cert: Vec<PathBuf>,
    /// The PEM texts of `ca_cert`, read at start.
    #[serde(skip)]
    pub ca_pems: Vec<Vec<u8>>,
    /// Certificates are not verified at all.
    pub insecure: bool,
    /// Bound of the TLS handshake after the TCP connect.
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub tls_timeout: Duration,
}

impl TlsConfig {
    /// The TLS settings for `url`: `None` for `http://`. Errors name the URL's host.
    pub fn for_url(&self, url: &url::Url) -> anyhow::Result<Option<Tls>> {
        if url.scheme() != "https" {
            return Ok(None);
        }
        let host = url.host_str().unwrap_or_default();
        let tls = if self.insecure {
            Tls::insecure(host)
        } else {
            Tls::webpki_plus(host, &self.ca_pems)
        };
        Ok(Some(tls.map_err(|e| anyhow::anyhow!("--hub-url: {e}"))?))
    }
}

/// Resolve the TLS flags; `connect_timeout` is the default handshake bound.
pub fn resolve(a: &RunArgs, connect_timeout: Duration) -> Result<TlsConfig, ConfigError> {
    let mut ca_pems = Vec::with_capacity(a.ca_cert.len());
    for path in &a.ca_cert {
        let shown = path.display().to_string();
        let pem = std::fs::read(path).map_err(|e| {
            ConfigError::invalid("ca-cert", &shown, format!("cannot be read ({})", e.kind()))
        })?;
        // Checked now, so a bad file is one line at start rather than a failed run.
        Tls::webpki_plus("localhost", std::slice::from_ref(&pem))
            .map_err(|e| ConfigError::invalid("ca-cert", &shown, e))?;
        ca_pems.push(pem);
    }
    if a.insecure && !a.ca_cert.is_empty() {
        return Err(ConfigError::Conflict(
            "--insecure skips certificate checks; --ca-cert would have no effect".into(),
        ));
    }
    let tls_timeout = match a.tls_timeout.as_deref() {
        Some(s) => positive_duration("tls-timeout", s)?,
        None => connect_timeout,
    };
    Ok(TlsConfig {
        ca_cert: a.ca_cert.clone(),
        ca_pems,
        insecure: a.insecure,
        tls_timeout,
    })
}
