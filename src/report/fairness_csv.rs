//! `fairness.csv`: one row per level and tenant with its offered, designed and achieved share, its
//! goodput normalised by its offer, error % and p50/p99/max, beside the level's Jain index and
//! spreads (`levels[].fairness`; docs/fairness.md); with subscribers, its deliveries owed,
//! delivered and lost and their latency (`levels[].fairness.delivery`; empty without). A run
//! appends each level's rows as the level is done; `hubload report` writes the same bytes whole.

use super::Format;
use crate::report::document::Report;
use crate::report::model::LevelReport;

/// Writes `fairness.csv`.
#[derive(Debug, Default)]
pub struct FairnessCsvFormat;

const HEAD: [&str; 23] = [
    "Level",
    "Tenant",
    "Attempts",
    "Good",
    "Offered share",
    "Designed share",
    "Achieved share",
    "Achieved / offered",
    "Error %",
    "p50_us",
    "p99_us",
    "max_us",
    "p99 / median p99",
    "Level Jain index",
    "Level p99 spread",
    "Level error spread pp",
    "Deliveries expected",
    "Delivered",
    "Lost",
    "Loss %",
    "Delivery p50_us",
    "Delivery p99_us",
    "Delivery max_us",
];

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x:.6}"))
}

/// The file's name in the report directory.
pub const FILE_NAME: &str = "fairness.csv";

/// The header line, which a run starts the file with.
pub fn header() -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEAD)?;
    Ok(w.into_inner()?)
}

/// Level `l`'s rows, without the header: what a run appends once the level is done (nothing
/// for a level without fairness figures).
pub fn level_rows(l: &LevelReport) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let Some(f) = &l.fairness else {
        return Ok(Vec::new());
    };
    // Each tenant's delivery row by name: one lookup per row, not a scan of every tenant.
    let deliveries: std::collections::HashMap<&str, _> = f
        .delivery
        .iter()
        .flat_map(|d| &d.by_tenant)
        .map(|d| (d.tenant.as_str(), d))
        .collect();
    for t in &f.by_tenant {
        let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
        let d = deliveries.get(t.tenant.as_str());
        let delivery = d.map_or_else(
            || vec![String::new(); 7],
            |d| {
                vec![
                    d.expected.to_string(),
                    d.delivered.to_string(),
                    d.lost.to_string(),
                    format!("{:.3}", d.loss_pct),
                    d.p50_us.to_string(),
                    d.p99_us.to_string(),
                    d.max_us.to_string(),
                ]
            },
        );
        let publish = [
            l.label.clone(),
            t.tenant.clone(),
            t.attempts.to_string(),
            t.good.to_string(),
            format!("{:.6}", t.offered_share),
            opt(t.designed_share),
            format!("{:.6}", t.achieved_share),
            opt(ratio(t.achieved_share, t.offered_share)),
            format!("{:.3}", t.error_pct),
            t.p50_us.to_string(),
            t.p99_us.to_string(),
            t.max_us.to_string(),
            opt(ratio(t.p99_us as f64, f.median_p99_us as f64)),
            opt(f.jain_index),
            opt(f.p99_spread),
            format!("{:.3}", f.error_spread_pp),
        ];
        w.write_record(publish.into_iter().chain(delivery))?;
    }
    Ok(w.into_inner()?)
}

/// Render `fairness.csv` whole (the header alone when no level has fairness figures): the
/// bytes a run's appends add up to.
pub fn render_fairness_csv(report: &Report) -> anyhow::Result<Vec<u8>> {
    let mut out = header()?;
    for l in &report.levels {
        out.extend(level_rows(l)?);
    }
    Ok(out)
}

impl Format for FairnessCsvFormat {
    fn file_name(&self) -> &'static str {
        FILE_NAME
    }
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        render_fairness_csv(report)
    }
}

#[cfg(test)]
mod tests {
    use crate::fairness::figures;
    use crate::result::Class;
    use crate::stats::TopicStats;

