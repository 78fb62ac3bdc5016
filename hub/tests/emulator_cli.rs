//! `hubload-hub servicebus-emulator` on bad input: a malformed Config.json, an unknown tier or
//! an impossible messaging-unit count is one line naming the flag (and the JSON path), exit 2.

use std::process::Command;

fn emulator(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hubload-hub"))
        .args([
            "servicebus-emulator",
            "--listen",
            "127.0.0.1:0",
            "--log-every",
            "0",
        ])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn config_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hubload-emulator-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn malformed_config_json_names_the_json_path() {
    let bad_duration = config_file(
        "duration.json",
        r#"{"UserConfig": {"Namespaces": [{"Name": "ns", "Topics": [{"Name": "t",
            "Subscriptions": [{"Name": "s", "Properties": {"LockDuration": "one minute"}}]}]}]}}"#,
    );
    let (code, err) = emulator(&["--config", bad_duration.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "hubload-hub: --config {}: UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Properties.LockDuration: must be an ISO 8601 duration such as PT1M or P14D",
            bad_duration.display()
        )
    );

    let not_json = config_file("broken.json", "{\"UserConfig\": [");
    let (code, err) = emulator(&["--config", not_json.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("$: not valid JSON (line 1"), "{err}");

    let (code, err) = emulator(&["--config", "/nonexistent/Config.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("hubload-hub: --config /nonexistent/Config.json: cannot read"),
        "{err}"
    );
}

#[test]
fn unknown_tier_and_bad_units_exit_2() {
    let (code, err) = emulator(&["--tier", "gold"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid value 'gold' for '--tier <TIER>'"),
        "{err}"
    );
    let (code, err) = emulator(&["--tier", "premium", "--messaging-units", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        "hubload-hub: --messaging-units must be 1, 2, 4, 8 or 16 (Azure's Premium sizes)"
    );
}
