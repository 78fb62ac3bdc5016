//! A small inline-SVG chart kit (line charts and stacked bars with axes, ticks and a legend).
//!
//! No scripts and no external resources: every chart is one `<svg>` element that the
//! HTML reports embed. All text is escaped, and the markup is well-formed XML so tests can
//! parse it. Hover tooltips use SVG `<title>` elements, which browsers show without scripts.

use std::fmt::Write;

/// The drawing size of every chart; the page scales it with CSS (`viewBox`).
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 340.0;
const LEFT: f64 = 68.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 40.0;
/// Room for the x tick labels, the x-axis title and one or two legend rows.
const BOTTOM: f64 = 86.0;
/// Approximate width of one character of 12 px sans-serif text, for legend layout.
const CHAR_W: f64 = 6.8;

/// Escape text for HTML and SVG (element content and quoted attribute values).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML; drop them rather than break the page.
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// The horizontal axis of a line chart.
#[derive(Debug, Clone)]
pub enum XAxis {
    /// Evenly spaced labelled bands (one per level); a point's x is its band index.
    Categories(Vec<String>),
    /// A numeric axis from 0 to `max`.
    Linear { max: f64 },
    /// Percentiles on a log "nines" scale: x = −log10(1 − p), labelled 0%, 90%, 99%, … up
    /// to `max` nines (5 = 99.999%).
    Nines { max: u32 },
}

/// The percentile label of a nines value: 0 → `0%`, 1 → `90%`, 3 → `99.9%`.
pub fn nines_label(n: f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-n));
    let s = format!("{pct:.5}");
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Any CSS colour.
    pub color: &'static str,
    /// `(x, y)` points in order; `None` breaks the line (a gap in the data).
    pub points: Vec<Option<(f64, f64)>>,
    /// Draw a dot (with a tooltip) at every point.
    pub markers: bool,
    /// Draw the line dashed.
    pub dashed: bool,
}

/// A labelled vertical line (e.g. where one level ends and the next begins).
#[derive(Debug, Clone)]
pub struct Separator {
    /// Position on the x axis.
    pub x: f64,
    /// Short text drawn at the top of the line.
    pub label: String,
}

/// A line chart with one y axis.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// `id` attribute of the `<svg>` element.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Unit appended in tooltips (e.g. "ms").
    pub unit: String,
    pub x: XAxis,
    pub series: Vec<Series>,
    pub separators: Vec<Separator>,
    /// Canvas width in SVG units (default 640); wider charts keep their text size when the
    /// page stretches them across the full width.
    pub width: Option<f64>,
    /// A logarithmic y axis (whole decades), for latencies that span orders of magnitude.
    pub log_y: bool,
}

/// One stacked component of a bar chart: a value per category.
#[derive(Debug, Clone)]
pub struct Segment {
    pub name: String,
    pub color: &'static str,
    /// One value per category, in category order.
    pub values: Vec<f64>,
}

/// A stacked bar chart: one bar per category, one stacked segment per component.
#[derive(Debug, Clone)]
pub struct StackedBars {
    /// `id` attribute of the `<svg>` element.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub segments: Vec<Segment>,
    /// Scale every bar to 100 % (shares instead of counts).
    pub percent: bool,
}

/// True when positive values span at least two decades, so a log axis reads better.
pub fn spans_decades(series: &[Series]) -> bool {
    let ys = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().flatten().map(|p| p.1))
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let max = ys().fold(0.0, f64::max);
    let min = ys().fold(f64::INFINITY, f64::min);
    min.is_finite() && max / min >= 100.0
}

/// Round ticks from 0 covering `max`: a step of 1, 2, 2.5 or 5 × 10ⁿ.
pub fn nice_ticks(max: f64, target: usize) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// A tick label: integers plainly, thousands as "k", millions as "M", fractions to 2 places.
pub fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if (scaled - scaled.round()).abs() < 1e-9 {
        format!("{}", scaled.round() as i64)
    } else if scaled.abs() < 1.0 {
        format!("{}", round_sig(scaled))
    } else {
        let s = format!("{scaled:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{s}{suffix}")
}

