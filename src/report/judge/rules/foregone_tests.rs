//! Tests of the refusal of absolute rules whose verdict is known before any measurement.

use crate::report::judge::rules::{Flag, Gate};

/// The error a `--threshold` rule gets, or "" when it parses.
fn refused(text: &str) -> String {
    Gate::parse(Flag::Threshold, text).map_or_else(|e| e.to_string(), |_| String::new())
}

#[test]
fn rules_that_always_hold_are_refused() {
    for rule in [
        "errors<200%",
        "errors<=100%",
        "timeouts<100.5%",
        "p99>=0ms",
        "rate>=0",
        "lost>=0",
        "total:errors>=0%",
        "tenant_fairness<=1",
        "jain>=0",
        "quiet_errors<=100%",
        "quiet_errors>=0%",
        "quiet_delivery_loss<=100%",
    ] {
        assert!(
            refused(rule).contains("can never fail"),
            "{rule}: {}",
            refused(rule)
        );
    }
}

#[test]
fn rules_that_never_hold_are_refused() {
    for rule in [
        "p99<0ms",
        "errors<0%",
        "lost<0",
        "rate<0",
        "errors>100%",
        "errors>=101%",
        "timeouts=150%",
        "tenant_fairness>1",
        "tenant_fairness>=1.5",
        "quiet_errors<0%",
        "quiet_errors>100%",
        "quiet_delivery_loss>100%",
    ] {
        assert!(
            refused(rule).contains("can never pass"),
            "{rule}: {}",
            refused(rule)
        );
    }
}

#[test]
fn rules_a_run_can_cross_are_kept() {
    for rule in [
        "errors<100%",
        "errors<=99.9%",
        "errors>0%",
        "errors=100%",
        "errors>=100%",
        "p99<1ms",
        "p99<=0ms",
        "p99>0ms",
        "lost=0",
        "lost<=0",
        "tenant_fairness>0.95",
        "tenant_fairness>=1",
        "tenant_p99_spread<2",
        "quiet_p99_increase<20%",
        "quiet_p99_increase<0%",
        "quiet_p99_increase>=0%",
        "quiet_p99_increase<500%",
        "quiet_errors<0.1%",
        "quiet_errors=0%",
        "quiet_delivery_p99_increase<20%",
        "quiet_delivery_p99_increase<0%",
        "quiet_delivery_loss<0.1%",
        "duplicates<200%",
        "unexpected<1000%",
        "errors<200",
        "rate>0",
        "total:rate>=1",
    ] {
        assert_eq!(refused(rule), "", "{rule}");
    }
    // Deltas between two runs are another language, not judged here.
    assert!(Gate::parse(Flag::FailIf, "errors>+200%").is_ok());
}

#[test]
fn the_slo_is_held_to_the_same() {
    let e = Gate::parse(Flag::Slo, "errors<200%")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--slo \"errors<200%\": can never fail"),
        "{e}"
    );
}
