//! The workload flags (tenants, SPs, users, channels, topics, payload, seed, distribution) →
//! `WorkloadConfig`.

use super::error::ConfigError;
use super::parse::{count, count32, list, opt, value};
use crate::cli::RunArgs;
use crate::workload::{Distribution, TopicLayout, WorkloadConfig};

/// Largest `--payload-bytes`: 16 MiB.
const MAX_PAYLOAD: usize = 16 << 20;

fn channel(field: &str, c: &str) -> Result<String, ConfigError> {
    if c.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(c.to_string())
    } else {
        Err(ConfigError::invalid(
            field,
            c,
            "channel names are letters, digits, - and _",
        ))
    }
}

/// The workload, with its defaults (10 × 10 × 10, four channels, one topic per tenant and
/// channel, seed 1, uniform).
pub(super) fn resolve(a: &RunArgs) -> Result<WorkloadConfig, ConfigError> {
    let payload_bytes = opt(&a.payload_bytes)
        .map(|s| count("payload-bytes", s, 1).map(|n| n as usize))
        .transpose()?;
    if let Some(p) = payload_bytes.filter(|p| *p > MAX_PAYLOAD) {
        return Err(ConfigError::invalid(
            "payload-bytes",
            &p.to_string(),
            "must be at most 16 MiB",
        ));
    }
    Ok(WorkloadConfig {
        tenants: opt(&a.tenants).map_or(Ok(10), |s| count32("tenants", s, 1))?,
        sps: opt(&a.sps).map_or(Ok(10), |s| count32("sps", s, 1))?,
        users: opt(&a.users).map_or(Ok(10), |s| count32("users", s, 1))?,
        channels: match opt(&a.channels) {
            None => ["login", "registration", "credential", "session"]
                .map(String::from)
                .to_vec(),
            Some(s) => list("channels", s, channel)?,
        },
        layout: opt(&a.topics).map_or(Ok(TopicLayout::PerTenantChannel), |s| value("topics", s))?,
        payload_bytes,
        seed: opt(&a.seed).map_or(Ok(1), |s| count("seed", s, 0))?,
        distribution: opt(&a.distribution)
            .map_or(Ok(Distribution::Uniform), |s| value("distribution", s))?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    #[test]
    fn defaults() {
        let w = resolve(&args(&[])).unwrap();
        assert_eq!((w.tenants, w.sps, w.users, w.seed), (10, 10, 10, 1));
        assert_eq!(
            w.channels,
            ["login", "registration", "credential", "session"]
        );
        assert_eq!(w.layout, TopicLayout::PerTenantChannel);
        assert_eq!(w.payload_bytes, None);
    }

    #[test]
    fn rules_and_messages() {
        let ok = resolve(&args(&[
            "--channels",
            "a, b-c ,d_e",
            "--payload-bytes",
            "16777216",
        ]))
        .unwrap();
        assert_eq!(ok.channels, ["a", "b-c", "d_e"]);
        assert_eq!(ok.payload_bytes, Some(16 << 20));
        for (argv, want) in [
            (
                &["--tenants", "0"][..],
                "invalid --tenants `0`: must be at least 1",
            ),
            (&["--sps", "x"], "invalid --sps `x`: is not a whole number"),
            (
                &["--users", "-1"],
                "invalid --users `-1`: must not be negative",
            ),
            (
                &["--channels", "a b"],
                "invalid --channels `a b`: channel names",
            ),
            (
                &["--channels", "a,,b"],
                "invalid --channels `a,,b`: has an empty item",
            ),
            (
                &["--payload-bytes", "16777217"],
                "invalid --payload-bytes `16777217`: must be at most 16 MiB",
            ),
            (
                &["--payload-bytes", "0"],
                "invalid --payload-bytes `0`: must be at least 1",
            ),
            (&["--topics", "many"], "invalid --topics `many`"),
            (
                &["--distribution", "normal"],
                "invalid --distribution `normal`",
            ),
        ] {
            err(resolve(&args(argv)), want);
        }
    }
}
