//! The delivery flags (subscriber fleet, callback server, grace, subscriber behaviour) → `DeliveryConfig`.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use super::error::ConfigError;
use super::parse::{self, opt};
use crate::cli::RunArgs;
use crate::secret::Secret;
use crate::subscriber::Behaviour;

/// Which topics get subscribers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SubscribeTopics {
    /// Every topic.
    All,
    /// The first N topics (in workload order).
    Count(u64),
    /// This fraction of the topics (0 < f ≤ 1), rounded up, the first ones.
    Fraction(f64),
}

impl SubscribeTopics {
    /// How many of `total` topics get subscribers.
    pub fn of(self, total: usize) -> usize {
        match self {
            SubscribeTopics::All => total,
            SubscribeTopics::Count(n) => (n as usize).min(total),
            SubscribeTopics::Fraction(f) => ((total as f64 * f).ceil() as usize).min(total),
        }
    }
}

/// End-to-end delivery measurement: `None` in `RunConfig` when `--subscribers` is 0.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryConfig {
    /// Subscribers per subscribed topic (≥ 1).
    pub subscribers: usize,
    /// Which topics get subscribers.
    pub topics: SubscribeTopics,
    /// Where the callback server binds.
    pub listen: SocketAddr,
    /// How the hub reaches the callback server; `None`: `http://<bound address>`.
    #[serde(serialize_with = "opt_url")]
    pub callback_url: Option<url::Url>,
    /// `hub.secret`; `None`: generated per run.
    pub secret: Option<Secret>,
    /// `hub.lease_seconds`.
    pub lease_seconds: u64,
    /// Unsubscribe at the end.
    pub unsubscribe: bool,
    /// How long after a level's last publish deliveries may still arrive.
    #[serde(serialize_with = "as_humantime")]
    pub grace: Duration,
    /// How the subscribers answer.
    #[serde(skip)]
    pub behaviour: Behaviour,
    /// `--subscriber-churn`: subscribers per second taken out and subscribed again while a
    /// level runs; `None`: a fixed set of subscriptions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub churn: Option<f64>,
}

fn opt_url<S: serde::Serializer>(u: &Option<url::Url>, s: S) -> Result<S::Ok, S::Error> {
    match u {
        Some(u) => s.serialize_str(u.as_str()),
        None => s.serialize_none(),
    }
}

fn as_humantime<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

const DEFAULT_LEASE_SECONDS: u64 = 3600;
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

fn subscribe_topics(raw: &str) -> Result<SubscribeTopics, ConfigError> {
    const FIELD: &str = "subscribe-topics";
    let t = raw.trim();
    if t.eq_ignore_ascii_case("all") {
        return Ok(SubscribeTopics::All);
    }
    if !t.contains('.') {
        return parse::count(FIELD, raw, 1).map(SubscribeTopics::Count);
    }
    let f: f64 = t.parse().map_err(|_| {
        ConfigError::invalid(FIELD, raw, "is not `all`, a count or a fraction like 0.5")
    })?;
    if !(f > 0.0 && f <= 1.0) {
        return Err(ConfigError::invalid(
            FIELD,
            raw,
            "a fraction must be above 0 and at most 1",
        ));
    }
    Ok(SubscribeTopics::Fraction(f))
}

fn callback_url(raw: &str) -> Result<url::Url, ConfigError> {
    const FIELD: &str = "callback-url";
    let u: url::Url = parse::value(FIELD, raw)?;
    if u.scheme() != "http" {
        return Err(ConfigError::invalid(
            FIELD,
            raw,
            "must be an http:// URL (the callback server speaks plain HTTP)",
        ));
    }
    parse::dialable(FIELD, raw, &u)?;
    if u.query().is_some() || u.fragment().is_some() || !u.username().is_empty() {
        return Err(ConfigError::invalid(
            FIELD,
            raw,
            "must be a base URL without user, query or fragment",
        ));
    }
    Ok(u)
}

fn fraction(field: &str, raw: &str) -> Result<f64, ConfigError> {
    let f: f64 = parse::value(field, raw)?;
    if !(0.0..=1.0).contains(&f) {
        return Err(ConfigError::invalid(field, raw, "must be between 0 and 1"));
    }
    Ok(f)
}

