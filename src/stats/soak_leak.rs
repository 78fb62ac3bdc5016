//! A deliberate per-attempt leak, compiled only with the `soak-leak` feature: the proof that
//! bench/soak.sh's judge fails a build that leaks (docs/soak.md). Never in the default build.
//!
//! With the feature on, every attempt a level records leaks `HUBLOAD_SOAK_LEAK_BYTES` bytes
//! (read once; unset, empty or 0: nothing). The bytes are written, so they are resident and
//! show in the RSS as a real leak would. Without the feature the call is an empty inline
//! function and the variable is not read.

#[cfg(feature = "soak-leak")]
mod on {
    use std::sync::OnceLock;

    /// The variable naming the bytes leaked per attempt.
    const VAR: &str = "HUBLOAD_SOAK_LEAK_BYTES";

    fn bytes() -> usize {
        static BYTES: OnceLock<usize> = OnceLock::new();
        *BYTES.get_or_init(|| {
            std::env::var(VAR)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        })
    }

    /// Leak this build's bytes for one attempt.
    pub fn per_attempt() {
        let n = bytes();
        if n > 0 {
            // Written, not just reserved: a leak that never touches its pages costs no RSS.
            std::mem::forget(vec![0xA5u8; n]);
        }
    }
}

#[cfg(feature = "soak-leak")]
pub use on::per_attempt;

/// Nothing: the default build leaks nothing.
#[cfg(not(feature = "soak-leak"))]
#[inline(always)]
pub fn per_attempt() {}
