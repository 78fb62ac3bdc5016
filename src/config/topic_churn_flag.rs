//! `--topic-churn RATE` → a validated rate of topic deregister/re-register cycles per second.

use super::error::ConfigError;
use super::parse::{opt, rate};
use super::{Dialect, TargetConfig, TargetKind, WebSubConfig};
use crate::cli::RunArgs;

/// The most cycles per second a run may ask for: each cycle is two requests to the hub and
/// its window is tracked for the level, so the loop stays bounded.
const MAX_RATE: f64 = 1000.0;

/// `None` unless `--topic-churn` is given. Topic churn needs topics to deregister: the
/// Ballerina dialect of a WebSub target, with registration on; and it does not mix with
/// `--subscriber-churn` (both would re-subscribe the same subscribers at once).
pub(super) fn resolve(
    a: &RunArgs,
    target: &TargetConfig,
    websub: &WebSubConfig,
) -> Result<Option<f64>, ConfigError> {
    let Some(raw) = opt(&a.topic_churn) else {
        return Ok(None);
    };
    let r = rate("topic-churn", raw)?;
    if r > MAX_RATE {
        return Err(ConfigError::invalid(
            "topic-churn",
            raw,
            format!("must be at most {MAX_RATE} topics per second"),
        ));
    }
    let conflict = |why: &str| Err(ConfigError::Conflict(format!("--topic-churn {why}")));
    if !target.kinds.contains(&TargetKind::Websub) {
        return conflict("needs a WebSub target (--target websub)");
    }
    if websub.dialect != Dialect::Ballerina {
        return conflict("needs --dialect ballerina (a websub-dialect hub has no topic registry)");
    }
    if !websub.register {
        return conflict("needs registered topics (not --register never)");
    }
    if opt(&a.subscriber_churn).is_some() {
        return conflict(
            "and --subscriber-churn cannot be combined (both re-subscribe the same subscribers)",
        );
    }
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::super::test_flags::{args, err};
    use super::*;

    fn run(v: &[&str]) -> Result<Option<f64>, ConfigError> {
        let a = args(v);
        let target = super::super::target::resolve(&a)?;
        let websub = super::super::dialect::resolve(&a)?;
        resolve(&a, &target, &websub)
    }

    #[test]
    fn off_by_default_a_rate_when_given() {
        assert_eq!(run(&[]).unwrap(), None);
        assert_eq!(run(&["--topic-churn", "5"]).unwrap(), Some(5.0));
        assert_eq!(run(&["--topic-churn", "0.5"]).unwrap(), Some(0.5));
    }

    #[test]
    fn bad_values_and_conflicts_name_the_flag() {
        err(run(&["--topic-churn", "0"]), "invalid --topic-churn");
        err(run(&["--topic-churn", "fast"]), "invalid --topic-churn");
        err(run(&["--topic-churn", "5000"]), "invalid --topic-churn");
        err(
            run(&["--topic-churn", "5", "--dialect", "websub"]),
            "--topic-churn needs --dialect ballerina",
        );
        err(
            run(&["--topic-churn", "5", "--register", "never"]),
            "--topic-churn needs registered topics",
        );
        err(
            run(&["--topic-churn", "5", "--subscriber-churn", "5"]),
            "--topic-churn and --subscriber-churn",
        );
        err(
            run(&["--topic-churn", "5", "--target", "servicebus"]),
            "--topic-churn needs a WebSub target",
        );
    }
}
