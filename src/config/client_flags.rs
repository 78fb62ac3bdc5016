//! The client flags (preset, timeouts, pool, retries) → `ClientConfig`, and `--threads`.

use std::time::Duration;

use serde::Serialize;

use super::error::ConfigError;
use super::parse::{count32, duration, opt, positive_duration};
use crate::cli::RunArgs;

/// The client model: timeouts, pool and retries.
#[derive(Debug, Clone, Serialize)]
pub struct ClientConfig {
    /// Bound of the whole attempt (pool wait + connect + request + response).
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub timeout: Duration,
    /// Bound of the connect.
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub connect_timeout: Duration,
    /// Most connections to one host; `None` means the level's concurrency.
    pub pool_per_host: Option<u32>,
    /// Bound of the wait for a pooled connection.
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub pool_timeout: Duration,
    /// Immediate retries on a retryable failure.
    pub retries: u32,
    /// The preset the values started from.
    pub preset: String,
}

/// Most `--retries`.
const MAX_RETRIES: u32 = 10;
/// Most `--threads`.
const MAX_THREADS: usize = 1024;

/// The client model: the preset's values, then each flag given over it.
pub(super) fn resolve(a: &RunArgs) -> Result<ClientConfig, ConfigError> {
    let preset = opt(&a.client).unwrap_or("default");
    let (mut timeout, mut connect, mut pool_wait, mut per_host, mut retries) = match preset {
        "default" => (Duration::from_secs(5), None, None, None, 0),
        "identity-publisher" => {
            let t = Duration::from_millis(300);
            (t, Some(t), Some(t), Some(2), 2)
        }
        other => {
            return Err(ConfigError::invalid(
                "client",
                other,
                "is not default or identity-publisher",
            ))
        }
    };
    if let Some(s) = opt(&a.timeout) {
        timeout = positive_duration("timeout", s)?;
    }
    if let Some(s) = opt(&a.connect_timeout) {
        connect = Some(positive_duration("connect-timeout", s)?);
    }
    if let Some(s) = opt(&a.pool_timeout) {
        pool_wait = Some(duration("pool-timeout", s)?);
    }
    if let Some(s) = opt(&a.pool_per_host) {
        per_host = Some(count32("pool-per-host", s, 1)?);
    }
    if let Some(s) = opt(&a.retries) {
        retries = count32("retries", s, 0)?;
        if retries > MAX_RETRIES {
            return Err(ConfigError::invalid("retries", s, "must be at most 10"));
        }
    }
    Ok(ClientConfig {
        timeout,
        connect_timeout: connect.unwrap_or(timeout).min(timeout),
        pool_per_host: per_host,
        pool_timeout: pool_wait.unwrap_or(timeout).min(timeout),
        retries,
        preset: preset.to_string(),
    })
}

/// `--threads`: load-generator threads, 1 to 1024; `None` when not given (one per CPU).
/// Called before the runtime exists, so it takes the raw flag rather than a `RunArgs`.
pub fn threads(raw: Option<&str>) -> Result<Option<usize>, ConfigError> {
    raw.map(|t| {
        t.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_THREADS).contains(n))
            .ok_or_else(|| {
                ConfigError::invalid("threads", t, "must be a whole number from 1 to 1024")
            })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    /// (timeout, connect timeout, pool timeout, per host, retries).
    type Expect = (Duration, Duration, Duration, Option<u32>, u32);

    #[test]
    fn presets_and_overrides() {
        let ms = Duration::from_millis;
        let table: &[(&[&str], Expect)] = &[
            (&[], (ms(5000), ms(5000), ms(5000), None, 0)),
            (
                &["--client", "identity-publisher"],
                (ms(300), ms(300), ms(300), Some(2), 2),
            ),
            (
                &[
                    "--client",
                    "identity-publisher",
                    "--timeout",
                    "1s",
                    "--retries",
                    "0",
                ],
                (ms(1000), ms(300), ms(300), Some(2), 0),
            ),
            // Connect and pool waits never exceed the whole-attempt timeout.
            (
                &[
                    "--timeout",
                    "100ms",
                    "--connect-timeout",
                    "1s",
                    "--pool-timeout",
                    "2s",
                ],
                (ms(100), ms(100), ms(100), None, 0),
            ),
            (
                &["--pool-per-host", "8"],
                (ms(5000), ms(5000), ms(5000), Some(8), 0),
            ),
        ];
        for (argv, want) in table {
            let c = resolve(&args(argv)).unwrap();
            let got = (
                c.timeout,
                c.connect_timeout,
                c.pool_timeout,
                c.pool_per_host,
                c.retries,
            );
            assert_eq!(got, *want, "{argv:?}");
        }
    }

    #[test]
    fn rules_and_messages() {
        for (argv, want) in [
            (
                &["--client", "java"][..],
                "invalid --client `java`: is not default or identity-publisher",
            ),
            (
                &["--timeout", "0s"],
                "invalid --timeout `0s`: must be longer than zero",
            ),
            (
                &["--connect-timeout", "soon"],
                "invalid --connect-timeout `soon`: is not a duration",
            ),
            (
                &["--pool-per-host", "0"],
                "invalid --pool-per-host `0`: must be at least 1",
            ),
            (
                &["--retries", "11"],
                "invalid --retries `11`: must be at most 10",
            ),
        ] {
            err(resolve(&args(argv)), want);
        }
    }

    #[test]
    fn threads_range() {
        assert_eq!(threads(None).unwrap(), None);
        assert_eq!(threads(Some("1")).unwrap(), Some(1));
        assert_eq!(threads(Some(" 1024 ")).unwrap(), Some(1024));
        for bad in ["0", "1025", "-1", "two", ""] {
            let e = threads(Some(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with("invalid --threads") && e.contains("from 1 to 1024"),
                "{bad}: {e}"
            );
        }
    }
}
