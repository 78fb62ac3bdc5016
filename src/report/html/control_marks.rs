//! The control API's changes (`--web`: pause, resume, rate, …) as marks on the time chart:
//! where in a level's seconds each one happened.

use super::svg::Separator;
use crate::report::document::Report;
use crate::report::model::LevelReport;

/// The marks of `level`'s changes, its second 0 drawn at `offset` on the chart's x axis.
pub fn marks(report: &Report, level: &LevelReport, offset: f64) -> Vec<Separator> {
    let origin_us = level.stats.seconds.origin_us.or(level.stats.first_start_us);
    let Some(origin_us) = origin_us else {
        return Vec::new();
    };
    let span = level.stats.timeline.len() as f64;
    report
        .control
        .iter()
        .filter(|e| e.level == level.label)
        .map(|e| {
            let s = (e.at_unix_ms as f64 * 1000.0 - origin_us as f64) / 1e6;
            Separator {
                x: offset + s.clamp(0.0, span),
                label: match e.value {
                    Some(v) => format!("{} {v}", e.action),
                    None => e.action.clone(),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ControlEvent;

    #[test]
    fn a_change_is_marked_at_its_second_of_its_level() {
        let mut report = crate::report::document::Report::new_empty(
            crate::kind::Model::Open,
            serde_json::Value::Null,
            Vec::new(),
        );
        let mut level = crate::report::model::build::level_report(
            "200/s",
            None,
            Some(200.0),
            &Default::default(),
            true,
        );
        level.stats.first_start_us = Some(1_000_000_000);
        level.stats.timeline = vec![Default::default(); 10];
        let event = |action: &str, ms: u64, label: &str| ControlEvent {
            at: String::new(),
            at_unix_ms: ms,
            action: action.into(),
            value: (action == "rate").then_some(400.0),
            level: label.into(),
            client: "127.0.0.1:1".into(),
        };
        report.control = vec![
            event("rate", 1_000_000 + 4_500, "200/s"),
            event("pause", 1_000_000 + 2_000, "400/s"),
        ];
        let m = marks(&report, &level, 30.0);
        assert_eq!(m.len(), 1, "only this level's change");
        assert_eq!((m[0].x, m[0].label.as_str()), (34.5, "rate 400"));
    }
}
