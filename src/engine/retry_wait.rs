//! How long a retry waits: at once, or after the `Retry-After` the refused attempt asked for
//! when that wait ends before the attempt's deadline; else the event ends with the refusal.
//!
//! The attempt's deadline is its start plus `--timeout`, the bound every attempt keeps: a
//! client told to come back later than that gives up now instead of waiting past it (and
//! never sleeps to find out). A wait is also capped at [`MAX_RETRY_WAIT`] whatever the timeout.

use std::time::Duration;

/// The longest `Retry-After` a retry waits for; a longer one ends the event at once.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// What follows a retryable attempt when retries are left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryWait {
    /// Retry at once (no `Retry-After`, or 0).
    Now,
    /// Retry after this wait.
    After(Duration),
    /// The wait would end past the attempt's deadline or the cap: the event ends here.
    GiveUp,
}

/// The wait after an attempt that asked for `retry_after_s` seconds (`None`: no field that
/// counts) and took `elapsed` of its `timeout`.
pub(crate) fn retry_wait(
    retry_after_s: Option<u32>,
    elapsed: Duration,
    timeout: Duration,
) -> RetryWait {
    let wait = match retry_after_s {
        None | Some(0) => return RetryWait::Now,
        Some(s) => Duration::from_secs(u64::from(s)),
    };
    if wait > MAX_RETRY_WAIT || elapsed.saturating_add(wait) >= timeout {
        return RetryWait::GiveUp;
    }
    RetryWait::After(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_only_within_the_deadline_and_the_cap() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        assert_eq!(retry_wait(None, ms(3), s(5)), RetryWait::Now);
        assert_eq!(retry_wait(Some(0), ms(3), s(5)), RetryWait::Now);
        assert_eq!(retry_wait(Some(2), ms(3), s(5)), RetryWait::After(s(2)));
        // The wait would end at the deadline or past it: no wait, the event ends.
        assert_eq!(retry_wait(Some(2), s(3), s(5)), RetryWait::GiveUp);
        assert_eq!(retry_wait(Some(1), ms(1), ms(500)), RetryWait::GiveUp);
        // A long timeout does not lift the cap.
        assert_eq!(
            retry_wait(Some(60), ms(1), s(3600)),
            RetryWait::After(s(60))
        );
        assert_eq!(retry_wait(Some(61), ms(1), s(3600)), RetryWait::GiveUp);
        assert_eq!(
            retry_wait(Some(u32::MAX), ms(1), Duration::MAX),
            RetryWait::GiveUp
        );
    }
}