/// A value for a tooltip: up to 3 significant decimals, trimmed.
fn fmt_value(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The plotting frame shared by both chart kinds: canvas width and the y scale.
struct Frame {
    width: f64,
    y_ticks: Vec<f64>,
    /// Logarithmic y axis: `y_lo..y_hi` are then powers of ten.
    log: bool,
    y_lo: f64,
    y_hi: f64,
}

impl Frame {
    /// A linear frame from 0 to a round value above `max`.
    fn linear(width: f64, max: f64) -> Self {
        let y_ticks = nice_ticks(max, 5);
        let y_hi = *y_ticks.last().unwrap_or(&1.0);
        Frame {
            width,
            y_ticks,
            log: false,
            y_lo: 0.0,
            y_hi,
        }
    }

    /// A log frame covering `[min, max]` (both > 0) in whole decades.
    fn log(width: f64, min: f64, max: f64) -> Self {
        let lo = min.log10().floor() as i32;
        let hi = (max.log10().ceil() as i32).max(lo + 1);
        let mantissas: &[f64] = if hi - lo <= 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut y_ticks = Vec::new();
        for e in lo..=hi {
            for m in mantissas {
                let v = round_sig(m * 10f64.powi(e));
                if v <= 10f64.powi(hi) {
                    y_ticks.push(v);
                }
            }
        }
        Frame {
            width,
            y_ticks,
            log: true,
            y_lo: 10f64.powi(lo),
            y_hi: 10f64.powi(hi),
        }
    }

    fn plot_w(&self) -> f64 {
        self.width - LEFT - RIGHT
    }
    fn plot_h(&self) -> f64 {
        HEIGHT - TOP - BOTTOM
    }
    fn bottom(&self) -> f64 {
        TOP + self.plot_h()
    }
    fn y(&self, v: f64) -> f64 {
        let frac = if self.log {
            let v = v.max(self.y_lo);
            (v.log10() - self.y_lo.log10()) / (self.y_hi.log10() - self.y_lo.log10())
        } else {
            v / self.y_hi
        };
        TOP + self.plot_h() * (1.0 - frac.clamp(0.0, 1.0))
    }

    fn open(&self, out: &mut String, id: &str, title: &str) {
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{id}" viewBox="0 0 {w} {HEIGHT}" role="img"><title>{title}</title>"#,
            id = escape(id),
            w = self.width,
            title = escape(title),
        );
        let _ = write!(
            out,
            r#"<text class="chart-title" x="{x}" y="22" text-anchor="middle">{title}</text>"#,
            x = self.width / 2.0,
            title = escape(title)
        );
    }

    /// Horizontal grid lines, y tick labels, the y-axis title and the axis lines.
    fn y_axis(&self, out: &mut String, y_label: &str) {
        let right = self.width - RIGHT;
        for t in &self.y_ticks {
            let y = self.y(*t);
            let _ = write!(
                out,
                r#"<line class="grid" x1="{LEFT}" y1="{y:.1}" x2="{right}" y2="{y:.1}"/><text class="tick" x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"#,
                tx = LEFT - 6.0,
                ty = y + 4.0,
                label = escape(&fmt_tick(*t)),
            );
        }
        let cy = TOP + self.plot_h() / 2.0;
        let _ = write!(
            out,
            r#"<text class="axis-title" x="16" y="{cy:.1}" text-anchor="middle" transform="rotate(-90 16 {cy:.1})">{}</text>"#,
            escape(y_label)
        );
        let bottom = self.bottom();
        let _ = write!(
            out,
            r#"<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/><line class="axis" x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}"/>"#,
        );
    }

    /// The width of one category band.
    fn band(&self, n: usize) -> f64 {
        self.plot_w() / n.max(1) as f64
    }

    /// Category labels under the plot, thinned so they never overlap.
    fn category_labels(&self, out: &mut String, categories: &[String]) {
        let band = self.band(categories.len());
        let widest = categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(1) as f64
            * CHAR_W
            + 8.0;
        let every = (widest / band).ceil().max(1.0) as usize;
        let y = self.bottom() + 16.0;
        for (i, c) in categories.iter().enumerate() {
            if i % every != 0 {
                continue;
            }
            let x = LEFT + band * (i as f64 + 0.5);
            let _ = write!(
                out,
                r#"<text class="tick" x="{x:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#,
                escape(c)
            );
        }
    }

    fn x_title(&self, out: &mut String, label: &str) {
        let _ = write!(
            out,
            r#"<text class="axis-title" x="{x:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#,
            escape(label),
            x = LEFT + self.plot_w() / 2.0,
            y = self.bottom() + 34.0,
        );
    }

    /// Legend entries in rows under the x-axis title.
    fn legend(&self, out: &mut String, entries: &[(&str, &str, bool)]) {
        let mut x = LEFT;
        let mut y = self.bottom() + 54.0;
        for (name, color, dashed) in entries {
            let w = 22.0 + name.chars().count() as f64 * CHAR_W + 14.0;
            if x + w > self.width - RIGHT && x > LEFT {
                x = LEFT;
                y += 17.0;
            }
            let dash = if *dashed {
                r#" stroke-dasharray="4 3""#
            } else {
                ""
            };
            let _ = write!(
                out,
                r#"<g class="legend-item"><line x1="{x:.1}" y1="{ly:.1}" x2="{x2:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="6"{dash}/><text class="legend" x="{tx:.1}" y="{ty:.1}">{name}</text></g>"#,
                ly = y - 4.0,
                x2 = x + 16.0,
                tx = x + 22.0,
                ty = y,
                color = escape(color),
                name = escape(name),
            );
            x += w;
        }
    }
}

