//! Where a publish's time went, as the hub declares it: `Server-Timing` (`broker`, `hub`) on
//! every publish answer, and the same stages carried on to each delivery in `Hub-Timing`
//! (`hub`, `broker`, `queue`, `accepted;t=`).
//!
//! Durations are in ms with µs precision (W3C Server Timing); `broker` is left out when zero.
//! docs/server-timing.md defines each metric.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

/// The header's name, as sent.
pub(crate) const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// Put `Server-Timing` on `response`: `broker` (when non-zero) and `hub`, the time since
/// `arrived` less `broker`.
pub(crate) fn stamp(response: &mut Response, arrived: Instant, broker: Duration) {
    let total = arrived.elapsed();
    let hub = total.saturating_sub(broker);
    let value = if broker > Duration::ZERO {
        format!("broker;dur={}, hub;dur={}", ms(broker), ms(hub))
    } else {
        format!("hub;dur={}", ms(hub))
    };
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().append(SERVER_TIMING, v);
    }
}

/// A duration in milliseconds with three decimals (microseconds).
pub(crate) fn ms(d: Duration) -> String {
    let us = d.as_micros();
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// The header's name, as written on a delivery request.
pub(crate) const HUB_TIMING: &str = "Hub-Timing";

/// One accepted publish's stages, and when it was accepted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PublishTiming {
    /// The hub's own time, arrival to acceptance less `broker`.
    pub hub: Duration,
    /// The broker's time (the send's settlement, or the in-memory hub's injected latency).
    pub broker: Duration,
    /// When the hub accepted the publish (its content queued, or its send settled).
    pub accepted: Instant,
    /// The same moment on the wall clock, µs since the Unix epoch.
    pub accepted_unix_us: u64,
}

impl PublishTiming {
    /// A publish that arrived at `arrived`, spent `broker` at the broker, accepted now.
    pub fn accepted_now(arrived: Instant, broker: Duration) -> PublishTiming {
        let accepted = Instant::now();
        PublishTiming {
            hub: accepted
                .saturating_duration_since(arrived)
                .saturating_sub(broker),
            broker,
            accepted,
            accepted_unix_us: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64),
        }
    }

    /// The header's value for an attempt written at `now`.
    pub fn value(&self, now: Instant) -> String {
        let queue = now.saturating_duration_since(self.accepted);
        let broker = if self.broker > Duration::ZERO {
            format!(", broker;dur={}", ms(self.broker))
        } else {
            String::new()
        };
        format!(
            "hub;dur={}{broker}, queue;dur={}, accepted;t={}",
            ms(self.hub),
            ms(queue),
            self.accepted_unix_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_to_the_microsecond() {
        assert_eq!(ms(Duration::from_micros(1_234_567)), "1234.567");
        assert_eq!(ms(Duration::from_micros(5)), "0.005");
        assert_eq!(ms(Duration::ZERO), "0.000");
    }

    #[test]
    fn broker_only_when_non_zero() {
        let mut r = Response::new(axum::body::Body::empty());
        stamp(&mut r, Instant::now(), Duration::ZERO);
        let v = r.headers()[SERVER_TIMING].to_str().unwrap().to_owned();
        assert!(v.starts_with("hub;dur="), "{v}");
        let mut r = Response::new(axum::body::Body::empty());
        let arrived = Instant::now() - Duration::from_millis(7);
        stamp(&mut r, arrived, Duration::from_millis(5));
        let v = r.headers()[SERVER_TIMING].to_str().unwrap().to_owned();
        let (broker, hub) = v.split_once(", ").unwrap();
        assert_eq!(broker, "broker;dur=5.000");
        let hub_ms: f64 = hub.strip_prefix("hub;dur=").unwrap().parse().unwrap();
        assert!(hub_ms >= 2.0, "{v}");
    }

    #[test]
    fn stages_and_the_queue_up_to_the_attempt() {
        let t = PublishTiming {
            hub: Duration::from_micros(43),
            broker: Duration::from_micros(2_071),
            accepted: Instant::now(),
            accepted_unix_us: 1_764_892_800_123_456,
        };
        assert_eq!(
            t.value(t.accepted + Duration::from_micros(512)),
            "hub;dur=0.043, broker;dur=2.071, queue;dur=0.512, accepted;t=1764892800123456"
        );
        let t = PublishTiming {
            broker: Duration::ZERO,
            ..t
        };
        // An attempt cannot be written before the acceptance; a clock read so is queue 0.
        assert_eq!(
            t.value(t.accepted),
            "hub;dur=0.043, queue;dur=0.000, accepted;t=1764892800123456"
        );
        let arrived = Instant::now() - Duration::from_millis(5);
        let t = PublishTiming::accepted_now(arrived, Duration::from_millis(3));
        assert!(t.hub >= Duration::from_millis(2), "{t:?}");
        assert_eq!(t.broker, Duration::from_millis(3));
    }
}
