//! The Prometheus text exposition format, parsed tolerantly: samples with their kind, and a
//! count of the lines that could not be read (skipped, never fatal).

use std::collections::BTreeMap;

/// What a series counts, from its family's `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Only goes up (resets to zero on a restart): per level, a delta and a rate.
    Counter,
    /// Goes up and down: per level, min, mean, max and last.
    Gauge,
    /// No `# TYPE` (or one we do not know): both views.
    Untyped,
}

impl Kind {
    /// The name in server.csv and summary.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Untyped => "untyped",
        }
    }
}

/// One sample of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric name.
    pub name: String,
    /// The labels as `{k="v",…}`, sorted by name; empty without labels.
    pub labels: String,
    pub kind: Kind,
    pub value: f64,
}

/// A parsed scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// Lines that were neither a comment, blank, nor a readable sample.
    pub malformed: u64,
}

/// Parse `text`. `keep` decides by metric name which samples are kept (`--server-metrics-match`).
pub fn parse(text: &str, keep: impl Fn(&str) -> bool) -> Exposition {
    // Family name → its `# TYPE` word.
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Exposition::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            if let (Some("TYPE"), Some(family), Some(kind)) =
                (words.next(), words.next(), words.next())
            {
                types.insert(family.to_string(), kind.to_string());
            }
            continue;
        }
        match sample_line(line) {
            Some((name, labels, value)) => {
                if !keep(name) {
                    continue;
                }
                let kind = kind_of(&types, name);
                out.samples.push(Sample {
                    name: name.to_string(),
                    labels,
                    kind,
                    value,
                });
            }
            None => out.malformed += 1,
        }
    }
    out
}

/// The kind of sample `name` from the `# TYPE` words seen so far: a histogram's or summary's
/// `_bucket`, `_sum` and `_count` count up (counters), a summary's quantile lines are gauges.
fn kind_of(types: &BTreeMap<String, String>, name: &str) -> Kind {
    if let Some(t) = types.get(name) {
        return match t.as_str() {
            "counter" => Kind::Counter,
            "gauge" | "summary" => Kind::Gauge,
            _ => Kind::Untyped,
        };
    }
    for suffix in ["_bucket", "_sum", "_count", "_total", "_created"] {
        let Some(t) = name.strip_suffix(suffix).and_then(|f| types.get(f)) else {
            continue;
        };
        return match t.as_str() {
            "counter" | "histogram" | "summary" => Kind::Counter,
            "gauge" | "gaugehistogram" => Kind::Gauge,
            _ => Kind::Untyped,
        };
    }
    Kind::Untyped
}

/// `name{labels} value [timestamp]` → name, sorted labels, value; `None` when unreadable.
fn sample_line(line: &str) -> Option<(&str, String, f64)> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if !valid_name(name) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if rest.starts_with('{') {
        let (parsed, after) = label_set(&rest[1..])?;
        labels = parsed;
        rest = after;
    }
    let mut fields = rest.split_whitespace();
    let value = number(fields.next()?)?;
    // An optional timestamp (ms), then nothing.
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    labels.sort();
    Some((name, label_text(&labels), value))
}

/// Sorted labels as server.csv writes them: `{k="v",…}`, empty without labels.
pub fn label_text(labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The labels after `{` up to the matching `}`, and the rest of the line.
fn label_set(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim();
        if !valid_name(key) {
            return None;
        }
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                c => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        s = s[end + 1..].trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        }
    }
}

/// A label value as the exposition writes it (`\`, `"` and newlines escaped).
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: a float, or `+Inf`, `-Inf`, `NaN`.
fn number(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP hub_answers_total Hub requests.\n\
# TYPE hub_answers_total counter\n\
hub_answers_total{outcome=\"accepted\",mode=\"publish\"} 12\n\
hub_answers_total{mode=\"publish\",outcome=\"fault_502\"} 3 1700000000000\n\
# TYPE hub_inflight gauge\n\
hub_inflight 4\n\
# TYPE rpc_seconds histogram\n\
rpc_seconds_bucket{le=\"+Inf\"} 7\n\
rpc_seconds_sum 1.5e-1\n\
# TYPE q summary\n\
q{quantile=\"0.5\"} 0.2\n\
q_count 9\n\
no_type_here 1\n\
this is { not a sample\n\
broken{a=\"1\" 2\n\
weird_value NaNa\n";

    #[test]
    fn kinds_labels_and_malformed_lines() {
        let e = parse(TEXT, |_| true);
        assert_eq!(e.malformed, 3);
        let got: Vec<_> = e
            .samples
            .iter()
            .map(|s| (s.name.as_str(), s.labels.as_str(), s.kind, s.value))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "hub_answers_total",
                    "{mode=\"publish\",outcome=\"accepted\"}",
                    Kind::Counter,
                    12.0
                ),
                (
                    "hub_answers_total",
                    "{mode=\"publish\",outcome=\"fault_502\"}",
                    Kind::Counter,
                    3.0
                ),
                ("hub_inflight", "", Kind::Gauge, 4.0),
                ("rpc_seconds_bucket", "{le=\"+Inf\"}", Kind::Counter, 7.0),
                ("rpc_seconds_sum", "", Kind::Counter, 0.15),
                ("q", "{quantile=\"0.5\"}", Kind::Gauge, 0.2),
                ("q_count", "", Kind::Counter, 9.0),
                ("no_type_here", "", Kind::Untyped, 1.0),
            ]
        );
    }

    #[test]
    fn escaped_label_values_round_trip() {
        let e = parse("m{path=\"a\\\"b\\\\c\\nd\"} 1\n", |_| true);
        assert_eq!(e.malformed, 0);
        assert_eq!(e.samples[0].labels, "{path=\"a\\\"b\\\\c\\nd\"}");
    }

    #[test]
    fn keep_filters_by_name() {
        let e = parse(TEXT, |n| n.starts_with("hub_"));
        assert_eq!(e.samples.len(), 3);
        // Filtering does not hide malformed lines.
        assert_eq!(e.malformed, 3);
    }
}