/// Round to 6 significant digits (so 5 × 10⁻³ prints as 0.005, not 0.005000000000000001).
fn round_sig(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(5 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

impl LineChart {
    /// Render the chart as one `<svg>` element.
    pub fn render(&self) -> String {
        let ys = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter().flatten().map(|p| p.1))
                .filter(|v| v.is_finite())
        };
        let y_max = ys().fold(0.0, f64::max);
        let y_min_pos = ys().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let width = self.width.unwrap_or(WIDTH);
        let f = if self.log_y && y_min_pos.is_finite() && y_max > y_min_pos {
            Frame::log(width, y_min_pos, y_max)
        } else {
            Frame::linear(width, y_max)
        };
        let mut out = String::new();
        f.open(&mut out, &self.id, &self.title);
        f.y_axis(&mut out, &self.y_label);
        let x_of: Box<dyn Fn(f64) -> f64> = match &self.x {
            XAxis::Categories(c) => {
                let band = f.band(c.len());
                f.category_labels(&mut out, c);
                Box::new(move |i| LEFT + band * (i + 0.5))
            }
            XAxis::Linear { max } => {
                let ticks = nice_ticks(*max, (width / 80.0) as usize);
                let top = *ticks.last().unwrap_or(&1.0);
                let scale = f.plot_w() / top;
                let y = f.bottom() + 16.0;
                for t in &ticks {
                    let _ = write!(
                        out,
                        r#"<text class="tick" x="{x:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#,
                        escape(&fmt_tick(*t)),
                        x = LEFT + t * scale,
                    );
                }
                Box::new(move |v| LEFT + v * scale)
            }
            XAxis::Nines { max } => {
                let scale = f.plot_w() / f64::from((*max).max(1));
                let y = f.bottom() + 16.0;
                for n in 0..=*max {
                    let _ = write!(
                        out,
                        r#"<line class="grid" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{b:.1}"/><text class="tick" x="{x:.1}" y="{y:.1}" text-anchor="{anchor}">{}</text>"#,
                        escape(&nines_label(f64::from(n))),
                        // The last label ends at the axis end, inside the canvas.
                        anchor = if n == *max { "end" } else { "middle" },
                        x = LEFT + f64::from(n) * scale,
                        b = f.bottom(),
                    );
                }
                Box::new(move |v| LEFT + v * scale)
            }
        };
        f.x_title(&mut out, &self.x_label);
        for s in &self.separators {
            let x = x_of(s.x);
            let _ = write!(
                out,
                r#"<line class="separator" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{b:.1}"/><text class="separator-label" x="{tx:.1}" y="{ty}">{}</text>"#,
                escape(&s.label),
                b = f.bottom(),
                tx = x + 3.0,
                ty = TOP + 11.0,
            );
        }
        for s in &self.series {
            self.polylines(&mut out, s, &f, &*x_of);
        }
        let entries: Vec<_> = self
            .series
            .iter()
            .map(|s| (s.name.as_str(), s.color, s.dashed))
            .collect();
        f.legend(&mut out, &entries);
        out.push_str("</svg>");
        out
    }

    fn polylines(&self, out: &mut String, s: &Series, f: &Frame, x_of: &dyn Fn(f64) -> f64) {
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        for run in s.points.split(Option::is_none) {
            let pts: Vec<String> = run
                .iter()
                .flatten()
                .filter(|(_, y)| y.is_finite())
                .map(|(x, y)| format!("{:.1},{:.1}", x_of(*x), f.y(*y)))
                .collect();
            if pts.len() > 1 {
                let _ = write!(
                    out,
                    r#"<polyline class="line" fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
                    escape(s.color),
                    pts.join(" ")
                );
            }
        }
        if s.markers {
            for (x, y) in s.points.iter().flatten().filter(|(_, y)| y.is_finite()) {
                let at = match &self.x {
                    XAxis::Categories(c) => c.get(*x as usize).cloned().unwrap_or_default(),
                    XAxis::Linear { .. } => fmt_value(*x),
                    XAxis::Nines { .. } => nines_label(*x),
                };
                let _ = write!(
                    out,
                    r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3.5" fill="{color}"><title>{name} at {at}: {v} {unit}</title></circle>"#,
                    cx = x_of(*x),
                    cy = f.y(*y),
                    color = escape(s.color),
                    name = escape(&s.name),
                    at = escape(&at),
                    v = fmt_value(*y),
                    unit = escape(&self.unit),
                );
            }
        }
    }
}

