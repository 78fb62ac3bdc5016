//! `ConfigError`: what every configuration check returns, one line naming the field (exit
//! code 2).

/// A configuration problem: one line naming the field. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag or profile value is wrong.
    #[error("invalid --{field} `{value}`: {message}")]
    Invalid {
        field: String,
        value: String,
        message: String,
    },
    /// A combination of settings is wrong.
    #[error("{0}")]
    Conflict(String),
    /// A `--threshold` or `--slo` rule does not parse (the error names the flag).
    #[error("invalid {0}")]
    Gate(crate::report::judge::rules::GateError),
    /// A secret-bearing flag is wrong; the message never repeats its value.
    #[error("invalid --{field}: {message}")]
    Secret { field: String, message: String },
    /// A profile could not be used.
    #[error("profile {path}: {message}")]
    Profile { path: String, message: String },
}

impl ConfigError {
    pub(super) fn invalid(field: &str, value: &str, message: impl std::fmt::Display) -> Self {
        ConfigError::Invalid {
            field: field.to_string(),
            value: value.trim().to_string(),
            message: message.to_string(),
        }
    }
}
