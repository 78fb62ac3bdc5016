//! Tests of the SVG kit: escaping, ticks, log frames, gaps and stacked percentages.

use super::*;

#[test]
fn escapes_markup_and_quotes() {
    assert_eq!(
        escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
    );
    assert_eq!(escape("bell\u{7}"), "bell");
}

#[test]
fn ticks_are_round_and_cover_the_max() {
    assert_eq!(nice_ticks(9.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    assert_eq!(
        nice_ticks(100.0, 5),
        vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    );
    assert_eq!(
        nice_ticks(0.0, 5),
        vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    );
    assert_eq!(nice_ticks(12.0, 5), vec![0.0, 2.5, 5.0, 7.5, 10.0, 12.5]);
    let t = nice_ticks(5123.0, 5);
    assert_eq!(t.last(), Some(&6000.0));
}

#[test]
fn tick_labels() {
    assert_eq!(fmt_tick(0.0), "0");
    assert_eq!(fmt_tick(2.5), "2.5");
    assert_eq!(fmt_tick(1500.0), "1500");
    assert_eq!(fmt_tick(25_000.0), "25k");
    assert_eq!(fmt_tick(2_500_000.0), "2.5M");
}

#[test]
fn gaps_split_polylines() {
    let chart = LineChart {
        id: "c".into(),
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        unit: "ms".into(),
        x: XAxis::Linear { max: 10.0 },
        series: vec![Series {
            name: "mean".into(),
            color: "#000",
            points: vec![
                Some((0.0, 1.0)),
                Some((1.0, 2.0)),
                None,
                Some((3.0, 1.0)),
                Some((4.0, 3.0)),
                Some((5.0, 1.0)),
            ],
            markers: false,
            dashed: false,
        }],
        separators: vec![],
        width: None,
        log_y: false,
    };
    let svg = chart.render();
    assert_eq!(svg.matches("<polyline").count(), 2);
}

#[test]
fn log_frame_spans_whole_decades() {
    let f = Frame::log(640.0, 1.9, 5011.0);
    assert_eq!(f.y_ticks, vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
    // Each decade gets the same height; values below the floor sit on the axis.
    let decade = f.y(10.0) - f.y(100.0);
    assert!((f.y(1000.0) - f.y(10000.0) - decade).abs() < 1e-9);
    assert_eq!(f.y(0.0), f.bottom());
    assert_eq!(f.y(10000.0), TOP);
    let narrow = Frame::log(640.0, 0.004, 0.3);
    assert_eq!(
        narrow.y_ticks,
        vec![0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    );
    assert_eq!(fmt_tick(0.005), "0.005");
}

#[test]
fn percent_bars_fill_the_plot() {
    let bars = StackedBars {
        id: "b".into(),
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        categories: vec!["1".into(), "2".into()],
        segments: vec![
            Segment {
                name: "ok".into(),
                color: "green",
                values: vec![3.0, 0.0],
            },
            Segment {
                name: "bad".into(),
                color: "red",
                values: vec![1.0, 5.0],
            },
        ],
        percent: true,
    };
    let svg = bars.render();
    // Zero segments are not drawn: three rectangles.
    assert_eq!(svg.matches("<rect").count(), 3);
    assert!(svg.contains("1: bad 1 (25.00%)"), "{svg}");
    assert!(svg.contains("2: bad 5 (100.00%)"), "{svg}");
}
