//! The emulator's wall clock, in the Unix milliseconds Service Bus stamps messages and
//! locks with.

use std::time::SystemTime;

/// Milliseconds since the epoch.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
