//! hubload in a CPU cgroup of 0.2 cores (cgroup v1 or v2, as root): asked for 40,000 events/s
//! it marks that level `generator_bound`; a light level before it is not marked.

use std::path::PathBuf;
use std::process::Command;

use hubload_hub::FaultConfig;

use crate::util::{read_summary, Scenario, SERIAL};

/// A fresh cgroup limited to `cores` CPUs, removed when dropped. Its weight is the highest
/// there is, so on a busy machine it still gets its whole allowance whenever it wants it: the
/// quota alone is a cap, not a share, and beside two busy loops hubload got 0.88 of it.
struct CpuCgroup(PathBuf);

impl Drop for CpuCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A CPU-limited cgroup, or `None` after a skip line (a failure when `CI` is set: CI runs as
/// root on a machine with a cpu controller).
fn cpu_cgroup(cores: f64) -> Option<CpuCgroup> {
    let name = format!("hubload-test-{}", std::process::id());
    let quota = (cores * 100_000.0) as u64;
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu");
    let made = if v1.join("cpu.cfs_quota_us").exists() {
        let dir = v1.join(&name);
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_period_us"), "100000"))
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string()))
            .and_then(|()| std::fs::write(dir.join("cpu.shares"), "262144"))
            .map(|()| dir)
    } else {
        let root = PathBuf::from("/sys/fs/cgroup");
        let dir = root.join(&name);
        let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("cpu.max"), format!("{quota} 100000")))
            .and_then(|()| std::fs::write(dir.join("cpu.weight"), "10000"))
            .map(|()| dir)
    };
    match made {
        Ok(dir) => Some(CpuCgroup(dir)),
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
    let Some(cg) = cpu_cgroup(0.2) else {
        return;
    };
    let _turn = SERIAL.lock().await;
    let out_dir = sc.dir.path().join("r");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"",
        cg.0.display()
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
    // The hub stays in this process, outside the cgroup.
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