fn behaviour(a: &RunArgs) -> Result<Behaviour, ConfigError> {
    Ok(Behaviour {
        latency: opt(&a.subscriber_latency)
            .map(|v| parse::duration("subscriber-latency", v))
            .transpose()?
            .unwrap_or_default(),
        fail_every: opt(&a.subscriber_fail_every)
            .map(|v| parse::count("subscriber-fail-every", v, 1))
            .transpose()?
            .unwrap_or(0),
        fail_fraction: opt(&a.subscriber_fail_fraction)
            .map(|v| fraction("subscriber-fail-fraction", v))
            .transpose()?
            .unwrap_or(0.0),
        gone_after: opt(&a.subscriber_gone_after)
            .map(|v| parse::count("subscriber-gone-after", v, 0))
            .transpose()?,
    })
}

/// `None` unless `--subscribers` is at least 1; every delivery flag validated either way, so a
/// typo is caught even when the fleet is off.
pub(super) fn resolve(a: &RunArgs) -> Result<Option<DeliveryConfig>, ConfigError> {
    let subscribers = opt(&a.subscribers)
        .map(|v| parse::count("subscribers", v, 0))
        .transpose()?
        .unwrap_or(0);
    if subscribers > 10_000 {
        return Err(ConfigError::invalid(
            "subscribers",
            a.subscribers.as_deref().unwrap_or_default(),
            "must be at most 10000 per topic",
        ));
    }
    let topics = opt(&a.subscribe_topics)
        .map(subscribe_topics)
        .transpose()?
        .unwrap_or(SubscribeTopics::All);
    let listen = opt(&a.callback_listen)
        .map(|v| parse::value::<SocketAddr>("callback-listen", v))
        .transpose()?
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let callback_url = opt(&a.callback_url).map(callback_url).transpose()?;
    if let Some(s) = opt(&a.subscriber_secret) {
        if s.is_empty() || s.len() > 200 {
            // The value itself is never echoed.
            return Err(ConfigError::Conflict(
                "invalid --subscriber-secret: must be 1 to 200 bytes".into(),
            ));
        }
    }
    let lease_seconds = opt(&a.lease_seconds)
        .map(|v| parse::count("lease-seconds", v, 1))
        .transpose()?
        .unwrap_or(DEFAULT_LEASE_SECONDS);
    let grace = opt(&a.delivery_grace)
        .map(|v| parse::duration("delivery-grace", v))
        .transpose()?
        .unwrap_or(DEFAULT_GRACE);
    let behaviour = behaviour(a)?;
    let churn = opt(&a.subscriber_churn)
        .map(|v| parse::rate("subscriber-churn", v))
        .transpose()?;
    if subscribers == 0 {
        if churn.is_some() {
            return Err(ConfigError::Conflict(
                "--subscriber-churn needs subscribers to churn (--subscribers N)".into(),
            ));
        }
        return Ok(None);
    }
    Ok(Some(DeliveryConfig {
        subscribers: subscribers as usize,
        topics,
        listen,
        callback_url,
        secret: a.subscriber_secret.clone().map(Secret::new),
        lease_seconds,
        unsubscribe: !a.no_unsubscribe,
        grace,
        behaviour,
        churn,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    fn on(extra: &[&str]) -> DeliveryConfig {
        let mut v = vec!["--subscribers", "2"];
        v.extend_from_slice(extra);
        resolve(&args(&v)).unwrap().expect("fleet on")
    }

    #[test]
    fn churn_is_a_rate_and_needs_subscribers() {
        assert_eq!(on(&[]).churn, None);
        assert_eq!(on(&["--subscriber-churn", "20"]).churn, Some(20.0));
        assert_eq!(on(&["--subscriber-churn", "0.5"]).churn, Some(0.5));
        err(
            resolve(&args(&["--subscriber-churn", "20"])),
            "--subscriber-churn needs subscribers",
        );
    }

    #[test]
    fn off_by_default_and_with_zero() {
        assert!(resolve(&args(&[])).unwrap().is_none());
        assert!(resolve(&args(&["--subscribers", "0"])).unwrap().is_none());
    }

    #[test]
    fn defaults() {
        let d = on(&[]);
        assert_eq!(d.subscribers, 2);
        assert_eq!(d.topics, SubscribeTopics::All);
        assert_eq!(d.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!(d.callback_url, None);
        assert!(d.secret.is_none());
        assert_eq!(d.lease_seconds, 3600);
        assert!(d.unsubscribe);
        assert_eq!(d.grace, Duration::from_secs(5));
        assert_eq!(d.behaviour, Behaviour::default());
    }

    #[test]
    fn values_table() {
        let d = on(&[
            "--subscribe-topics",
            "0.25",
            "--callback-listen",
            "0.0.0.0:8080",
            "--callback-url",
            "http://hubload-callbacks:8080/",
            "--subscriber-secret",
            "s3cret",
            "--lease-seconds",
            "60",
            "--no-unsubscribe",
            "--delivery-grace",
            "250ms",
            "--subscriber-latency",
            "10ms",
            "--subscriber-fail-every",
            "3",
            "--subscriber-fail-fraction",
            "0.1",
            "--subscriber-gone-after",
            "7",
        ]);
        assert_eq!(d.topics, SubscribeTopics::Fraction(0.25));
        assert_eq!(d.listen, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(
            d.callback_url.as_ref().map(url::Url::as_str),
            Some("http://hubload-callbacks:8080/")
        );
        assert_eq!(d.secret.as_ref().map(Secret::expose), Some("s3cret"));
        assert_eq!((d.lease_seconds, d.unsubscribe), (60, false));
        assert_eq!(d.grace, Duration::from_millis(250));
        assert_eq!(
            d.behaviour,
            Behaviour {
                latency: Duration::from_millis(10),
                fail_every: 3,
                fail_fraction: 0.1,
                gone_after: Some(7),
            }
        );
        assert_eq!(
            on(&["--subscribe-topics", "5"]).topics,
            SubscribeTopics::Count(5)
        );
        assert_eq!(
            on(&["--subscribe-topics", "ALL"]).topics,
            SubscribeTopics::All
        );
        assert!(on(&["--no-unsubscribe", "--unsubscribe"]).unsubscribe);
    }

    #[test]
    fn topic_selection_counts() {
        assert_eq!(SubscribeTopics::All.of(7), 7);
        assert_eq!(SubscribeTopics::Count(3).of(7), 3);
        assert_eq!(SubscribeTopics::Count(30).of(7), 7);
        assert_eq!(SubscribeTopics::Fraction(0.5).of(7), 4);
        assert_eq!(SubscribeTopics::Fraction(1.0).of(7), 7);
    }

    #[test]
    fn bad_values_name_the_flag() {
        let table: &[(&[&str], &str)] = &[
            (&["--subscribers", "-1"], "invalid --subscribers `-1`"),
            (&["--subscribers", "x"], "invalid --subscribers `x`"),
            (&["--subscribers", "10001"], "invalid --subscribers `10001`"),
            (
                &["--subscribe-topics", "0"],
                "invalid --subscribe-topics `0`",
            ),
            (
                &["--subscribe-topics", "1.5"],
                "invalid --subscribe-topics `1.5`",
            ),
            (
                &["--subscribe-topics", "some"],
                "invalid --subscribe-topics `some`",
            ),
            (
                &["--callback-listen", "localhost"],
                "invalid --callback-listen",
            ),
            (&["--callback-url", "https://x/"], "invalid --callback-url"),
            (
                &["--callback-url", "http://x/?a=1"],
                "invalid --callback-url",
            ),
            (&["--callback-url", "not a url"], "invalid --callback-url"),
            (&["--lease-seconds", "0"], "invalid --lease-seconds `0`"),
            (
                &["--subscriber-churn", "0"],
                "invalid --subscriber-churn `0`",
            ),
            (
                &["--subscriber-churn", "often"],
                "invalid --subscriber-churn `often`",
            ),
            (
                &["--delivery-grace", "soon"],
                "invalid --delivery-grace `soon`",
            ),
            (
                &["--subscriber-latency", "x"],
                "invalid --subscriber-latency",
            ),
            (
                &["--subscriber-fail-every", "0"],
                "invalid --subscriber-fail-every `0`",
            ),
            (
                &["--subscriber-fail-fraction", "2"],
                "invalid --subscriber-fail-fraction `2`",
            ),
            (
                &["--subscriber-gone-after", "-3"],
                "invalid --subscriber-gone-after",
            ),
            (&["--subscriber-secret", ""], "invalid --subscriber-secret"),
        ];
        for (argv, want) in table {
            let mut v = vec!["--subscribers", "1"];
            v.extend_from_slice(argv);
            err(resolve(&args(&v)), want);
        }
        // Checked even with the fleet off, so a typo never passes silently.
        err(
            resolve(&args(&["--delivery-grace", "soon"])),
            "invalid --delivery-grace",
        );
    }

    #[test]
    fn the_secret_is_never_shown() {
        let d = on(&["--subscriber-secret", "hunter2hunter2"]);
        assert!(!format!("{d:?}").contains("hunter2"));
        assert!(!serde_json::to_string(&d).unwrap().contains("hunter2"));
        let long = "x".repeat(201);
        let e = resolve(&args(&["--subscriber-secret", &long]))
            .unwrap_err()
            .to_string();
        assert!(!e.contains(&long), "{e}");
    }
}
