//! How the config's values are written into reports (summary.json's `config`): durations as
//! humantime text, URLs with any password redacted.

/// `#[serde(with)]` for a `Duration`: humantime text (`5s`, `1m 30s`).
pub(super) mod humantime_serde_str {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
}

/// `#[serde(serialize_with)]` for an optional URL: its password, if any, as `redacted`.
pub(super) fn redacted_url<S: serde::Serializer>(
    u: &Option<url::Url>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match u {
        None => s.serialize_none(),
        Some(u) => {
            let mut u = u.clone();
            if u.password().is_some() {
                let _ = u.set_password(Some("redacted"));
            }
            s.serialize_str(u.as_str())
        }
    }
}
