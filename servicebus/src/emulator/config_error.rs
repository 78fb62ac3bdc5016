//! The one error of reading `Config.json` (its entities in `config_file.rs`, their rules in
//! `filter.rs`): the JSON path of the bad field and what is wrong there.

/// A `Config.json` error: the JSON path and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ConfigFileError {
    /// Where, e.g. `UserConfig.Namespaces[0].Topics[1].Name`.
    pub path: String,
    /// What.
    pub problem: String,
}

/// The error at `path`.
pub(super) fn err(path: &str, problem: impl Into<String>) -> ConfigFileError {
    ConfigFileError {
        path: path.to_string(),
        problem: problem.into(),
    }
}
