//! Latencies for eyes: milliseconds with three significant digits (`0.214`, `12.3`, `1204`).
//!
//! The terminal table and the HTML use this; `aggregate.csv` keeps JMeter's whole milliseconds.

use crate::report::model::LevelReport;

/// `us` microseconds as milliseconds with three significant digits, never fewer than the
/// microsecond: below 1 ms three decimals (`0.214`, `0.045`), then `1.23`, `12.3`, and whole
/// milliseconds from 100 ms on (`123`, `1204`).
pub fn ms3(us: f64) -> String {
    let ms = us / 1000.0;
    // Thresholds on the rounded value, so 99.96 ms reads `100`, not `100.0`.
    let decimals = if ms >= 99.95 {
        0
    } else if ms >= 9.995 {
        1
    } else if ms >= 0.9995 {
        2
    } else {
        3
    };
    format!("{ms:.decimals$}")
}

/// Average, median, p90, p95, p99, min and max of a row, each as [`ms3`].
pub fn latency_cells(r: &LevelReport) -> [String; 7] {
    let l = &r.derived.latency_us;
    [
        ms3(l.mean),
        ms3(l.p50 as f64),
        ms3(l.p90 as f64),
        ms3(l.p95 as f64),
        ms3(l.p99 as f64),
        ms3(l.min as f64),
        ms3(l.max as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::ms3;

    #[test]
    fn three_significant_digits_in_ms() {
        let cases = [
            (0.0, "0.000"),
            (1.0, "0.001"),
            (45.0, "0.045"),
            (214.0, "0.214"),
            (999.0, "0.999"),
            (999.6, "1.00"),
            (1234.0, "1.23"),
            (9994.0, "9.99"),
            (9996.0, "10.0"),
            (12_340.0, "12.3"),
            (99_940.0, "99.9"),
            (99_960.0, "100"),
            (123_400.0, "123"),
            (1_204_000.0, "1204"),
            (1_204_499.0, "1204"),
        ];
        for (us, want) in cases {
            assert_eq!(ms3(us), want, "{us} µs");
        }
    }
}
