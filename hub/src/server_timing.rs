//! The `Server-Timing` header the hub puts on every publish answer: where its time went.
//!
//! Two metrics, in milliseconds with microsecond precision (W3C Server Timing):
//! - `broker`: the time spent waiting for the broker behind the hub. The in-memory hub has no
//!   broker; its fault-injected broker latency (`broker_latency_ms`, the stand-in for the
//!   synchronous broker round trip) is reported as `broker`, and the metric is left out when
//!   that latency is zero.
//! - `hub`: the rest of the time from the request's arrival in the handler to its answer
//!   (parsing, accounting, injected proxy delays, the publish itself).
//!
//! The client's latency is then `broker + hub + the rest` (network, queueing, the client).

use std::time::{Duration, Instant};

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
fn ms(d: Duration) -> String {
    let us = d.as_micros();
    format!("{}.{:03}", us / 1000, us % 1000)
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
}
