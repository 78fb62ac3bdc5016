//! The `size` check: the largest message a run would send against the largest the broker takes
//! on a link (256 KB on Basic and Standard, up to 100 MB on Premium). A run refuses to start
//! on the same finding.

use super::step::Step;
use crate::config::RunConfig;
use crate::targets::servicebus::largest_message_len;
use crate::workload::Workload;

/// The `size` line: the encoded message with a body of `--payload-bytes` (bodies are padded to
/// it), its properties and the AMQP framing around them, as the broker measures it, against the
/// `max-message-size` the broker gave the first topic's link. Without padding, bodies stay
/// under 1 KiB, far below every tier's limit.
pub fn step(cfg: &RunConfig, workload: &Workload, limit: Option<u64>) -> Step {
    let Some(limit) = limit else {
        return Step::ok("size", "the broker sets no message size limit");
    };
    let Some(body) = cfg.workload.payload_bytes else {
        return Step::ok(
            "size",
            format!(
                "bodies (under 1 KiB) fit the {limit} bytes the broker takes per message ({})",
                tier_of_limit(limit)
            ),
        );
    };
    let message = largest_message_len(workload, body);
    if message > limit {
        return Step::fail(
            "size",
            format!(
                "messages of {message} bytes (--payload-bytes {body} with the properties and AMQP encoding around it) are over the {limit} bytes the broker takes per message ({})",
                tier_of_limit(limit)
            ),
            format!(
                "send bodies of at most {} bytes, or use a Premium namespace (messages up to 100 MB)",
                limit.saturating_sub(message - body as u64)
            ),
        );
    }
    Step::ok(
        "size",
        format!(
            "messages of {message} bytes (bodies of {body}) fit the {limit} bytes the broker takes per message ({})",
            tier_of_limit(limit)
        ),
    )
}

/// Which tier a link's limit points to (Microsoft's "Service Bus quotas").
fn tier_of_limit(limit: u64) -> &'static str {
    if limit <= 256 * 1024 {
        "Basic or Standard: 256 KB"
    } else {
        "Premium: up to 100 MB, per entity"
    }
}
