//! Instant PromQL queries against `--prometheus-url`: the request path, and the answer read
//! as samples (each result a gauge named after the query) or as the server's error text.

use super::exposition::{label_text, Exposition, Kind, Sample};

/// The API path of an instant query for `promql`.
pub fn query_path(promql: &str) -> String {
    let q: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("query", promql)
        .finish();
    format!("/api/v1/query?{q}")
}

/// The answer to a query named `name`: its samples, or the server's error (`errorType:
/// error`), or why the answer could not be read.
pub fn read_answer(name: &str, status: u16, body: &str) -> Result<Exposition, String> {
    let v: serde_json::Value = serde_json::from_str(body)
        .map_err(|_| format!("HTTP {status} without a Prometheus API answer"))?;
    if v["status"] != "success" {
        let kind = v["errorType"].as_str().unwrap_or("error");
        let why = v["error"].as_str().unwrap_or("no error text");
        return Err(format!("{kind}: {why}"));
    }
    let data = &v["data"];
    let mut out = Exposition::default();
    let value = |pair: &serde_json::Value| -> Option<f64> {
        let s = pair.get(1)?.as_str()?;
        match s {
            "+Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            _ => s.parse().ok(),
        }
    };
    match data["resultType"].as_str() {
        Some("vector") => {
            for r in data["result"].as_array().into_iter().flatten() {
                let Some(x) = value(&r["value"]) else {
                    out.malformed += 1;
                    continue;
                };
                let mut labels: Vec<(String, String)> = r["metric"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| k.as_str() != "__name__")
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect();
                labels.sort();
                out.samples.push(sample(name, &labels, x));
            }
        }
        Some("scalar") => match value(&data["result"]) {
            Some(x) => out.samples.push(sample(name, &[], x)),
            None => out.malformed += 1,
        },
        other => {
            return Err(format!(
                "the query answered a {}, not an instant vector or scalar",
                other.unwrap_or("nothing")
            ))
        }
    }
    Ok(out)
}

fn sample(name: &str, labels: &[(String, String)], value: f64) -> Sample {
    Sample {
        name: name.to_string(),
        labels: label_text(labels),
        kind: Kind::Gauge,
        value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_answers_become_gauges_named_after_the_query() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"pod":"hub-1","__name__":"x"},"value":[1700000000.1,"1.98"]},
            {"metric":{},"value":[1700000000.1,"NaN"]}]}}"#;
        let e = read_answer("cpu", 200, body).unwrap();
        assert_eq!(e.samples[0].name, "cpu");
        assert_eq!(e.samples[0].labels, "{pod=\"hub-1\"}");
        assert_eq!(e.samples[0].value, 1.98);
        assert!(e.samples[1].value.is_nan());
        assert_eq!(e.samples[0].kind, Kind::Gauge);
    }

    #[test]
    fn the_servers_error_text_is_kept() {
        let body = r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}"#;
        assert_eq!(
            read_answer("cpu", 400, body).unwrap_err(),
            "bad_data: 1:5: parse error: unexpected end of input"
        );
        assert_eq!(
            read_answer("cpu", 502, "<html>").unwrap_err(),
            "HTTP 502 without a Prometheus API answer"
        );
        assert_eq!(
            query_path("sum(rate(x[1m]))"),
            "/api/v1/query?query=sum%28rate%28x%5B1m%5D%29%29"
        );
    }
}
