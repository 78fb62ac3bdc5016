//! Bad input gets one clear line naming the problem and exit code 2; never a panic.

use std::process::Output;

use crate::util::{assert_exit, bin, bin_env, line, SERIAL};

/// Exit 2, one stderr line containing `needle`, no panic, nothing on stdout.
fn assert_one_line_exit_2(out: &Output, args: &[&str], needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line: {err}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: `{}` lacks `{needle}`",
        lines[0]
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{args:?}: printed to stdout");
}

fn assert_one_line_error(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("profiles")).unwrap();
    std::fs::write(
        dir.path().join("profiles/typo.toml"),
        "tenants = 3\ntenents = 4\n",
    )
    .unwrap();
    assert_one_line_exit_2(&bin(args, dir.path()), args, needle);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    assert_one_line_error(&["--frobnicate"], "--frobnicate");
    assert_one_line_error(&["--tenants", "0"], "--tenants `0`: must be at least 1");
    assert_one_line_error(&["--tenants", "-5"], "--tenants `-5`");
    assert_one_line_error(&["--users", "lots"], "--users `lots`");
    assert_one_line_error(&["--concurrency", "10,0"], "--concurrency `0`");
    assert_one_line_error(
        &["--duration", "soon"],
        "--duration `soon`: is not a duration",
    );
    assert_one_line_error(&["--timeout", "0s"], "--timeout `0s`");
    assert_one_line_error(&["--topics", "many"], "--topics `many`");
    assert_one_line_error(&["--client", "java"], "--client `java`");
    assert_one_line_error(&["--hub-url", "ftp://x/hub"], "--hub-url");
    assert_one_line_error(&["--threshold", "p99<soon"], "--threshold");
    assert_one_line_error(&["--profile", "typo"], "unknown key `tenents`");
    assert_one_line_error(&["--profile", "nope"], "profile nope: no such file");
    assert_one_line_error(&["--rate", "10", "--concurrency", "5"], "not both");
}

/// Every combination `config` rejects, each before any load starts (no hub is started: the
/// run would take seconds, these take milliseconds).
#[test]
fn bad_combinations_are_one_line_and_exit_2() {
    for (args, needle) in [
        (
            &["--threads", "0"][..],
            "invalid --threads `0`: must be a whole number from 1 to 1024",
        ),
        (&["--threads", "1025"], "invalid --threads `1025`"),
        (
            &["--hub-url", "http://127.0.0.1:1/hub?hub.mode=publish"],
            "--hub-url `http://127.0.0.1:1/hub?hub.mode=publish`: already carries hub.mode",
        ),
        (
            &["--hub-servicebus", "--hub-url", "http://127.0.0.1:1/hub"],
            "--hub-servicebus `true`: runs the embedded hub; it cannot go with --hub-url",
        ),
        (
            &["--hub-servicebus", "--target", "servicebus"],
            "--hub-servicebus `true`: needs the websub target (the embedded hub)",
        ),
        (&["--open"], "--open applies to --plan"),
        (
            &["--arrivals", "poisson"],
            "--arrivals applies to the open model",
        ),
        (
            &["--concurrency", "1,,4"],
            "invalid --concurrency `1,,4`: has an empty item",
        ),
        (&["--rate", "5,"], "invalid --rate `5,`: has an empty item"),
        (
            &["--target", "websub,websub"],
            "invalid --target `websub,websub`: names websub twice",
        ),
        (
            &["--max-inflight", "9"],
            "--max-inflight applies to the open model",
        ),
        (
            &["--plan", "5,1s", "--rate", "5"],
            "--plan replaces --concurrency and --rate",
        ),
        (
            &["--threshold", "p99<+10%"],
            r#"invalid --threshold "p99<+10%": +10% is relative to a baseline"#,
        ),
        (&["--find-capacity"], "--find-capacity needs --slo"),
        (&["--slo", "p99<1s"], "--slo is used by --find-capacity"),
    ] {
        assert_one_line_error(args, needle);
    }
}

