//! The connection string's own SAS token (`SharedAccessSignature=`), which hubload cannot
//! renew: expired, or expiring before the run's planned end, it is named with its expiry time
//! (never the token). A run refuses to start on the same finding.

use std::time::Duration;

use hubload_servicebus::given_token::unix_now;
use hubload_servicebus::ConnectionString;

use super::step::Step;
use crate::config::RunConfig;

/// Set-up beyond the levels' own time (connections, attaches, subscribers, the reports).
const SETUP: Duration = Duration::from_secs(60);

/// The run's length as planned: every level's warm-up and duration, and whether that is all
/// of it (a level with `--requests` alone has no planned length).
pub fn planned(cfg: &RunConfig) -> (Duration, bool) {
    let mut total = Duration::ZERO;
    let mut known = true;
    for l in &cfg.levels {
        total += l.warmup;
        match l.stop.duration {
            Some(d) => total += d,
            None => known = false,
        }
    }
    (total, known)
}

/// The `token` line for `cs` at unix time `now_s`, or `None` when it carries no token of
/// its own (hubload signs a fresh one per audience from the key).
pub fn step(cfg: &RunConfig, cs: &ConnectionString, now_s: u64) -> Option<Step> {
    let g = cs.given_token()?;
    let (levels, known) = planned(cfg);
    let need = levels + SETUP;
    let at_least = if known { "" } else { "at least " };
    let renew = "make a new token that lasts the run, or give SharedAccessKeyName and SharedAccessKey so hubload signs its own";
    let who = format!("the SharedAccessSignature of key name {}", g.key_name);
    Some(match g.left_at(now_s) {
        None => Step::fail(
            "token",
            format!(
                "{who} expired at {} ({} ago)",
                g.expiry_utc(),
                span(Duration::from_secs(now_s - g.expiry))
            ),
            renew,
        ),
        Some(left) if left < need => Step::fail(
            "token",
            format!(
                "{who} expires at {}, in {}: before the run's planned end ({at_least}{} with set-up)",
                g.expiry_utc(),
                span(left),
                span(need)
            ),
            renew,
        ),
        Some(left) => Step::ok(
            "token",
            format!(
                "{who} expires at {}, in {}: after the run's planned end ({at_least}{} with set-up)",
                g.expiry_utc(),
                span(left),
                span(need)
            ),
        ),
    })
}

/// [`step`] now.
pub fn step_now(cfg: &RunConfig, cs: &ConnectionString) -> Option<Step> {
    step(cfg, cs, unix_now())
}

/// `95 s`, `2 min 9 s`, `12 min`, `3 h 5 min`: whole units, for people.
fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=119 => format!("{s} s"),
        120..=7_199 if s % 60 != 0 => format!("{} min {} s", s / 60, s % 60),
        120..=7_199 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Status;
    use crate::config::test_flags::args;

    const KEY: &str = "c2VjcmV0LWtleS1ub3QtcmVhbA==";
    /// 2026-12-07T09:00:00Z.
    const EXPIRY: u64 = 1_796_634_000;

    fn cs_with_token() -> ConnectionString {
        let t = hubload_servicebus::sas::sas_token("sb://ns.example/", "SendOnly", KEY, EXPIRY);
        format!("Endpoint=sb://ns.example/;SharedAccessSignature={t}")
            .parse()
            .unwrap()
    }

    fn cfg(flags: &[&str]) -> RunConfig {
        crate::config::resolve(&args(flags)).unwrap()
    }

    #[test]
    fn expired_soon_and_fine_by_the_plan() {
        let cs = cs_with_token();
        // Two levels of 30 s with 5 s warm-up: 70 s of levels, 130 s with set-up.
        let c = cfg(&[
            "--concurrency",
            "1,2",
            "--duration",
            "30s",
            "--warmup",
            "5s",
        ]);
        assert_eq!(planned(&c), (Duration::from_secs(70), true));
        let s = step(&c, &cs, EXPIRY + 720).unwrap();
        assert_eq!(s.status, Status::Fail);
        assert_eq!(
            s.detail,
            "the SharedAccessSignature of key name SendOnly expired at 2026-12-07T09:00:00Z (12 min ago)"
        );
        let s = step(&c, &cs, EXPIRY - 129).unwrap();
        assert_eq!(s.status, Status::Fail);
        assert_eq!(
            s.detail,
            "the SharedAccessSignature of key name SendOnly expires at 2026-12-07T09:00:00Z, in 2 min 9 s: before the run's planned end (2 min 10 s with set-up)"
        );
        let s = step(&c, &cs, EXPIRY - 130).unwrap();
        assert_eq!(s.status, Status::Ok, "{}", s.detail);
    }

    #[test]
    fn requests_alone_count_as_at_least_and_a_key_has_no_line() {
        let c = cfg(&["--requests", "100"]);
        let s = step(&c, &cs_with_token(), EXPIRY - 7_300).unwrap();
        assert_eq!(s.status, Status::Ok);
        assert!(
            s.detail
                .ends_with("in 2 h 1 min: after the run's planned end (at least 60 s with set-up)"),
            "{}",
            s.detail
        );
        let keyed: ConnectionString =
            format!("Endpoint=sb://ns.example/;SharedAccessKeyName=k;SharedAccessKey={KEY}")
                .parse()
                .unwrap();
        assert!(step(&c, &keyed, EXPIRY).is_none());
    }
}
