//! The generator's CPU: the process's CPU time so far (user + system, all threads) and how
//! many cores it may use (the cgroup's CPU quota, v2 or v1, else the CPUs it may run on).

use std::path::{Path, PathBuf};

/// CPU seconds this process has used so far (user + system, every thread), if readable.
pub fn process_cpu_s() -> Option<f64> {
    // schedstat: nanoseconds on a CPU; exact, unlike /proc/self/stat's clock ticks.
    if let Some(ns) = std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
    {
        return Some(ns as f64 / 1e9);
    }
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command (which may hold spaces) end at its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux ABI.
    Some((utime + stime) / 100.0)
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
    fn this_process_has_used_some_cpu() {
        let a = process_cpu_s().unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_s().unwrap() > a);
        assert!(allowance().0 > 0.0);
    }
}
