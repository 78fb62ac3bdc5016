//! Prometheus text exposition of a stats snapshot (pure: snapshot in, text out).

use std::fmt::Write;

use crate::stats::{ModeCounts, StatsSnapshot};

/// Render `s` in the Prometheus text format (version 0.0.4).
pub fn render(s: &StatsSnapshot, inflight: u64) -> String {
    let mut out = String::with_capacity(4096);
    let mut line = |name: &str, help: &str, kind: &str, samples: &[(String, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    line(
        "hub_requests_total",
        "Hub requests (admin, stats and metrics excluded).",
        "counter",
        &[(String::new(), s.requests)],
    );
    let mut answers = Vec::new();
    for (mode, c) in [
        ("publish", &s.publish),
        ("register", &s.register),
        ("deregister", &s.deregister),
        ("subscribe", &s.subscribe),
        ("other", &s.other),
    ] {
        for (outcome, v) in outcomes(c) {
            answers.push((format!("{{mode=\"{mode}\",outcome=\"{outcome}\"}}"), v));
        }
    }
    line(
        "hub_answers_total",
        "Hub requests by mode and how they were answered.",
        "counter",
        &answers,
    );
    line(
        "hub_stalled_total",
        "Requests that entered a stall window.",
        "counter",
        &[(String::new(), s.stalled)],
    );
    line(
        "hub_inflight",
        "Hub requests in flight.",
        "gauge",
        &[(String::new(), inflight)],
    );
    line(
        "hub_topics",
        "Topics with an entry (registered or published to).",
        "gauge",
        &[(String::new(), s.topics.len() as u64)],
    );
    let d = &s.distribution;
    let kinds = [
        ("published", d.published),
        ("attempts", d.attempts),
        ("delivered", d.delivered),
        ("retried", d.retried),
        ("failed", d.failed),
        ("gone_removed", d.gone_removed),
        ("dropped", d.dropped),
    ];
    let samples: Vec<_> = kinds
        .iter()
        .map(|(k, v)| (format!("{{kind=\"{k}\"}}"), *v))
        .collect();
    line(
        "hub_distribution_total",
        "Distribution counts.",
        "counter",
        &samples,
    );
    let drops = [
        ("queue_full", d.dropped_queue_full),
        ("queue_bytes", d.dropped_queue_bytes),
        ("ended", d.dropped_ended),
        ("hub_queue_full", d.dropped_hub_queue_full),
    ];
    let drops: Vec<_> = drops
        .iter()
        .map(|(r, v)| (format!("{{reason=\"{r}\"}}"), *v))
        .collect();
    line(
        "hub_distribution_dropped_total",
        "Deliveries dropped, by reason.",
        "counter",
        &drops,
    );
    let failures: Vec<_> = d
        .failed_attempts
        .iter()
        .map(|(cause, v)| (format!("{{cause=\"{cause}\"}}"), *v))
        .collect();
    line(
        "hub_delivery_failed_attempts_total",
        "Failed delivery attempts, by HTTP status or timeout/connect/error.",
        "counter",
        &failures,
    );
    line(
        "hub_distribution_pending",
        "Deliveries queued or in progress.",
        "gauge",
        &[(String::new(), d.pending)],
    );
    line(
        "hub_queued_bytes",
        "Bytes held by subscriber queues, each subscriber's share counted.",
        "gauge",
        &[(String::new(), d.queued_bytes)],
    );
    line(
        "hub_memory_bytes",
        "Bytes of content held for delivery, each publish counted once.",
        "gauge",
        &[(String::new(), d.memory_bytes)],
    );
    line(
        "hub_memory_limit_bytes",
        "The hub's memory budget for queued content.",
        "gauge",
        &[(String::new(), d.memory_limit)],
    );
    let cut = &s.serve;
    let closed = [
        ("head_timeout", cut.head_timeouts.saturating_sub(cut.silent)),
        ("silent", cut.silent),
        ("write_stalled", cut.write_stalled),
        ("over_limit", cut.over_limit),
    ];
    let closed: Vec<_> = closed
        .iter()
        .map(|(r, v)| (format!("{{reason=\"{r}\"}}"), *v))
        .collect();
    line(
        "hub_serve_closed_total",
        "Client connections the hub's bounds cut off, by reason (head_timeout: a head begun \
         and not finished; silent: too little sent to choose a protocol).",
        "counter",
        &closed,
    );
    if let Some(q) = &s.delivery_queue {
        let order = format!("{{order=\"{}\"}}", q.order);
        line(
            "hub_delivery_queue_queued",
            "Deliveries waiting in the hub-wide delivery queue (--delivery-workers).",
            "gauge",
            &[(order.clone(), q.queued)],
        );
        line(
            "hub_delivery_queue_in_flight",
            "Deliveries holding one of the --delivery-workers permits.",
            "gauge",
            &[(order.clone(), q.in_flight)],
        );
        line(
            "hub_delivery_queue_overflow_total",
            "Deliveries dropped because the hub-wide delivery queue was full.",
            "counter",
            &[(order, q.overflow)],
        );
    }
    if let Some(b) = &s.broker {
        crate::broker::render_metrics(b, &mut out);
    }
    out
}

fn outcomes(c: &ModeCounts) -> [(&'static str, u64); 14] {
    [
        ("accepted", c.accepted),
        ("denied", c.denied),
        ("bad_request", c.bad_request),
        ("unauthorized", c.unauthorized),
        ("too_large", c.too_large),
        ("fault_502", c.fault_502),
        ("fault_503", c.fault_503),
        ("fault_reset", c.fault_reset),
        ("abandoned", c.abandoned),
        ("conflict", c.conflict),
        ("not_found", c.not_found),
        ("over_memory", c.over_memory),
        ("broker_error", c.broker_error),
        ("throttled", c.throttled),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_with_labels() {
        let mut s = StatsSnapshot {
            requests: 7,
            ..Default::default()
        };
        s.publish.fault_502 = 3;
        s.distribution.pending = 2;
        s.distribution.queued_bytes = 3_000_000;
        s.distribution.dropped_queue_bytes = 5;
        s.distribution.failed_attempts.insert("503".into(), 6);
        s.serve.head_timeouts = 5;
        s.serve.silent = 2;
        let text = render(&s, 4);
        assert!(text.contains("hub_requests_total 7\n"));
        assert!(text.contains("hub_answers_total{mode=\"publish\",outcome=\"fault_502\"} 3\n"));
        assert!(text.contains("hub_inflight 4\n"));
        assert!(text.contains("hub_distribution_pending 2\n"));
        assert!(text.contains("hub_queued_bytes 3000000\n"));
        assert!(text.contains("hub_distribution_dropped_total{reason=\"queue_bytes\"} 5\n"));
        assert!(text.contains("hub_delivery_failed_attempts_total{cause=\"503\"} 6\n"));
        assert!(text.contains("hub_serve_closed_total{reason=\"head_timeout\"} 3\n"));
        assert!(text.contains("hub_serve_closed_total{reason=\"silent\"} 2\n"));
        assert_eq!(text.matches("# TYPE").count(), 13);
        s.delivery_queue = Some(crate::DeliveryQueueStats {
            order: crate::QueueOrder::Fair,
            queued: 9,
            in_flight: 2,
            overflow: 4,
            ..Default::default()
        });
        let text = render(&s, 4);
        assert!(text.contains("hub_delivery_queue_queued{order=\"fair\"} 9\n"));
        assert!(text.contains("hub_delivery_queue_in_flight{order=\"fair\"} 2\n"));
        assert!(text.contains("hub_delivery_queue_overflow_total{order=\"fair\"} 4\n"));
        assert_eq!(text.matches("# TYPE").count(), 16);
    }
}