/// Values that parse but that no one can mean: refused like any bad value, before
/// any load, the line naming the flag and saying why.
#[test]
fn inputs_that_cannot_be_meant_are_one_line_and_exit_2() {
    for (args, needle) in [
        (
            &["--hub-url", "http://127.0.0.1:0/hub"][..],
            "invalid --hub-url `http://127.0.0.1:0/hub`: port 0 is no port a server can be reached on",
        ),
        (
            &["--hub-url", "http://u:s3cret@127.0.0.1:0/hub"],
            "--hub-url `http://u:redacted@127.0.0.1:0/hub`: port 0",
        ),
        (
            &["--subscribers", "1", "--callback-url", "http://127.0.0.1:0"],
            "invalid --callback-url `http://127.0.0.1:0`: port 0",
        ),
        (
            &[
                "--dialect",
                "websub",
                "--topic-url-prefix",
                "http://127.0.0.1:0/topics/",
            ],
            "invalid --topic-url-prefix `http://127.0.0.1:0/topics/`: port 0",
        ),
        (
            &["--capacity-max", "0"],
            "invalid --capacity-max `0`: must be a positive number",
        ),
        (
            &["--capacity-budget", "0s"],
            "invalid --capacity-budget `0s`: must be longer than zero",
        ),
        (
            &["--threshold", "errors<200%"],
            r#"invalid --threshold "errors<200%": can never fail: a share of attempts is between 0% and 100%"#,
        ),
        (
            &["--threshold", "p99>=0ms"],
            r#"invalid --threshold "p99>=0ms": can never fail: no measurement is below zero"#,
        ),
        (
            &["--threshold", "p99<0ms"],
            r#"invalid --threshold "p99<0ms": can never pass"#,
        ),
        (
            &["--find-capacity", "--slo", "p99<300ms,errors<=100%"],
            r#"invalid --slo "errors<=100%": can never fail"#,
        ),
    ] {
        assert_one_line_error(args, needle);
    }
}

/// A rate whose events are further apart than its level lasts is legal but almost surely a
/// mistake: the run goes ahead, sends its one event, and says so on stderr and in summary.json.
#[test]
fn a_rate_sparser_than_its_level_is_a_warning() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let args = line("--rate 0.0000001 --duration 1s --tenants 1 --out r");
    let out = bin(&args, dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_exit(&out, 0);
    let warning = "--rate 0.0000001/s: one event every 115.7 days, longer than the level's 1s (it sends one event)";
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    let summary = crate::util::read_summary(&dir.path().join("r"));
    assert_eq!(summary.warnings, vec![warning.to_string()]);
    assert_eq!(summary.levels[0].derived.samples, 1);
}

/// `hubload ARGS` with the shard variables `env`: exit 2, one line containing `needle`, and
/// nothing written (config refused it before any load).
fn assert_sharded_error(args: &[&str], env: &[(&str, &str)], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let all = [args, &["--out", "r"]].concat();
    assert_one_line_exit_2(&bin_env(&all, dir.path(), env), &all, needle);
    assert!(!dir.path().join("r").exists());
}

#[test]
fn shard_settings_are_checked_before_any_load() {
    let two = [
        ("HUBLOAD_SHARD_COUNT", "2"),
        ("JOB_COMPLETION_INDEX", "0"),
        ("HUBLOAD_RUN_ID", "cap"),
        ("HUBLOAD_START_AT", "2099-01-01T00:00:00Z"),
    ];
    assert_sharded_error(
        &["--find-capacity", "--slo", "p99<1s"],
        &two,
        "--find-capacity cannot run sharded (HUBLOAD_SHARD_COUNT > 1)",
    );
    assert_sharded_error(
        &["--target", "websub,servicebus"],
        &two,
        "--target websub,servicebus (side by side) cannot run sharded (HUBLOAD_SHARD_COUNT > 1)",
    );
    assert_sharded_error(
        &[],
        &[("HUBLOAD_SHARD_COUNT", "two")],
        "HUBLOAD_SHARD_COUNT: expected a whole number of shards",
    );
}

#[test]
fn an_unreachable_hub_is_one_line_and_exit_2() {
    let _turn = SERIAL.blocking_lock();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hub");
    let dir = tempfile::tempdir().unwrap();
    let out = bin(
        &[
            "--hub-url",
            &url,
            "--tenants",
            "2",
            "--duration",
            "1s",
            "--out",
            "r",
        ],
        dir.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot register topics at the hub") && err.contains("refused"),
        "{err}"
    );
    // The run banner comes first (its head line, then indented lines); then one error line.
    let banner_head = format!("hubload {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(err.lines().next(), Some(banner_head.as_str()), "{err}");
    assert_eq!(
        err.lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty() && !l.starts_with("  "))
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn secrets_never_appear_in_output_or_reports() {
    let _turn = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = bin(
        &[
            "--tenants",
            "2",
            "--requests",
            "20",
            "--concurrency",
            "2",
            "--hub-token",
            "s3cr3t-token-value",
            "--out",
            "r",
        ],
        dir.path(),
    );
    // The embedded hub needs no token; a token it does not check is simply sent.
    assert_exit(&out, 0);
    let mut seen =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    for f in std::fs::read_dir(dir.path().join("r")).unwrap() {
        seen += &std::fs::read_to_string(f.unwrap().path()).unwrap();
    }
    assert!(!seen.contains("s3cr3t-token-value"));
    assert!(seen.contains("<redacted>"));
}
