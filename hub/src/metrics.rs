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
        ("delivered", d.delivered),
        ("retried", d.retried),
        ("failed", d.failed),
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
    line(
        "hub_distribution_pending",
        "Deliveries queued or in progress.",
        "gauge",
        &[(String::new(), d.pending)],
    );
    out
}

fn outcomes(c: &ModeCounts) -> [(&'static str, u64); 11] {
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
        let text = render(&s, 4);
        assert!(text.contains("hub_requests_total 7\n"));
        assert!(text.contains("hub_answers_total{mode=\"publish\",outcome=\"fault_502\"} 3\n"));
        assert!(text.contains("hub_inflight 4\n"));
        assert!(text.contains("hub_distribution_pending 2\n"));
        assert_eq!(text.matches("# TYPE").count(), 7);
    }
}