    /// The html fixture with fairness figures on its first level: a served alone (10 of 10),
    /// b half (5 of 10), p99s 10 and 12 µs.
    fn sample() -> crate::report::document::Report {
        let mut r = crate::report::html::tests::sample();
        let mut a = TopicStats::default();
        let mut b = TopicStats::default();
        for i in 0..10 {
            a.record(Class::Accepted, 10);
            b.record(
                if i < 5 {
                    Class::Accepted
                } else {
                    Class::Http503
                },
                12,
            );
        }
        r.levels[0].fairness = figures(&[("a".into(), a), ("b".into(), b)]);
        r
    }

    #[test]
    fn one_row_per_level_and_tenant_with_the_levels_figures() {
        let r = sample();
        let csv = String::from_utf8(super::render_fairness_csv(&r).unwrap()).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        let l = &r.levels[0].label;
        assert_eq!(lines.len(), 3, "{csv}");
        // Offered ½ each; achieved 10/15 and 5/15; x = 4/3 and 2/3; Jain 0.9; spread 12/11.
        assert_eq!(
            lines[1],
            format!("{l},a,10,10,0.500000,,0.666667,1.333333,0.000,10,10,10,0.909091,0.900000,1.090909,25.000,,,,,,,")
        );
        assert_eq!(
            lines[2],
            format!("{l},b,10,5,0.500000,,0.333333,0.666667,50.000,12,12,12,1.090909,0.900000,1.090909,25.000,,,,,,,")
        );
        // A designed share, where the run knows it, beside the offered one.
        let mut designed = r.clone();
        designed.levels[0].fairness.as_mut().unwrap().by_tenant[0].designed_share = Some(0.75);
        let csv = String::from_utf8(super::render_fairness_csv(&designed).unwrap()).unwrap();
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .starts_with(&format!("{l},a,10,10,0.500000,0.750000,0.666667,")),
            "{csv}"
        );
        let table = crate::report::table::fairness::render_fairness_table(&r).unwrap();
        assert!(
            table.contains("0.900") && table.contains("1.09x"),
            "{table}"
        );
        assert!(table.contains("b 0.012 ms, a 0.010 ms"), "{table}");
        assert!(table.contains("b 50.00%"), "{table}");
        let html = crate::report::html::tenants::section(&r);
        assert_eq!(html.matches("<rect").count(), 2, "{html}");
        assert!(html.contains("Jain 0.900"), "{html}");
        assert!(!table.contains("Delivery between tenants"), "{table}");
        // With subscribers: a owed 4, all delivered at 10 µs; b owed 4, 2 lost, 20 µs.
        let mut with = r.clone();
        let lat = |us: u64, n: usize| {
            let mut s = TopicStats::default();
            (0..n).for_each(|_| s.record(Class::Accepted, us));
            s
        };
        let owed = |delivered| crate::fairness::delivery::Owed {
            expected: 4,
            delivered,
            lost: 4 - delivered,
        };
        with.levels[0].fairness.as_mut().unwrap().delivery =
            crate::fairness::delivery::delivery_figures(
                &[("a".into(), lat(10, 4)), ("b".into(), lat(20, 2))],
                &[("a".to_string(), owed(4)), ("b".to_string(), owed(2))].into(),
            );
        let csv = String::from_utf8(super::render_fairness_csv(&with).unwrap()).unwrap();
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .ends_with(",25.000,4,4,0,0.000,10,10,10"),
            "{csv}"
        );
        assert!(
            csv.lines()
                .nth(2)
                .unwrap()
                .ends_with(",25.000,4,2,2,50.000,20,20,20"),
            "{csv}"
        );
        let table = crate::report::table::fairness::render_fairness_table(&with).unwrap();
        assert!(table.contains("Delivery between tenants"), "{table}");
        assert!(table.contains("b 0.020 ms, a 0.010 ms"), "{table}");
        assert!(table.contains("b 50.00%"), "{table}");
        let html = crate::report::html::tenants::section(&with);
        assert!(
            html.contains("<td>b</td><td>4</td><td>2</td><td>50.00</td>"),
            "{html}"
        );
    }

    #[test]
    fn no_fairness_figures_give_headers_only_and_no_block() {
        let r = crate::report::html::tests::sample();
        let csv = String::from_utf8(super::render_fairness_csv(&r).unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 1);
        assert!(crate::report::table::fairness::render_fairness_table(&r).is_none());
        assert!(crate::report::html::tenants::section(&r).is_empty());
    }
}
