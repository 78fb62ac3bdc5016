//! Value parsers shared by flags and profiles (and `opt`, an optional flag's text); every
//! error names the field and the bad value.

use std::str::FromStr;
use std::time::Duration;

use super::error::ConfigError;

/// An optional flag's text.
pub fn opt(v: &Option<String>) -> Option<&str> {
    v.as_deref()
}

/// Parse `raw` for `field` with `FromStr`, wrapping the error.
pub fn value<T: FromStr>(field: &str, raw: &str) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    raw.trim()
        .parse()
        .map_err(|e| ConfigError::invalid(field, raw, e))
}

/// A URL to dial must not name port 0: it is where a listener asks for any free port, and no
/// server can be reached there. `shown` is the URL as errors may show it (password redacted).
pub fn dialable(field: &str, shown: &str, u: &url::Url) -> Result<(), ConfigError> {
    if u.port() == Some(0) {
        return Err(ConfigError::invalid(
            field,
            shown,
            "port 0 is no port a server can be reached on (give the port it listens on)",
        ));
    }
    Ok(())
}

/// A whole number ≥ `min`.
pub fn count(field: &str, raw: &str, min: u64) -> Result<u64, ConfigError> {
    let n: u64 = raw.trim().parse().map_err(|_| {
        let what = if raw.trim().starts_with('-') {
            "must not be negative"
        } else {
            "is not a whole number"
        };
        ConfigError::invalid(field, raw, what)
    })?;
    if n < min {
        return Err(ConfigError::invalid(
            field,
            raw,
            format!("must be at least {min}"),
        ));
    }
    Ok(n)
}

/// A count that must fit a u32.
pub fn count32(field: &str, raw: &str, min: u64) -> Result<u32, ConfigError> {
    let n = count(field, raw, min)?;
    u32::try_from(n).map_err(|_| ConfigError::invalid(field, raw, "is too large"))
}

/// A duration like `30s`, `1m30s`, `300ms`.
pub fn duration(field: &str, raw: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::invalid(field, raw, "is not a duration (use e.g. 300ms, 5s, 1m30s)")
    })
}

/// A positive duration.
pub fn positive_duration(field: &str, raw: &str) -> Result<Duration, ConfigError> {
    let d = duration(field, raw)?;
    if d.is_zero() {
        return Err(ConfigError::invalid(field, raw, "must be longer than zero"));
    }
    Ok(d)
}

/// A comma-separated list, each item parsed by `item`; no item may be empty.
pub fn list<T>(
    field: &str,
    raw: &str,
    item: impl Fn(&str, &str) -> Result<T, ConfigError>,
) -> Result<Vec<T>, ConfigError> {
    let items: Vec<&str> = raw.split(',').map(str::trim).collect();
    if items.iter().all(|s| s.is_empty()) {
        return Err(ConfigError::invalid(field, raw, "is empty"));
    }
    // `1,,4` is a typo, not the list 1,4.
    if items.iter().any(|s| s.is_empty()) {
        return Err(ConfigError::invalid(field, raw, "has an empty item"));
    }
    items.into_iter().map(|s| item(field, s)).collect()
}

/// A positive, finite rate (events per second).
pub fn rate(field: &str, raw: &str) -> Result<f64, ConfigError> {
    let r: f64 = raw
        .trim()
        .parse()
        .map_err(|_| ConfigError::invalid(field, raw, "is not a number"))?;
    if !(r.is_finite() && r > 0.0) {
        return Err(ConfigError::invalid(
            field,
            raw,
            "must be a positive number",
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field_and_value() {
        let cases: Vec<(Result<(), ConfigError>, &str)> = vec![
            (
                count("tenants", "0", 1).map(drop),
                "invalid --tenants `0`: must be at least 1",
            ),
            (
                count("tenants", "-3", 1).map(drop),
                "invalid --tenants `-3`: must not be negative",
            ),
            (
                count("users", "many", 1).map(drop),
                "invalid --users `many`: is not a whole number",
            ),
            (
                duration("duration", "soon").map(drop),
                "invalid --duration `soon`: is not a duration",
            ),
            (
                positive_duration("timeout", "0s").map(drop),
                "invalid --timeout `0s`: must be longer than zero",
            ),
            (
                list("concurrency", ",", |f, s| count(f, s, 1)).map(drop),
                "invalid --concurrency `,`: is empty",
            ),
            (
                list("concurrency", "1,,4", |f, s| count(f, s, 1)).map(drop),
                "invalid --concurrency `1,,4`: has an empty item",
            ),
            (
                list("concurrency", "1,x", |f, s| count(f, s, 1)).map(drop),
                "invalid --concurrency `x`",
            ),
            (
                rate("rate", "-1").map(drop),
                "invalid --rate `-1`: must be a positive number",
            ),
        ];
        for (r, want) in cases {
            let e = r.unwrap_err().to_string();
            assert!(e.starts_with(want), "{e} vs {want}");
            assert!(!e.contains('\n'));
        }
        assert_eq!(
            list("c", "1, 20 ,50", |f, s| count(f, s, 1)).unwrap(),
            vec![1, 20, 50]
        );
        assert_eq!(duration("d", "1m30s").unwrap(), Duration::from_secs(90));
    }
}
