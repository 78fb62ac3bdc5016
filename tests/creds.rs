//! Credentials against a capture server, with the built binary: no input injects a header,
//! every request carries exactly the configured `Authorization`, and no secret shows anywhere
//! a run writes or prints.

use std::path::Path;
use std::process::Output;

use base64::Engine as _;

use crate::support::capture::{Capture, Reply, ACCEPTED, WEBSUB_HUB_400};
use crate::util::bin;

const TOPIC: &str = "hubload.shared.schema.WSO2.v1.event";

/// A short run against `url`: one shared topic, `n` publishes on 2 connections.
fn small_run<'a>(url: &'a str, n: &'a str) -> Vec<&'a str> {
    vec![
        "--hub-url",
        url,
        "--topics",
        "shared",
        "--concurrency",
        "2",
        "--requests",
        n,
        "--out",
        "r",
    ]
}

fn with<'a>(base: Vec<&'a str>, more: &[&'a str]) -> Vec<&'a str> {
    base.into_iter().chain(more.iter().copied()).collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn header_injection_is_refused_before_any_request() {
    let cap = Capture::start(ACCEPTED);
    let url = cap.url.as_str();
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--hub-token", "x\r\nX-Injected: 1"],
            "hubload: error: invalid --hub-token: contains a control character",
        ),
        (
            &["--header", "A: b\r\nX-Injected: y"],
            "hubload: error: invalid --header: contains a control character",
        ),
        (
            &["--header", "X Injected: 1"],
            "hubload: error: invalid --header: has a header name that is not an RFC 7230 token",
        ),
        (
            &["--header", "Content-Length: 0"],
            "hubload: error: invalid --header: sets `Content-Length`, which hubload writes itself",
        ),
    ];
    for (flags, want) in cases {
        let out = bin(&with(small_run(url, "5"), flags), dir.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: {err}");
        assert!(err.starts_with(want), "{flags:?}: {err}");
        assert!(!err.contains("Injected"), "{flags:?}: {err}");
    }
    assert_eq!(cap.connections(), 0, "the server saw a connection");
    assert_eq!(cap.requests().len(), 0);
}

#[test]
fn a_token_file_with_a_trailing_newline_works_for_every_request() {
    let cap = Capture::start(ACCEPTED);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "abc\n").unwrap();
    let out = bin(
        &with(small_run(&cap.url, "20"), &["--hub-token-file", "token"]),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = cap.requests();
    // One registration and exactly 20 publishes.
    assert_eq!(reqs.len(), 21);
    for r in &reqs {
        assert_eq!(r.headers("authorization"), ["Bearer abc"], "{}", r.head);
        assert!(
            r.head.contains("\r\nAuthorization: Bearer abc\r\n"),
            "{}",
            r.head
        );
    }
    let publishes = reqs
        .iter()
        .filter(|r| r.head.starts_with("POST /hub?hub.mode=publish&"))
        .count();
    assert_eq!(publishes, 20);
}

#[test]
fn url_user_info_arrives_as_basic_on_every_request_and_leaves_the_url() {
    let cap = Capture::start(ACCEPTED);
    let dir = tempfile::tempdir().unwrap();
    let url = cap.url.replace("http://", "http://al%69ce:p%40ss@");
    let out = bin(
        &with(small_run(&url, "10"), &["--header", "X-Api-Key: k1"]),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let want = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:p@ss")
    );
    let reqs = cap.requests();
    assert_eq!(reqs.len(), 11);
    for r in &reqs {
        assert_eq!(r.headers("authorization"), [want.as_str()], "{}", r.head);
        assert_eq!(r.headers("x-api-key"), ["k1"], "{}", r.head);
        assert!(!r.head.contains("alice"), "{}", r.head);
    }
}

/// Every file under `dir`, recursively.
pub(crate) fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Run the binary in `dir` with debug logging, tables on stdout, a JTL and reports.
pub(crate) fn full_run(dir: &Path, args: &[&str]) -> Output {
    full_run_env(dir, args, &[])
}

/// [`full_run`] with these environment variables set (a proxy, say).
pub(crate) fn full_run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    crate::util::hubload_command()
        .args(args)
        .args(["--jtl", "run.jtl"])
        .current_dir(dir)
        .env("RUST_LOG", "debug")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// No secret (nor its Basic or Bearer form) in any file the run wrote, nor on stdout/stderr.
pub(crate) fn assert_nowhere(dir: &Path, out: &Output, secrets: &[&str]) {
    let mut places: Vec<(String, Vec<u8>)> = files(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "token"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    assert!(places.iter().any(|(p, _)| p.ends_with("run.jtl")));
    assert!(places.iter().any(|(p, _)| p.ends_with("summary.json")));
    assert!(places.iter().any(|(p, _)| p.ends_with("report.html")));
    places.push(("stdout".into(), out.stdout.clone()));
    places.push(("stderr".into(), out.stderr.clone()));
    for (place, bytes) in &places {
        let text = String::from_utf8_lossy(bytes);
        for s in secrets {
            assert!(!text.contains(s), "{place} shows `{s}`");
        }
    }
}

#[test]
fn no_secret_shows_anywhere_a_run_writes_or_prints() {
    let password = "PW-s3cr3t-1";
    let token = "TOKEN-s3cr3t-2";
    let key = "KEY-s3cr3t-3";
    let header = format!("X-Api-Key: {key}");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("alice:{password}"));
    let secrets = [password, token, key, &basic];

    // A URL password and a header value (a token would be a second Authorization).
    let cap = Capture::start(ACCEPTED);
    let dir = tempfile::tempdir().unwrap();
    let url = cap
        .url
        .replace("http://", &format!("http://alice:{password}@"));
    let out = full_run(dir.path(), &with_header(small_run(&url, "10"), &header));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(cap.requests().len(), 11);
    assert!(
        cap.requests()[1].head.contains(&basic),
        "the secret was used"
    );
    assert_nowhere(dir.path(), &out, &secrets);

    // A token (from the flag and from a file) and the header value.
    for token_flag in [["--hub-token", token], ["--hub-token-file", "token"]] {
        let cap = Capture::start(ACCEPTED);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), format!("{token}\r\n")).unwrap();
        let mut args = with_header(small_run(&cap.url, "10"), &header);
        args.extend(token_flag);
        let out = full_run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            cap.requests()[3].headers("authorization"),
            [format!("Bearer {token}")]
        );
        assert_nowhere(dir.path(), &out, &secrets);
    }

    // A failed run: the error line names the URL without its password.
    let cap = Capture::start(Reply {
        status: "503 Service Unavailable",
        content_type: "text/plain",
        body: "down",
    });
    let dir = tempfile::tempdir().unwrap();
    let url = cap
        .url
        .replace("http://", &format!("http://alice:{password}@"));
    let out = full_run(dir.path(), &with_header(small_run(&url, "10"), &header));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cannot register topics at the hub {}", cap.url)),
        "{err}"
    );
    for s in secrets {
        assert!(!err.contains(s), "stderr shows `{s}`: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains(s));
    }
}

