//! hubload in a CPU cgroup of 0.2 cores (cgroup v1 or v2, as root): asked for 40,000 events/s
//! it marks that level `generator_bound`; a light level before it is not marked.

use std::path::PathBuf;
use std::process::Command;

use hubload_hub::FaultConfig;

use crate::util::{read_summary, Scenario, SERIAL};

/// A fresh cgroup with the highest CPU weight there is, and a quota when given; removed when
/// dropped, after the test process moves back out of it if it moved in. The weight makes a
/// busy machine still give it what it wants: a quota alone is a cap, not a share (beside two
/// busy loops hubload got 0.88 of it), and a starved hub makes hubload wait, not work.
struct CpuCgroup {
    dir: PathBuf,
    /// Where the test process came from, when it moved in ([`CpuCgroup::enter`]).
    left: Option<PathBuf>,
}

impl CpuCgroup {
    /// Moves this whole test process (the hub's threads with it) into the cgroup, until drop.
    fn enter(&mut self) -> std::io::Result<()> {
        let from = own_cgroup(&self.dir)?;
        std::fs::write(
            self.dir.join("cgroup.procs"),
            std::process::id().to_string(),
        )?;
        self.left = Some(from);
        Ok(())
    }
}

impl Drop for CpuCgroup {
    fn drop(&mut self) {
        if let Some(from) = &self.left {
            let _ = std::fs::write(from.join("cgroup.procs"), std::process::id().to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory of this process's cgroup in the hierarchy `dir` belongs to (v1's `cpu`
/// controller, or v2's unified tree).
fn own_cgroup(dir: &std::path::Path) -> std::io::Result<PathBuf> {
    let root = dir.parent().expect("a cgroup has a parent").to_path_buf();
    let v1 = root.ends_with("cpu");
    let lines = std::fs::read_to_string("/proc/self/cgroup")?;
    let path = lines
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once(':')?;
            rest.split_once(':')
        })
        .find(|(ctl, _)| {
            if v1 {
                ctl.split(',').any(|c| c == "cpu")
            } else {
                ctl.is_empty()
            }
        })
        .map(|(_, p)| p.trim_start_matches('/').to_string())
        .ok_or_else(|| std::io::Error::other("no cpu cgroup in /proc/self/cgroup"))?;
    Ok(root.join(path))
}

/// A cgroup of the highest weight, limited to `cores` CPUs when given, or `None` after a skip
/// line (a failure when `CI` is set: CI runs as root on a machine with a cpu controller).
fn cpu_cgroup(role: &str, cores: Option<f64>) -> Option<CpuCgroup> {
    let name = format!("hubload-test-{role}-{}", std::process::id());
    let quota = cores.map(|c| (c * 100_000.0) as u64);
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu");
    let made = if v1.join("cpu.cfs_quota_us").exists() {
        let dir = v1.join(&name);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_period_us"), "100000"))
            .and_then(|()| match quota {
                Some(q) => std::fs::write(dir.join("cpu.cfs_quota_us"), q.to_string()),
                None => Ok(()),
            })
            .and_then(|()| std::fs::write(dir.join("cpu.shares"), "262144"))
            .map(|()| dir)
    } else {
        let root = PathBuf::from("/sys/fs/cgroup");
        let dir = root.join(&name);
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
        std::fs::create_dir_all(&dir)
            .and_then(|()| match quota {
                Some(q) => std::fs::write(dir.join("cpu.max"), format!("{q} 100000")),
                None => Ok(()),
            })
            .and_then(|()| std::fs::write(dir.join("cpu.weight"), "10000"))
            .map(|()| dir)
    };
    match made {
        Ok(dir) => Some(CpuCgroup { dir, left: None }),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "cannot make a CPU cgroup ({e}) and CI is set: run as root with a cpu controller"
            );
            eprintln!("!!!!!!!! SKIPPED: cannot make a CPU cgroup ({e}); the generator-bound test did not run !!!!!!!!");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_starved_level_is_generator_bound_and_a_light_one_is_not() {
    let sc = Scenario::start(FaultConfig::default()).await;
    let Some(cg) = cpu_cgroup("load", Some(0.2)) else {
        return;
    };
    let Some(mut hub_cg) = cpu_cgroup("hub", None) else {
        return;
    };
    let _turn = SERIAL.lock().await;
    // The hub (this process) gets the CPU it asks for, so only hubload is starved.
    hub_cg
        .enter()
        .expect("move the test process into the hub's cgroup");
    let out_dir = sc.dir.path().join("r");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"",
        cg.dir.display()
    );
    let args: Vec<String> = [
        "--hub-url",
        &sc.hub.url,
        "--quiet",
        "--tenants",
        "4",
        "--rate",
        "20,40000",
        "--duration",
        "3s",
        "--out",
        &out_dir.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The hub stays in this process, in its own cgroup; hubload's shell moves into the limited one.
    let out = tokio::task::spawn_blocking(move || {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_hubload"))
            .args(args)
            .env("RUST_LOG", "error")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_summary(&out_dir);
    let (light, heavy) = (&r.levels[0], &r.levels[1]);
    let g = heavy.generator.as_ref().unwrap();
    assert!((g.allowance_cores - 0.2).abs() < 1e-9, "{g:?}");
    assert_eq!(heavy.generator_bound, Some(true), "{g:?}");
    // Starved, hubload is bound by its CPU (it used ≥ 90 % of its 0.2 cores) or, when the
    // machine is so busy that even the cgroup's weight does not get it its whole quota (0.88
    // of it was seen beside two busy loops), by the scheduling delay that starving causes. The
    // CPU reason is there exactly when the ratio says so; any other is the scheduling delay's.
    assert_eq!(
        g.bound_because.iter().any(|b| b.starts_with("CPU ")),
        g.cpu_ratio >= 0.9,
        "{g:?}"
    );
    let sched = format!(
        "scheduling delay p99 {} µs ≥ 10 % of the median",
        g.sched_delay_p99_us
    );
    assert!(
        g.bound_because
            .iter()
            .all(|b| b.starts_with("CPU ") || b.starts_with(&sched)),
        "{g:?}"
    );
    assert_eq!(light.generator_bound, Some(false), "{:?}", light.generator);
    let table = std::fs::read_to_string(out_dir.join("table.txt")).unwrap();
    assert!(table.contains("40000/s*"), "{table}");
    assert!(!table.contains("20/s*"), "{table}");
    let note = format!(
        "* 40000/s: generator-bound ({}): these latencies measure hubload",
        g.bound_because.join("; ")
    );
    assert!(table.contains(&note), "{note}\n{table}");
}
