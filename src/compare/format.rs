//! The number formats of a comparison: values with units for people, plain numbers for the
//! CSV and HTML tables, and signed deltas.

use crate::report::judge::metric::Metric;

/// `v` with `decimals` places and an explicit sign; never "-0.0".
fn signed(v: f64, decimals: usize) -> String {
    let scale = 10f64.powi(decimals as i32);
    // Adding +0.0 turns a rounded -0.0 into +0.0.
    let r = (v * scale).round() / scale + 0.0;
    format!("{r:+.decimals$}")
}

/// A value with its unit, for people: "12.3 ms", "0.500%", "2000.0/s", "3" (a count).
pub fn value(m: Metric, v: f64) -> String {
    match m {
        Metric::Errors => format!("{v:.3}%"),
        Metric::Rate | Metric::DeliveredRate => format!("{v:.1}/s"),
        m if m.is_delivery_count() => format!("{v:.0}"),
        m if m.is_fairness() => format!("{v:.3}"),
        m if m.is_isolation() => format!("{v:.3}%"),
        _ => format!("{v:.1} ms"),
    }
}

/// An absolute delta with its unit: "+1.0 ms", "+1.000 pp", "-200.0/s", "+3".
pub fn delta_abs(m: Metric, d: f64) -> String {
    match m {
        Metric::Errors | Metric::QuietErrors | Metric::QuietDeliveryLoss => {
            format!("{} pp", signed(d, 3))
        }
        Metric::Rate | Metric::DeliveredRate => format!("{}/s", signed(d, 1)),
        m if m.is_delivery_count() => signed(d, 0),
        m if m.is_fairness() => signed(d, 3),
        Metric::QuietP99Increase | Metric::QuietDeliveryP99Increase => {
            format!("{} pp", signed(d, 3))
        }
        _ => format!("{} ms", signed(d, 1)),
    }
}

/// A delivery count as a share of the expected deliveries: "0.250%".
pub fn share(v: f64) -> String {
    format!("{v:.3}%")
}

/// A change of share, in percentage points: "+0.250 pp".
pub fn share_delta(d: f64) -> String {
    format!("{} pp", signed(d, 3))
}

/// A relative delta: "+10.00%", or "n/a" from a zero baseline.
pub fn delta_pct(p: Option<f64>) -> String {
    p.map_or_else(|| "n/a".to_string(), plain_pct)
}

/// A plain number for the CSV and the HTML table (units live in the header).
pub fn plain_value(m: Metric, v: f64) -> String {
    match m {
        Metric::Errors => format!("{v:.3}%"),
        m if m.is_delivery_count() => format!("{v:.0}"),
        _ => format!("{v:.1}"),
    }
}

/// A plain signed delta for the CSV and the HTML table.
pub fn plain_delta(m: Metric, d: f64) -> String {
    match m {
        Metric::Errors => signed(d, 3),
        m if m.is_delivery_count() => signed(d, 0),
        _ => signed(d, 1),
    }
}

/// A relative delta without "n/a": "+10.00%".
pub fn plain_pct(p: f64) -> String {
    format!("{}%", signed(p, 2))
}
