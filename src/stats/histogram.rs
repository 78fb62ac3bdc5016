//! The one histogram layout every hubload histogram uses, so any two of them add exactly.

/// A latency histogram in µs.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Lowest discernible value: 1 µs.
pub const HIST_LOWEST_US: u64 = 1;
/// Significant decimal digits kept.
pub const HIST_SIGFIG: u8 = 3;

/// A new empty histogram with the fixed layout (1 µs, 3 significant digits, auto-resize).
pub fn new_histogram() -> Histogram {
    let mut h = Histogram::new_with_bounds(HIST_LOWEST_US, 2 * HIST_LOWEST_US, HIST_SIGFIG)
        .expect("fixed histogram layout is valid");
    h.auto(true);
    h
}