impl StackedBars {
    /// Render the chart as one `<svg>` element.
    pub fn render(&self) -> String {
        let totals: Vec<f64> = (0..self.categories.len())
            .map(|i| {
                self.segments
                    .iter()
                    .map(|s| s.values.get(i).copied().unwrap_or(0.0))
                    .sum()
            })
            .collect();
        let max = if self.percent {
            100.0
        } else {
            totals.iter().copied().fold(0.0, f64::max)
        };
        let f = Frame::linear(WIDTH, max);
        let mut out = String::new();
        f.open(&mut out, &self.id, &self.title);
        f.y_axis(&mut out, &self.y_label);
        f.category_labels(&mut out, &self.categories);
        f.x_title(&mut out, &self.x_label);
        let band = f.band(self.categories.len());
        let bar_w = (band * 0.62).min(90.0);
        for (i, cat) in self.categories.iter().enumerate() {
            let total = totals[i];
            let x = LEFT + band * (i as f64 + 0.5) - bar_w / 2.0;
            let mut acc = 0.0;
            for s in &self.segments {
                let v = s.values.get(i).copied().unwrap_or(0.0);
                if v <= 0.0 || total <= 0.0 {
                    continue;
                }
                let shown = if self.percent { v / total * 100.0 } else { v };
                let (y0, y1) = (f.y(acc), f.y(acc + shown));
                acc += shown;
                let _ = write!(
                    out,
                    r#"<rect x="{x:.1}" y="{y1:.1}" width="{bar_w:.1}" height="{h:.2}" fill="{color}"><title>{cat}: {name} {v} ({pct:.2}%)</title></rect>"#,
                    h = (y0 - y1).max(0.0),
                    color = escape(s.color),
                    cat = escape(cat),
                    name = escape(&s.name),
                    v = fmt_value(v),
                    pct = v / total * 100.0,
                );
            }
        }
        let entries: Vec<_> = self
            .segments
            .iter()
            .map(|s| (s.name.as_str(), s.color, false))
            .collect();
        f.legend(&mut out, &entries);
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests;