fn with_header<'a>(mut base: Vec<&'a str>, header: &'a str) -> Vec<&'a str> {
    base.extend(["--header", header]);
    base
}

#[test]
fn a_rejected_registration_repeats_the_hub_reason_with_a_dialect_hint() {
    // What flask-websub answers a Ballerina register (no form body).
    let cap = Capture::start(WEBSUB_HUB_400);
    let dir = tempfile::tempdir().unwrap();
    let out = bin(&small_run(&cap.url, "5"), dir.path());
    assert_eq!(out.status.code(), Some(2));
    // The run banner comes first; the error is the one line after it.
    let err = stderr(&out);
    assert_eq!(
        err.lines()
            .filter(|l| l.starts_with("hubload: error"))
            .count(),
        1
    );
    assert_eq!(
        err.lines()
            .last()
            .map(|l| format!("{l}\n"))
            .unwrap_or_default(),
        format!(
            "hubload: error: cannot register topics at the hub {}: register {TOPIC}: HTTP 400 \
             (Missing form argument: hub.mode); does this hub speak the websub dialect? try \
             --dialect websub\n",
            cap.url
        )
    );
    // A form reply: its hub.reason, decoded, with control characters escaped.
    let cap = Capture::start(Reply {
        status: "403 Forbidden",
        content_type: "application/x-www-form-urlencoded",
        body: "hub.mode=denied&hub.reason=tenant+quota%0Aexceeded",
    });
    let out = bin(&small_run(&cap.url, "5"), dir.path());
    assert_eq!(
        error_line(&out),
        format!(
            "hubload: error: cannot register topics at the hub {}: register {TOPIC}: denied \
             (HTTP 403: tenant quota\\nexceeded)\n",
            cap.url
        )
    );
}

/// The one error line of a failed run (the run banner comes before it on stderr).
fn error_line(out: &std::process::Output) -> String {
    let err = stderr(out);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("hubload: error"))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    format!("{}\n", errors[0])
}
