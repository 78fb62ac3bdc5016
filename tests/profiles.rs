//! Every shipped profile (and the Kubernetes one) parses into a valid RunConfig.

use hubload::cli::Cli;
use hubload::config::{profile, resolve};

fn resolve_profile(path: &std::path::Path) -> hubload::config::RunConfig {
    let mut args = vec!["hubload".to_string()];
    args.extend(profile::to_args(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    let cli = <Cli as clap::Parser>::try_parse_from(&args)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    resolve(&cli.run).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_shipped_profile_resolves() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.push(root.join("deploy/k8s/base/profile.toml"));
    assert!(files.len() >= 6, "{files:?}");
    for f in &files {
        resolve_profile(f);
    }
}

#[test]
fn the_seed_profiles_say_what_the_issue_asks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let r2 = resolve_profile(&root.join("seed-round2.toml"));
    assert_eq!(
        (r2.workload.tenants, r2.workload.sps, r2.workload.users),
        (100, 10, 10)
    );
    let labels: Vec<String> = r2.levels.iter().map(|l| l.load.label()).collect();
    assert_eq!(labels, ["1", "20", "50", "100", "200"]);
    assert_eq!(r2.client.timeout.as_millis(), 300);
    assert_eq!(r2.client.pool_per_host, Some(2));
    assert_eq!(r2.client.retries, 2);
    let r3 = resolve_profile(&root.join("seed-round3.toml"));
    assert_eq!(r3.client.timeout.as_secs(), 5);
    assert_eq!(r3.client.pool_timeout.as_secs(), 5);
    let shared = resolve_profile(&root.join("fanin-shared.toml"));
    assert_eq!(shared.workload.layout.topic_count(100, 4), 1);
    let hundred = resolve_profile(&root.join("fanin-100.toml"));
    assert_eq!(hundred.workload.layout.topic_count(100, 4), 100);
}

/// The program's own merging (`app::parse_args`): the profile's settings go before the
/// command line's flags, so a flag wins and what the flags leave alone comes from the profile.
#[test]
fn flags_override_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, "tenants = 7\nsps = 3\nconcurrency = [3, 4]\n").unwrap();
    let argv = [
        "hubload",
        "--tenants",
        "9",
        "--profile",
        p.to_str().unwrap(),
    ];
    let cli = hubload::app::parse_args(argv.iter().map(Into::into).collect()).unwrap();
    assert_eq!(cli.run.profile.as_deref(), Some(p.as_path()));
    let cfg = resolve(&cli.run).unwrap();
    assert_eq!((cfg.workload.tenants, cfg.workload.sps), (9, 3));
    let labels: Vec<String> = cfg.levels.iter().map(|l| l.load.label()).collect();
    assert_eq!(labels, ["3", "4"]);
    // Without the flag, the profile's value stands.
    let argv = ["hubload", "--profile", p.to_str().unwrap()];
    let cli = hubload::app::parse_args(argv.iter().map(Into::into).collect()).unwrap();
    assert_eq!(resolve(&cli.run).unwrap().workload.tenants, 7);
    // A missing profile is one line naming it.
    let argv = ["hubload", "--profile", "/nonexistent/p.toml"];
    match hubload::app::parse_args(argv.iter().map(Into::into).collect()) {
        Err(hubload::app::ArgsError::Invalid(line)) => {
            assert!(
                line.contains("/nonexistent/p.toml") && !line.contains('\n'),
                "{line}"
            )
        }
        other => panic!("{other:?}"),
    }
}
