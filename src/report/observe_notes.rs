//! The lines the table adds below its rows for the observers: the generator-bound mark's
//! footnote per level, and the knee's correlated server series.

use crate::report::document::Report;

/// The mark put after a generator-bound level's label.
pub const BOUND_MARK: &str = "*";

/// The label as the table shows it: marked when the level was generator-bound.
pub fn marked_label(label: &str, bound: Option<bool>) -> String {
    match bound {
        Some(true) => format!("{label}{BOUND_MARK}"),
        _ => label.to_string(),
    }
}

/// The footnotes (one line each), empty when there is nothing to say.
pub fn notes(report: &Report) -> String {
    let mut out = String::new();
    for l in &report.levels {
        if let Some(n) = l
            .generator
            .as_ref()
            .and_then(|g| g.late_sends)
            .filter(|&n| n > 0)
        {
            out.push_str(&format!(
                "{}: {n} of {} sends started {} ms or more after their intended time \
                 (their latency counts from the intended time)\n",
                l.label,
                l.derived.events.total,
                crate::stats::LATE_SEND.as_millis()
            ));
        }
        let Some(g) = l
            .generator
            .as_ref()
            .filter(|_| l.generator_bound == Some(true))
        else {
            continue;
        };
        out.push_str(&format!(
            "{BOUND_MARK} {}: generator-bound ({}): these latencies measure hubload, not the server\n",
            l.label,
            g.bound_because.join("; ")
        ));
    }
    if let Some(k) = &report.knee {
        out.push_str(&format!("knee: {}\n", k.line()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::build::level_report;
    use crate::report::model::observations::GeneratorLevel;
    use crate::stats::LevelStats;

    #[test]
    fn only_bound_levels_get_a_footnote() {
        let mut r = crate::report::html::tests::sample();
        let light = level_report("10/s", None, Some(10.0), &LevelStats::default(), true);
        let mut heavy = level_report("40000/s", None, Some(40000.0), &LevelStats::default(), true);
        heavy.generator_bound = Some(true);
        heavy.generator = Some(GeneratorLevel {
            bound_because: vec!["CPU 99 % of 0.20 cores (cgroup v1)".into()],
            ..GeneratorLevel::default()
        });
        r.levels = vec![light, heavy];
        r.knee = None;
        assert_eq!(
            notes(&r),
            "* 40000/s: generator-bound (CPU 99 % of 0.20 cores (cgroup v1)): these latencies measure hubload, not the server\n"
        );
        assert_eq!(marked_label("40000/s", Some(true)), "40000/s*");
        assert_eq!(marked_label("10/s", Some(false)), "10/s");
    }
}
