//! The observer flags (server metrics, PromQL queries, remote write, /metrics listener) →
//! `ObserveConfig`; URLs are kept as secrets, because their user info may hold a password.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use super::parse::{opt, positive_duration};
use super::ConfigError;
use crate::cli::RunArgs;
use crate::secret::Secret;

/// A URL that may carry credentials: used as given, shown as `host:port/path`.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedUrl {
    /// The whole URL; only the observers' HTTP client reads it.
    #[serde(skip)]
    pub url: Secret,
    /// `host:port/path`: what reports and messages show.
    pub shown: String,
}

/// An instant PromQL query evaluated on the scrape schedule.
#[derive(Debug, Clone, Serialize)]
pub struct ServerQuery {
    /// The series name its results get in server.csv.
    pub name: String,
    pub promql: String,
}

/// What the observers do; every part off by default.
#[derive(Debug, Clone, Serialize)]
pub struct ObserveConfig {
    /// `--server-metrics` pages.
    pub server_metrics: Vec<ObservedUrl>,
    /// Scrape interval within a level.
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub interval: Duration,
    /// `--server-metrics-match`: the series names kept.
    #[serde(serialize_with = "regex_text")]
    pub series_match: Option<regex::Regex>,
    /// `--prometheus-url`, for the queries.
    pub prometheus: Option<ObservedUrl>,
    pub queries: Vec<ServerQuery>,
    /// `--prometheus-remote-write`.
    pub remote_write: Option<ObservedUrl>,
    #[serde(with = "super::serialize::humantime_serde_str")]
    pub push_interval: Duration,
    /// `--push-label`, in the order given.
    pub push_labels: Vec<(String, String)>,
    /// `--metrics-listen`.
    pub metrics_listen: Option<SocketAddr>,
}

impl ObserveConfig {
    /// Whether the server is observed at all (scrapes or queries).
    pub fn scrapes(&self) -> bool {
        !self.server_metrics.is_empty() || !self.queries.is_empty()
    }
}

fn regex_text<S: serde::Serializer>(r: &Option<regex::Regex>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Some(r) => s.serialize_str(r.as_str()),
        None => s.serialize_none(),
    }
}

/// Resolve the observer flags.
pub(super) fn resolve(a: &RunArgs) -> Result<ObserveConfig, ConfigError> {
    let server_metrics = a
        .server_metrics
        .iter()
        .map(|u| observed_url("server-metrics", u))
        .collect::<Result<Vec<_>, _>>()?;
    let interval = match opt(&a.server_metrics_interval) {
        Some(v) => positive_duration("server-metrics-interval", v)?,
        None => Duration::from_secs(1),
    };
    let series_match = opt(&a.server_metrics_match)
        .map(|r| {
            regex::Regex::new(r).map_err(|e| {
                // The regex crate's message spans lines; one line names the flag.
                let first = e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                ConfigError::invalid("server-metrics-match", r, first)
            })
        })
        .transpose()?;
    let prometheus = opt(&a.prometheus_url)
        .map(|u| observed_url("prometheus-url", u))
        .transpose()?;
    let queries = a
        .server_query
        .iter()
        .map(|q| server_query(q))
        .collect::<Result<Vec<_>, _>>()?;
    if !queries.is_empty() && prometheus.is_none() {
        return Err(ConfigError::Conflict(
            "--server-query needs --prometheus-url".into(),
        ));
    }
    let remote_write = opt(&a.prometheus_remote_write)
        .map(|u| observed_url("prometheus-remote-write", u))
        .transpose()?;
    let push_interval = match opt(&a.push_interval) {
        Some(v) => positive_duration("push-interval", v)?,
        None => Duration::from_secs(5),
    };
    let push_labels = a
        .push_label
        .iter()
        .map(|l| push_label(l))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics_listen = opt(&a.metrics_listen)
        .map(|v| {
            v.parse::<SocketAddr>()
                .map_err(|e| ConfigError::invalid("metrics-listen", v, e))
        })
        .transpose()?;
    Ok(ObserveConfig {
        server_metrics,
        interval,
        series_match,
        prometheus,
        queries,
        remote_write,
        push_interval,
        push_labels,
        metrics_listen,
    })
}

