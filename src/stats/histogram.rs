//! The one histogram layout every hubload histogram uses, so any two of them add exactly.

/// A latency histogram in µs.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Lowest discernible value: 1 µs.
pub const HIST_LOWEST_US: u64 = 1;
/// Significant decimal digits kept.
pub const HIST_SIGFIG: u8 = 3;

/// Initial highest trackable value. Histograms start small and grow to the largest value
/// recorded (auto-resize); the layout (lowest value, precision) is what makes histograms
/// addable, not this bound.
const INITIAL_HIGH_US: u64 = 2 * HIST_LOWEST_US;

/// A new empty histogram with the fixed layout (1 µs, 3 significant digits, auto-resize).
pub fn new_histogram() -> Histogram {
    let mut h = Histogram::new_with_bounds(HIST_LOWEST_US, INITIAL_HIGH_US, HIST_SIGFIG)
        .expect("fixed histogram layout is valid");
    h.auto(true);
    h
}

/// A new empty histogram with the fixed layout, sized from the start to hold every value up
/// to `high_us` (auto-resize stays on, for the rare larger value). For a histogram recorded
/// on every attempt and kept for a whole level: one that grows instead widens, a bucket of
/// 1,024 counts (8 KB) per doubling of the largest value seen, each time into a new block
/// (the old one freed where it was), so a long run's memory steps up with every new worst
/// latency. Sized for the default 5 s timeout it is 112 KB (14 × 1,024 counts of 8 B), 120 KB
/// for 10 s, 139 KB for 60 s. The size is not part of the layout: histograms of any two sizes
/// add exactly.
///
/// Its counts are written once here, so all its pages are resident from the start: zeroed
/// memory from the allocator is often not yet backed, and each page a new worst latency
/// reached first would be another step in the process's memory.
pub fn histogram_up_to(high_us: u64) -> Histogram {
    let mut h =
        Histogram::new_with_bounds(HIST_LOWEST_US, high_us.max(INITIAL_HIGH_US), HIST_SIGFIG)
            .expect("fixed histogram layout is valid");
    h.auto(true);
    h.reset();
    h
}

/// Record `us` (at least 1). `saturating_record` would clamp at the current high bound
/// instead of growing, so use `record`, which auto-resizes.
pub fn record(h: &mut Histogram, us: u64) {
    if h.record(us.max(1)).is_err() {
        h.saturating_record(us.max(1));
    }
}

/// What `now` gained since `before`, for a histogram that only grows: `now - before`, or `now`
/// whole when `before` holds a value `now` lacks (the histogram was started again, as a live
/// total is at a new level). Used once a second, so it subtracts in place.
pub fn grown_since(now: &Histogram, before: &Histogram) -> Histogram {
    let mut d = now.clone();
    if d.subtract(before).is_err() {
        d = now.clone();
    }
    d
}

/// `a` less `b`, where every value recorded in `b` was recorded in `a` too: what recording the
/// remaining values directly gives. Rebuilt rather than subtracted in place, so its size is
/// the one direct recording gives and `==` (which compares sizes) holds. The engine records
/// the few failed or retried attempts and derives the common histograms at the level's end
/// (`engine/stripe.rs`).
pub fn difference(a: &Histogram, b: &Histogram) -> Histogram {
    let mut rest = a.clone();
    rest.subtract(b)
        .expect("every value of the subtrahend was recorded in the minuend");
    let mut out = new_histogram();
    for v in rest.iter_recorded() {
        // The bucket's highest value lands in the same bucket, and grows `out` as far as the
        // bucket's first value would.
        let (value, count) = (v.value_iterated_to(), v.count_at_value());
        if out.record_n(value, count).is_err() {
            out.saturating_record_n(value, count);
        }
    }
    out
}

