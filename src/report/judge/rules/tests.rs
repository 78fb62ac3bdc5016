//! Table tests of the gate parser: every spelling either flag accepts, and every error.

use super::*;

fn ok(flag: Flag, text: &str) -> Gate {
    Gate::parse(flag, text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn absolute_rules() {
    use Bound::*;
    use Metric::*;
    let table: &[(&str, Scope, Metric, Op, Bound)] = &[
        ("p99<300ms", Scope::EachLevel, P(99), Op::Lt, Ms(300.0)),
        (
            "quiet_p99_increase<20%",
            Scope::EachLevel,
            QuietP99Increase,
            Op::Lt,
            Percent(20.0),
        ),
        (
            "quiet_errors<0.1%",
            Scope::EachLevel,
            QuietErrors,
            Op::Lt,
            Percent(0.1),
        ),
        (
            "quiet_p99_increase<=15",
            Scope::EachLevel,
            QuietP99Increase,
            Op::Le,
            Percent(15.0),
        ),
        ("total:p95<=1s", Scope::Total, P(95), Op::Le, Ms(1000.0)),
        ("errors<1%", Scope::EachLevel, Errors, Op::Lt, Percent(1.0)),
        ("errors<+1%", Scope::EachLevel, Errors, Op::Lt, Percent(1.0)),
        ("errors<=0", Scope::EachLevel, Errors, Op::Le, Number(0.0)),
        ("error<3", Scope::EachLevel, Errors, Op::Lt, Number(3.0)),
        ("rate>=500", Scope::EachLevel, Rate, Op::Ge, Number(500.0)),
        (
            "throughput > 99.5/s",
            Scope::EachLevel,
            Rate,
            Op::Gt,
            Number(99.5),
        ),
        (
            "timeouts<0.5%",
            Scope::EachLevel,
            Timeouts,
            Op::Lt,
            Percent(0.5),
        ),
        ("avg<50ms", Scope::EachLevel, Avg, Op::Lt, Ms(50.0)),
        ("e2e_p99<2s", Scope::EachLevel, E2eP(99), Op::Lt, Ms(2000.0)),
        (
            "e2e_median<5ms",
            Scope::EachLevel,
            E2eP(50),
            Op::Lt,
            Ms(5.0),
        ),
        ("e2e_p90<5ms", Scope::EachLevel, E2eP(90), Op::Lt, Ms(5.0)),
        ("e2e_p95<5ms", Scope::EachLevel, E2eP(95), Op::Lt, Ms(5.0)),
        (
            "total:e2e_max<=1s",
            Scope::Total,
            E2eMax,
            Op::Le,
            Ms(1000.0),
        ),
        ("e2e_avg<10ms", Scope::EachLevel, E2eAvg, Op::Lt, Ms(10.0)),
        (
            "time_to_first_delivery_p99<500ms",
            Scope::EachLevel,
            TimeToFirstDeliveryP99,
            Op::Lt,
            Ms(500.0),
        ),
        (
            "total:ttfd_p99<=1s",
            Scope::Total,
            TimeToFirstDeliveryP99,
            Op::Le,
            Ms(1000.0),
        ),
        ("lost=0", Scope::EachLevel, Lost, Op::Eq, Number(0.0)),
        ("total:lost = 0", Scope::Total, Lost, Op::Eq, Number(0.0)),
        (
            "duplicates<0.1%",
            Scope::EachLevel,
            Duplicates,
            Op::Lt,
            Percent(0.1),
        ),
        (
            "out_of_order<=5",
            Scope::EachLevel,
            OutOfOrder,
            Op::Le,
            Number(5.0),
        ),
        (
            "bad_signature=0",
            Scope::EachLevel,
            BadSignature,
            Op::Eq,
            Number(0.0),
        ),
        ("errors=0", Scope::EachLevel, Errors, Op::Eq, Number(0.0)),
        (
            "redeliveries<=10",
            Scope::EachLevel,
            Redeliveries,
            Op::Le,
            Number(10.0),
        ),
        (
            "body_mismatch=0",
            Scope::EachLevel,
            BodyMismatch,
            Op::Eq,
            Number(0.0),
        ),
        (
            "unexpected<1%",
            Scope::EachLevel,
            Unexpected,
            Op::Lt,
            Percent(1.0),
        ),
        (
            "backlog<500",
            Scope::EachLevel,
            Backlog,
            Op::Lt,
            Number(500.0),
        ),
        (
            "total:backlog<=2%",
            Scope::Total,
            Backlog,
            Op::Le,
            Percent(2.0),
        ),
        (
            "delivered_rate>=1000",
            Scope::EachLevel,
            DeliveredRate,
            Op::Ge,
            Number(1000.0),
        ),
        (
            "delivered/s>=99.5/s",
            Scope::EachLevel,
            DeliveredRate,
            Op::Ge,
            Number(99.5),
        ),
        ("mean<1m", Scope::EachLevel, Avg, Op::Lt, Ms(60_000.0)),
        ("median<2ms", Scope::EachLevel, P(50), Op::Lt, Ms(2.0)),
        ("p50<2ms", Scope::EachLevel, P(50), Op::Lt, Ms(2.0)),
        ("p90<2ms", Scope::EachLevel, P(90), Op::Lt, Ms(2.0)),
        ("p99.9<2s", Scope::EachLevel, P(999), Op::Lt, Ms(2000.0)),
        ("p999<2s", Scope::EachLevel, P(999), Op::Lt, Ms(2000.0)),
        ("max<1us", Scope::EachLevel, Max, Op::Lt, Ms(0.001)),
        (" P99 < 300ms ", Scope::EachLevel, P(99), Op::Lt, Ms(300.0)),
    ];
    for flag in [Flag::Threshold, Flag::Slo] {
        for (text, scope, metric, op, bound) in table {
            let g = ok(flag, text);
            assert_eq!(
                (g.scope, g.metric, g.op, g.bound),
                (*scope, *metric, *op, *bound),
                "{text}"
            );
            assert_eq!(g.text, text.trim());
            assert_eq!(g.to_string(), text.trim(), "shown as given");
        }
    }
    assert_eq!("p99<1s".parse::<Threshold>().unwrap().flag, Flag::Threshold);
}

#[test]
fn relative_rules() {
    use Bound::*;
    use Metric::*;
    let table: &[(&str, Metric, Op, Bound, &str)] = &[
        ("p99>+10%", P(99), Op::Gt, Relative(10.0), "p99>+10%"),
        ("avg>+5ms", Avg, Op::Gt, Ms(5.0), "avg>+5ms"),
        ("errors>+1%", Errors, Op::Gt, Percent(1.0), "errors>+1%"),
        (
            "throughput<-10%",
            Rate,
            Op::Lt,
            Relative(-10.0),
            "throughput<-10%",
        ),
        (" P95 > 20 ms ", P(95), Op::Gt, Ms(20.0), "p95>+20ms"),
        ("mean>0.5ms", Avg, Op::Gt, Ms(0.5), "avg>+0.5ms"),
        ("average>1ms", Avg, Op::Gt, Ms(1.0), "avg>+1ms"),
        (
            "tps<-100/s",
            Rate,
            Op::Lt,
            Number(-100.0),
            "throughput<-100/s",
        ),
        ("rps<-1%", Rate, Op::Lt, Relative(-1.0), "throughput<-1%"),
        (
            "errors>+0.25pp",
            Errors,
            Op::Gt,
            Percent(0.25),
            "errors>+0.25%",
        ),
        ("err>1%", Errors, Op::Gt, Percent(1.0), "errors>+1%"),
        ("error%>1%", Errors, Op::Gt, Percent(1.0), "errors>+1%"),
        ("p50>+5%", P(50), Op::Gt, Relative(5.0), "median>+5%"),
        // Delivery metrics, as the issue writes them.
        (
            "e2e_p99>+10%",
            E2eP(99),
            Op::Gt,
            Relative(10.0),
            "e2e_p99>+10%",
        ),
        ("e2e_median>+2ms", E2eP(50), Op::Gt, Ms(2.0), "e2e_p50>+2ms"),
        ("e2e_max>+1%", E2eMax, Op::Gt, Relative(1.0), "e2e_max>+1%"),
        ("e2e_mean>0.5ms", E2eAvg, Op::Gt, Ms(0.5), "e2e_avg>+0.5ms"),
        // A count: a bare number is a change in the count; % and pp are points of its share.
        ("lost>0", Lost, Op::Gt, Number(0.0), "lost>+0"),
        (
            "duplicates>0",
            Duplicates,
            Op::Gt,
            Number(0.0),
            "duplicates>+0",
        ),
        (
            "dups > +3",
            Duplicates,
            Op::Gt,
            Number(3.0),
            "duplicates>+3",
        ),
        ("lost>+0.1%", Lost, Op::Gt, Percent(0.1), "lost>+0.1%"),
        (
            "redeliveries>+1pp",
            Redeliveries,
            Op::Gt,
            Percent(1.0),
            "redeliveries>+1%",
        ),
        (
            "backlog>+100",
            Backlog,
            Op::Gt,
            Number(100.0),
            "backlog>+100",
        ),
        (
            "delivered_rate<-5%",
            DeliveredRate,
            Op::Lt,
            Relative(-5.0),
            "delivered_rate<-5%",
        ),
        (
            "delivered/s<-100/s",
            DeliveredRate,
            Op::Lt,
            Number(-100.0),
            "delivered_rate<-100/s",
        ),
    ];
    for (text, metric, op, bound, canonical) in table {
        let g = ok(Flag::FailIf, text);
        assert_eq!(
            (g.scope, g.metric, g.op, g.bound),
            (Scope::EachLevel, *metric, *op, *bound),
            "{text}"
        );
        assert_eq!(g.to_string(), *canonical);
    }
}

#[test]
fn fail_if_bounds_the_candidate_s_figures_as_threshold_does() {
    use Bound::*;
    use Metric::*;
    let table: &[(&str, Metric, Op, Bound, &str)] = &[
        (
            "tenant_fairness<0.95",
            TenantFairness,
            Op::Lt,
            Number(0.95),
            "tenant_fairness<0.95",
        ),
        (
            "JAIN < 0.9",
            TenantFairness,
            Op::Lt,
            Number(0.9),
            "tenant_fairness<0.9",
        ),
        (
            "tenant_p99_spread>2",
            TenantP99Spread,
            Op::Gt,
            Number(2.0),
            "tenant_p99_spread>2",
        ),
        (
            "quiet_p99_increase>20%",
            QuietP99Increase,
            Op::Gt,
            Percent(20.0),
            "quiet_p99_increase>20%",
        ),
        (
            "quiet_error>0.1%",
            QuietErrors,
            Op::Gt,
            Percent(0.1),
            "quiet_errors>0.1%",
        ),
    ];
    for (text, metric, op, bound, canonical) in table {
        let g = ok(Flag::FailIf, text);
        assert_eq!((g.metric, g.op, g.bound), (*metric, *op, *bound), "{text}");
        assert!(!g.is_delta(), "{text}");
        assert_eq!(g.to_string(), *canonical);
        // The same value, parsed the same way, as --threshold takes it.
        let t = ok(Flag::Threshold, text);
        assert_eq!((t.metric, t.bound), (g.metric, g.bound), "{text}");
    }
    assert!(ok(Flag::FailIf, "p99>+10%").is_delta());
    assert!(!ok(Flag::Threshold, "p99<10ms").is_delta());
}

#[test]
fn errors_name_the_flag_and_the_bad_part() {
    let table: &[(Flag, &str, &str)] = &[
        (
            Flag::Threshold,
            "p99",
            r#"--threshold "p99": missing '>', '<' or '=' (expected e.g. p99<300ms)"#,
        ),
        (
            Flag::Slo,
            "p99",
            r#"--slo "p99": missing '>', '<' or '=' (expected e.g. p99<300ms)"#,
        ),
        (
            Flag::Threshold,
            "p42<1s",
            r#"--threshold "p42<1s": unknown metric "p42" (expected avg, median, p90, p95, p99, p999, max, errors, timeouts, rate, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog, delivered_rate, time_to_first_delivery_p99, tenant_fairness, tenant_p99_spread, quiet_p99_increase, quiet_errors, quiet_delivery_p99_increase or quiet_delivery_loss)"#,
        ),
        (
            Flag::Threshold,
            "quiet_p99_increase<fast",
            r#"--threshold "quiet_p99_increase<fast": the bound must be a percentage (e.g. 20%)"#,
        ),
        (
            Flag::FailIf,
            "tenant_fairness>1",
            r#"--fail-if "tenant_fairness>1": can never fail: Jain's index is between 0 and 1, so it never holds (give a bound a run can cross)"#,
        ),
        (
            Flag::FailIf,
            "quiet_errors<101%",
            r#"--fail-if "quiet_errors<101%": can never pass: a share of attempts is between 0% and 100%, so it always holds and fails every comparison (give a bound a run can stay within)"#,
        ),
        (
            Flag::FailIf,
            "tenant_fairness<-0.1",
            r#"--fail-if "tenant_fairness<-0.1": the bound must be a non-negative number"#,
        ),
        (
            Flag::Threshold,
            "p99<fast",
            r#"--threshold "p99<fast": the bound must be a duration like 300ms"#,
        ),
        (
            Flag::Threshold,
            "p99<+10%",
            r#"--threshold "p99<+10%": +10% is relative to a baseline; only compare --fail-if has one (give e.g. p99<300ms)"#,
        ),
        (
            Flag::Slo,
            "rate>-5%",
            r#"--slo "rate>-5%": -5% is relative to a baseline; only compare --fail-if has one (give e.g. p99<300ms)"#,
        ),
        (
            Flag::Threshold,
            "errors<lots%",
            r#"--threshold "errors<lots%": bad percentage"#,
        ),
        (
            Flag::Threshold,
            "errors<lots",
            r#"--threshold "errors<lots": the bound must be N or N%"#,
        ),
        (
            Flag::Threshold,
            "rate>=fast",
            r#"--threshold "rate>=fast": the bound must be a number (per second)"#,
        ),
        (
            Flag::Threshold,
            "rate>=-1",
            r#"--threshold "rate>=-1": the bound must be a non-negative number"#,
        ),
        (
            Flag::Threshold,
            "errors<-1%",
            r#"--threshold "errors<-1%": the bound must be a non-negative number"#,
        ),
        (
            Flag::FailIf,
            "p99=10%",
            r#"--fail-if "p99=10%": missing '>' or '<' (expected e.g. p99>+10%)"#,
        ),
        (
            Flag::FailIf,
            "",
            r#"--fail-if "": missing '>' or '<' (expected e.g. p99>+10%)"#,
        ),
        (
            Flag::FailIf,
            "p98>+10%",
            r#"--fail-if "p98>+10%": unknown metric "p98" (expected avg, median, p95, p99, errors, throughput, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog, delivered_rate, tenant_fairness, tenant_p99_spread, quiet_p99_increase, quiet_errors, quiet_delivery_p99_increase or quiet_delivery_loss)"#,
        ),
        // Metrics compare has no column for.
        (
            Flag::FailIf,
            "p90>+10%",
            r#"--fail-if "p90>+10%": unknown metric "p90" (expected avg, median, p95, p99, errors, throughput, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog, delivered_rate, tenant_fairness, tenant_p99_spread, quiet_p99_increase, quiet_errors, quiet_delivery_p99_increase or quiet_delivery_loss)"#,
        ),
        (
            Flag::FailIf,
            "total:p99>+10%",
            r#"--fail-if "total:p99>+10%": unknown metric "total:p99" (expected avg, median, p95, p99, errors, throughput, e2e_avg, e2e_p50, e2e_p90, e2e_p95, e2e_p99, e2e_max, lost, duplicates, redeliveries, out_of_order, bad_signature, body_mismatch, unexpected, backlog, delivered_rate, tenant_fairness, tenant_p99_spread, quiet_p99_increase, quiet_errors, quiet_delivery_p99_increase or quiet_delivery_loss)"#,
        ),
        (
            Flag::FailIf,
            "p99>+ten%",
            r#"--fail-if "p99>+ten%": bad threshold "+ten%" (expected a signed number and a unit, e.g. +10% or +5ms)"#,
        ),
        (
            Flag::FailIf,
            "p99>=10%",
            r#"--fail-if "p99>=10%": bad threshold "=10%" (expected a signed number and a unit, e.g. +10% or +5ms)"#,
        ),
        (
            Flag::FailIf,
            "p99>+10",
            r#"--fail-if "p99>+10": missing unit after the threshold (use % or ms)"#,
        ),
        (
            Flag::FailIf,
            "errors>+1ms",
            r#"--fail-if "errors>+1ms": unit "ms" does not apply to errors (use % or pp, percentage points)"#,
        ),
        (
            Flag::FailIf,
            "throughput<-10ms",
            r#"--fail-if "throughput<-10ms": unit "ms" does not apply to throughput (use % or /s)"#,
        ),
        (
            Flag::FailIf,
            "p99>+10/s",
            r#"--fail-if "p99>+10/s": unit "/s" does not apply to p99 (use % or ms)"#,
        ),
    ];
    for (flag, text, want) in table {
        let e = Gate::parse(*flag, text).unwrap_err().to_string();
        assert_eq!(e, *want);
        assert!(!e.contains('\n'));
    }
}

#[test]
fn delivery_rule_errors() {
    let table: &[(Flag, &str, &str)] = &[
        (
            Flag::Threshold,
            "lost<few",
            r#"--threshold "lost<few": the bound must be N or N%"#,
        ),
        (
            Flag::Threshold,
            "e2e_p99<2",
            r#"--threshold "e2e_p99<2": the bound must be a duration like 300ms"#,
        ),
        (
            Flag::Threshold,
            "delivered_rate>fast",
            r#"--threshold "delivered_rate>fast": the bound must be a number (per second)"#,
        ),
        (
            Flag::Threshold,
            "backlog<-1",
            r#"--threshold "backlog<-1": the bound must be a non-negative number"#,
        ),
        (
            Flag::FailIf,
            "lost>+1ms",
            r#"--fail-if "lost>+1ms": unit "ms" does not apply to lost (use a count, or % or pp, percentage points of the expected deliveries; e.g. lost>0)"#,
        ),
        (
            Flag::FailIf,
            "lost=0",
            r#"--fail-if "lost=0": missing '>' or '<' (expected e.g. p99>+10%)"#,
        ),
        (
            Flag::FailIf,
            "e2e_p99>+10",
            r#"--fail-if "e2e_p99>+10": missing unit after the threshold (use % or ms)"#,
        ),
        (
            Flag::FailIf,
            "delivered_rate<-5",
            r#"--fail-if "delivered_rate<-5": missing unit after the threshold (use % or /s)"#,
        ),
        (
            Flag::FailIf,
            "delivered_rate<-5ms",
            r#"--fail-if "delivered_rate<-5ms": unit "ms" does not apply to delivered_rate (use % or /s)"#,
        ),
    ];
    for (flag, text, want) in table {
        assert_eq!(Gate::parse(*flag, text).unwrap_err().to_string(), *want);
    }
    // Every delivery metric name is a delivery metric, and no publish one is.
    for (names, metric, _) in METRICS {
        let delivery = names[0].starts_with("e2e_")
            || [
                "lost",
                "duplicates",
                "redeliveries",
                "out_of_order",
                "bad_signature",
                "body_mismatch",
                "unexpected",
                "backlog",
                "delivered_rate",
                "time_to_first_delivery_p99",
            ]
            .contains(&names[0]);
        assert_eq!(metric.is_delivery(), delivery, "{}", names[0]);
        // compare --fail-if takes every delivery metric --threshold takes, by every spelling,
        // but churn's (compare has no churn columns).
        if delivery && *metric != Metric::TimeToFirstDeliveryP99 {
            for name in *names {
                let rule = format!("{name}>+10%");
                let g = ok(Flag::FailIf, &rule);
                assert_eq!(g.metric, *metric, "{rule}");
                let bound = if metric.is_latency() { "5ms" } else { "5" };
                let threshold = format!("{name}<{bound}");
                assert_eq!(ok(Flag::Threshold, &threshold).metric, *metric);
            }
        }
        if delivery {
            assert_eq!(
                metric.keyword(),
                names[0],
                "the first spelling is the keyword"
            );
        }
    }
}

#[test]
fn ops_hold() {
    for (op, a, b, want) in [
        (Op::Lt, 1.0, 2.0, true),
        (Op::Lt, 2.0, 2.0, false),
        (Op::Le, 2.0, 2.0, true),
        (Op::Gt, 2.0, 2.0, false),
        (Op::Ge, 2.0, 2.0, true),
        (Op::Gt, 3.0, 2.0, true),
        (Op::Eq, 0.0, 0.0, true),
        (Op::Eq, 1.0, 0.0, false),
    ] {
        assert_eq!(op.holds(a, b), want, "{a} {} {b}", op.as_str());
    }
}
