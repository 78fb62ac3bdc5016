//! A publish's send in broker mode: one send to the topic at the broker, timed to its
//! settlement, and the answer a hub in front of Service Bus gives for each failure
//! (docs/hub-servicebus.md). The handler (`handlers.rs`) decides and answers.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use hubload_servicebus::{OutgoingMessage, SendOutcome};

use super::Broker;
use crate::params;
use crate::server_timing::PublishTiming;

/// Numbers the hub's messages (`message-id` = `hub-<pid>-<n>`).
static MESSAGE_SEQ: AtomicU64 = AtomicU64::new(0);

/// The answer to a publish whose send ended in `o` (never `Accepted`): status, reason and
/// whether the client may retry (then `Retry-After`).
pub(crate) fn failure_answer(o: &SendOutcome) -> (StatusCode, &'static str, Option<u32>) {
    match o {
        SendOutcome::Throttled => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the broker is busy (server-busy); retry later",
            Some(2),
        ),
        SendOutcome::Connect
        | SendOutcome::ProxyRefused { .. }
        | SendOutcome::ConnectTimeout
        | SendOutcome::ConnectionError
        | SendOutcome::SessionEnded { .. }
        | SendOutcome::LinkDetached { .. } => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the broker cannot be reached; retry later",
            Some(1),
        ),
        SendOutcome::Timeout => (
            StatusCode::GATEWAY_TIMEOUT,
            "the broker did not settle the send in time",
            None,
        ),
        SendOutcome::TooLarge => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "the content is larger than the broker takes",
            None,
        ),
        SendOutcome::NotFound => (
            StatusCode::BAD_GATEWAY,
            "the topic does not exist at the broker",
            None,
        ),
        SendOutcome::Unauthorized => (
            StatusCode::BAD_GATEWAY,
            "the broker refused the hub's credentials",
            None,
        ),
        SendOutcome::Rejected { .. } | SendOutcome::Accepted => {
            (StatusCode::BAD_GATEWAY, "the broker refused the send", None)
        }
    }
}

/// The response to a broker failure `o` (counted as `Verdict::Broker`).
pub(crate) fn failure_response(o: &SendOutcome) -> Response {
    let (status, reason, retry) = failure_answer(o);
    let mut r = params::plain(status, reason);
    if let Some(s) = retry {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// Send `content` to `topic` at the broker (a thin ping, with no content, sends an empty
/// body) and count the outcome; how long the send took to settle. An accepted send's stages
/// (the publish arrived at `arrived`) are kept for its deliveries (`timings.rs`).
pub(crate) async fn send(
    broker: &Broker,
    topic: &str,
    content: Option<(Bytes, Option<HeaderValue>)>,
    arrived: Instant,
) -> (SendOutcome, Duration) {
    let (body, content_type) = content.unwrap_or_default();
    let ct = content_type
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream");
    let id = format!(
        "hub-{}-{}",
        std::process::id(),
        MESSAGE_SEQ.fetch_add(1, Relaxed)
    );
    broker.timings.sending(&id);
    let sent_at = Instant::now();
    let result = broker
        .sender
        .send(
            topic,
            OutgoingMessage {
                body: &body,
                message_id: &id,
                content_type: ct,
                properties: &[],
            },
        )
        .await;
    let took = sent_at.elapsed();
    broker.counters.send(&result.outcome);
    let timing = (result.outcome == SendOutcome::Accepted)
        .then(|| PublishTiming::accepted_now(arrived, took));
    broker.timings.settled(&id, timing);
    (result.outcome, took)
}

/// [`send`] on a task of its own, awaited by the publish's handler. When the client leaves
/// mid-publish, its connection task drops the handler, but not this task: the send runs to
/// its settlement and is counted under its outcome, its stages are kept for its deliveries,
/// and `accepted` (the handler's count of the publish) runs once the broker has accepted it.
/// So every send the broker settled is in the hub's counts, whatever the HTTP side did
/// (docs/hub-servicebus.md, "Counts").
pub(crate) async fn send_detached(
    broker: Arc<Broker>,
    topic: String,
    content: Option<(Bytes, Option<HeaderValue>)>,
    arrived: Instant,
    accepted: impl FnOnce() + Send + 'static,
) -> (SendOutcome, Duration) {
    let task = tokio::spawn(async move {
        let r = send(&broker, &topic, content, arrived).await;
        if r.0 == SendOutcome::Accepted {
            accepted();
        }
        r
    });
    // A join error is the task's panic or the runtime shutting down: no settlement known.
    task.await
        .unwrap_or((SendOutcome::ConnectionError, Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_unreachable_are_retryable_503s() {
        let (s, _, retry) = failure_answer(&SendOutcome::Throttled);
        assert_eq!((s, retry), (StatusCode::SERVICE_UNAVAILABLE, Some(2)));
        let r = failure_response(&SendOutcome::ConnectionError);
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        assert_eq!(
            failure_answer(&SendOutcome::Timeout).0,
            StatusCode::GATEWAY_TIMEOUT
        );
        assert_eq!(
            failure_answer(&SendOutcome::TooLarge).0,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        for o in [
            SendOutcome::NotFound,
            SendOutcome::Unauthorized,
            SendOutcome::Rejected {
                condition: "amqp:internal-error".into(),
            },
        ] {
            let r = failure_response(&o);
            assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
            assert!(r.headers().get(header::RETRY_AFTER).is_none());
        }
    }
}
