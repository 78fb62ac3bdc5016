//! The `size` check: the bodies a run would send against the largest message the broker takes
//! on a link (256 KB on Basic and Standard, up to 100 MB on Premium). A run refuses to start
//! on the same finding.

use super::step::Step;
use crate::config::RunConfig;

/// The `size` line: `--payload-bytes` (bodies are padded to it) against the `max-message-size`
/// the broker gave the first topic's link. Without padding, bodies stay under 1 KiB, far
/// below every tier's limit.
pub fn step(cfg: &RunConfig, limit: Option<u64>) -> Step {
    let Some(limit) = limit else {
        return Step::ok("size", "the broker sets no message size limit");
    };
    let body = cfg.workload.payload_bytes.unwrap_or(0) as u64;
    if body > limit {
        return Step::fail(
            "size",
            format!(
                "--payload-bytes {body} is over the {limit} bytes the broker takes per message ({})",
                tier_of_limit(limit)
            ),
            "send smaller bodies, or use a Premium namespace (messages up to 100 MB)",
        );
    }
    let largest = if body > 0 {
        format!("bodies of {body} bytes")
    } else {
        "bodies (under 1 KiB)".to_string()
    };
    Step::ok(
        "size",
        format!(
            "{largest} fit the {limit} bytes the broker takes per message ({})",
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
