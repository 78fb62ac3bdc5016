//! The generator's CPU: the process's CPU time so far (user + system, all threads) and how
//! many cores it may use (the cgroup's CPU quota, v2 or v1, else the CPUs it may run on).

use std::path::{Path, PathBuf};

/// CPU seconds this process has used so far (user + system, every thread).
///
/// `CLOCK_PROCESS_CPUTIME_ID` sums every thread of the process, exactly. (`/proc/self/schedstat`
/// would not do: it is the main thread's alone, while the load runs on the runtime's threads.)
pub fn process_cpu_s() -> Option<f64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Some(t.tv_sec as f64 + t.tv_nsec as f64 / 1e9)
}

/// Cores this process may use, and where that figure came from.
pub fn allowance() -> (f64, &'static str) {
    let cpus = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        if let Some(q) = v2_quota(Path::new("/sys/fs/cgroup"), &cgroup) {
            return (q.min(cpus), "cgroup v2");
        }
    } else if let Some(q) = v1_quota(&cgroup) {
        return (q.min(cpus), "cgroup v1");
    }
    (cpus, "cpus")
}

/// The smallest `cpu.max` quota on the way from this process's cgroup up to the root.
fn v2_quota(root: &Path, cgroup: &str) -> Option<f64> {
    let rel = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mut dir = root.join(rel.trim_start_matches('/'));
    let mut best: Option<f64> = None;
    loop {
        if let Ok(s) = std::fs::read_to_string(dir.join("cpu.max")) {
            let mut w = s.split_whitespace();
            if let (Some(q), Some(p)) = (w.next(), w.next()) {
                if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                    if p > 0.0 {
                        best = Some(best.map_or(q / p, |b: f64| b.min(q / p)));
                    }
                }
            }
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            break;
        }
    }
    best
}

/// The smallest CFS quota (`cpu.cfs_quota_us` / `cpu.cfs_period_us`, −1 = none) on the way
/// from this process's v1 cpu cgroup up to the root.
fn v1_quota(cgroup: &str) -> Option<f64> {
    let rel = cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "cpu").then_some(path)
    })?;
    let root = ["/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("cpu.cfs_quota_us").exists())?;
    let mut dir = root.join(rel.trim_start_matches('/'));
    let mut best: Option<f64> = None;
    loop {
        let read = |f: &str| -> Option<f64> {
            std::fs::read_to_string(dir.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        if let (Some(q), Some(p)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")) {
            if q > 0.0 && p > 0.0 {
                best = Some(best.map_or(q / p, |b: f64| b.min(q / p)));
            }
        }
        if dir == root || !dir.pop() || !dir.starts_with(&root) {
            break;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_takes_the_tightest_quota_on_the_way_up() {
        let root = tempfile::tempdir().unwrap();
        let leaf = root.path().join("a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(root.path().join("a/cpu.max"), "20000 100000\n").unwrap();
        std::fs::write(leaf.join("cpu.max"), "max 100000\n").unwrap();
        assert_eq!(v2_quota(root.path(), "0::/a/b\n"), Some(0.2));
        assert_eq!(v2_quota(root.path(), "1:cpu:/\n"), None);
    }

    #[test]
    fn every_thread_of_the_process_counts() {
        let a = process_cpu_s().unwrap();
        // Another thread spins until its own CPU clock shows 20 ms (10 s of wall time at most):
        // the process's figure must include that thread's time, not only the caller's.
        let spun_s = std::thread::spawn(|| {
            let thread_s = || {
                let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
                t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
            };
            let (t0, wall) = (thread_s(), std::time::Instant::now());
            while thread_s() - t0 < 0.020 && wall.elapsed() < std::time::Duration::from_secs(10) {
                std::hint::black_box(0u64);
            }
            thread_s() - t0
        })
        .join()
        .unwrap();
        assert!(
            spun_s >= 0.020,
            "the spinning thread got {spun_s} s of CPU in 10 s"
        );
        assert!(process_cpu_s().unwrap() - a >= spun_s);
        assert!(allowance().0 > 0.0);
    }
}