/// An http(s) URL; errors never repeat it (it may hold a password).
fn observed_url(field: &str, raw: &str) -> Result<ObservedUrl, ConfigError> {
    let bad = |message: &str| ConfigError::Secret {
        field: field.to_string(),
        message: message.to_string(),
    };
    let url = url::Url::parse(raw.trim()).map_err(|e| bad(&format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    let host = url.host_str().ok_or_else(|| bad("no host"))?;
    let shown = match url.port() {
        Some(p) => format!("{host}:{p}{}", url.path()),
        None => format!("{host}{}", url.path()),
    };
    Ok(ObservedUrl {
        url: Secret::new(url.to_string()),
        shown,
    })
}

/// `NAME=PROMQL`, NAME a Prometheus metric name.
fn server_query(raw: &str) -> Result<ServerQuery, ConfigError> {
    let (name, promql) = raw
        .split_once('=')
        .ok_or_else(|| ConfigError::invalid("server-query", raw, "expected NAME=PROMQL"))?;
    let name = name.trim();
    if !metric_name(name) {
        return Err(ConfigError::invalid(
            "server-query",
            raw,
            "NAME must be a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)",
        ));
    }
    if promql.trim().is_empty() {
        return Err(ConfigError::invalid("server-query", raw, "empty PROMQL"));
    }
    Ok(ServerQuery {
        name: name.to_string(),
        promql: promql.trim().to_string(),
    })
}

/// `k=v` with `k` a label name not reserved by hubload or Prometheus.
fn push_label(raw: &str) -> Result<(String, String), ConfigError> {
    let (k, v) = raw
        .split_once('=')
        .ok_or_else(|| ConfigError::invalid("push-label", raw, "expected k=v"))?;
    let k = k.trim();
    let valid = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with("__");
    if !valid {
        return Err(ConfigError::invalid(
            "push-label",
            raw,
            "the label name must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __",
        ));
    }
    if matches!(
        k,
        "level" | "class" | "quantile" | "outcome" | "run_id" | "shard"
    ) {
        return Err(ConfigError::invalid(
            "push-label",
            raw,
            "the label name is one hubload sets itself",
        ));
    }
    if v.contains(['\n', '\r']) {
        return Err(ConfigError::invalid(
            "push-label",
            raw,
            "a line break in the value",
        ));
    }
    Ok((k.to_string(), v.to_string()))
}

fn metric_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(x) if x.is_ascii_alphabetic() || x == '_' || x == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    #[test]
    fn defaults_are_off() {
        let o = resolve(&args(&[])).unwrap();
        assert!(!o.scrapes());
        assert_eq!(o.interval, Duration::from_secs(1));
        assert_eq!(o.push_interval, Duration::from_secs(5));
        assert!(o.remote_write.is_none() && o.metrics_listen.is_none());
    }

    #[test]
    fn urls_keep_their_credentials_out_of_sight() {
        let o = resolve(&args(&[
            "--server-metrics",
            "http://u:hunter2@127.0.0.1:9100/metrics",
        ]))
        .unwrap();
        assert_eq!(o.server_metrics[0].shown, "127.0.0.1:9100/metrics");
        assert!(!format!("{o:?}").contains("hunter2"));
        assert!(!serde_json::to_string(&o).unwrap().contains("hunter2"));
        let e = resolve(&args(&["--server-metrics", "ftp://u:hunter2@x/"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid --server-metrics: the scheme must be http or https"
        );
    }

    #[test]
    fn bad_values_name_their_flag() {
        err(
            resolve(&args(&["--server-metrics-match", "("])),
            "invalid --server-metrics-match `(`",
        );
        err(
            resolve(&args(&["--server-query", "x"])),
            "invalid --server-query `x`",
        );
        err(
            resolve(&args(&["--server-query", "a=up"])),
            "--server-query needs --prometheus-url",
        );
        err(
            resolve(&args(&["--push-label", "level=x"])),
            "invalid --push-label `level=x`",
        );
        err(
            resolve(&args(&["--push-interval", "0s"])),
            "invalid --push-interval `0s`",
        );
        err(
            resolve(&args(&["--metrics-listen", "nowhere"])),
            "invalid --metrics-listen `nowhere`",
        );
        let q = resolve(&args(&[
            "--prometheus-url",
            "http://127.0.0.1:9090",
            "--server-query",
            "cpu=sum(rate(x[1m]))",
        ]))
        .unwrap();
        assert_eq!(q.queries[0].name, "cpu");
        assert_eq!(q.queries[0].promql, "sum(rate(x[1m]))");
    }
}