/// The HdrHistogram interchange string of `h`: V2, DEFLATE-compressed, standard base64 (the
/// payload of an interval-log line; it begins `HISTF`). Fails only for a histogram too large
/// for the V2 header.
pub fn to_base64(h: &Histogram) -> Result<String, String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| e.to_string())?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// The inverse of [`to_base64`], refusing any layout but hubload's (so the result adds to any
/// hubload histogram), with auto-resize on again. The error says what is wrong.
pub fn from_base64(b64: &str) -> Result<Histogram, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let mut h: Histogram = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e}"))?;
    if h.low() != HIST_LOWEST_US || h.sigfig() != HIST_SIGFIG {
        return Err(format!(
            "layout is lowest {} µs, {} digits; hubload merges only lowest {HIST_LOWEST_US} µs, {HIST_SIGFIG} digits",
            h.low(),
            h.sigfig()
        ));
    }
    // The encoding does not carry the auto-resize flag; every hubload histogram has it.
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_beyond_the_initial_bound_exactly_enough() {
        let mut h = new_histogram();
        record(&mut h, 5);
        record(&mut h, 3_600_000_000); // one hour
        assert_eq!(h.len(), 2);
        assert!(
            h.max() >= 3_600_000_000 && h.max() < 3_604_000_000,
            "{}",
            h.max()
        );
        assert_eq!(h.min(), 5);
    }

    /// A histogram sized for 10 s holds 10 s without growing, still grows past it, and adds
    /// to a grown one (and back) exactly: the same buckets, count, min and max as one that
    /// recorded every value itself, whatever the two sizes.
    #[test]
    fn sized_histograms_add_exactly_to_grown_ones() {
        let mut sized = histogram_up_to(10_000_000);
        let size = sized.distinct_values();
        assert_eq!(size, 15 * 1024, "15 buckets of 1,024 counts for 10 s");
        for v in [1, 17, 9_999_999] {
            record(&mut sized, v);
        }
        assert_eq!(sized.distinct_values(), size, "10 s fits without growing");
        let mut grown = new_histogram();
        for v in [5, 40_000, 60_000_000] {
            record(&mut grown, v);
        }
        let mut one = new_histogram();
        for v in [1, 17, 9_999_999, 5, 40_000, 60_000_000] {
            record(&mut one, v);
        }
        let buckets = |h: &Histogram| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        let summary = |h: &Histogram| (h.len(), h.min(), h.max(), h.value_at_quantile(0.5));
        let mut a = sized.clone();
        a.add(&grown).expect("same layout");
        let mut b = grown.clone();
        b.add(&sized).expect("same layout");
        for merged in [&a, &b] {
            assert_eq!(buckets(merged), buckets(&one));
            assert_eq!(summary(merged), summary(&one));
        }
        // Through the report encoding too (a shard's summary read back and merged).
        let mut c = from_base64(&to_base64(&sized).unwrap()).unwrap();
        c.add(from_base64(&to_base64(&grown).unwrap()).unwrap())
            .expect("same layout");
        assert_eq!(buckets(&c), buckets(&one));
        assert_eq!(summary(&c), summary(&one));
        // Past the sized bound it still grows.
        record(&mut sized, 3_600_000_000);
        assert!(sized.max() >= 3_600_000_000 && sized.distinct_values() > size);
    }

    /// Recording everything, then taking a part away, equals recording the rest directly:
    /// every bucket, the count, min, max and size (`==` both ways). (Not the V2 encoding: its
    /// header names the value that last grew the histogram, which depends on the order of
    /// recording even for the same values.)
    #[test]
    fn difference_equals_recording_the_rest() {
        let mut rng = hubload_rng::SplitMix64::for_event(7, 0);
        for (n, spread) in [(0u64, 1u64), (1, 10), (500, 1_000), (20_000, 50_000_000)] {
            let (mut all, mut part, mut rest) = (new_histogram(), new_histogram(), new_histogram());
            for i in 0..n {
                let v = 1 + rng.below(spread);
                record(&mut all, v);
                // The largest values in the part too, so the rest must shrink to fit.
                if i % 3 == 0 || v > spread / 2 {
                    record(&mut part, v);
                } else {
                    record(&mut rest, v);
                }
            }
            let d = difference(&all, &part);
            // Both ways: hdrhistogram's `==` reads only the left side's buckets.
            assert_eq!(&d, &rest, "{n} values up to {spread}");
            assert_eq!(&rest, &d, "{n} values up to {spread}");
            assert_eq!(
                (d.len(), d.min(), d.max()),
                (rest.len(), rest.min(), rest.max())
            );
            let buckets = |h: &Histogram| {
                h.iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(buckets(&d), buckets(&rest));
            assert_eq!(difference(&all, &new_histogram()), all);
        }
    }
}
