//! One check's result ([`Step`]) and its printed line, and the ordered list of them.

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It passed.
    Ok,
    /// It failed: the run would fail here.
    Fail,
    /// Not tried: an earlier check it depends on failed.
    Skipped,
}

/// One check's line: what was checked, how it ended, the cause and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Short name: `dns`, `tcp`, `tls`, `websocket`, `hub`, `cbs`, `topic NAME`.
    pub name: String,
    /// How it ended.
    pub status: Status,
    /// What was seen (the cause, for a failure). Never a secret.
    pub detail: String,
    /// What to do about a failure, where known.
    pub fix: Option<String>,
}

impl Step {
    pub(crate) fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Step {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn fail(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Step {
            name: name.into(),
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// The one line `hubload check` prints for it.
    pub fn line(&self) -> String {
        let tag = match self.status {
            Status::Ok => "ok  ",
            Status::Fail => "FAIL",
            Status::Skipped => "skip",
        };
        match &self.fix {
            Some(fix) => format!("{tag} {:<10} {} (fix: {fix})", self.name, self.detail),
            None => format!("{tag} {:<10} {}", self.name, self.detail),
        }
    }
}

/// Steps run in order; after a failure the rest are skipped, naming the one they waited on.
pub(crate) struct Steps(pub Vec<Step>);

impl Steps {
    /// Record `step`.
    pub fn push(&mut self, step: Step) {
        self.0.push(step);
    }

    /// A skip of `name` after the first failure.
    pub fn skip(&mut self, name: impl Into<String>) {
        let after = self
            .0
            .iter()
            .find(|s| s.status == Status::Fail)
            .map_or(String::new(), |s| s.name.clone());
        self.0.push(Step {
            name: name.into(),
            status: Status::Skipped,
            detail: format!("not tried: {after} failed"),
            fix: None,
        });
    }
}
