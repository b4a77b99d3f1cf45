//! The memory limit of the cgroup this process runs in, as admission must see it. Under systemd's
//! `MemoryMax=`, a container's limit or a `memory.max` set by hand, `/proc/meminfo` still shows
//! the whole machine: a process that trusts `MemAvailable` there is killed by the kernel long
//! before the machine is short. So the host's reading is the smaller of the machine's and each
//! limited cgroup's, from this process's cgroup up to the root: its limit less what it holds,
//! plus the file cache it could reclaim.
//!
//! cgroup v2 (`memory.max`, `memory.current`, `memory.stat`'s `inactive_file`) and v1
//! (`memory.limit_in_bytes`, `memory.usage_in_bytes`, `memory.stat`'s `total_inactive_file`) are
//! both read. A file that is absent or says `max` is no limit.

use std::path::{Path, PathBuf};

use super::host_memory::HostMem;

/// One limited cgroup: its limit and what it could still allocate, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLimit {
    pub limit: u64,
    pub available: u64,
}

impl CgroupLimit {
    /// The machine's reading `m` as this limit allows it.
    pub fn clamp(self, m: HostMem) -> HostMem {
        HostMem {
            total: m.total.min(self.limit),
            available: m.available.min(self.available),
        }
    }
}

/// The tightest limit over this process's cgroup and its ancestors (`None`: no limit, or no
/// cgroup file system).
pub fn own_limit() -> Option<CgroupLimit> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_under(Path::new("/sys/fs/cgroup"), &text)
}

/// [`own_limit`] with the cgroup file system mounted at `root` and `/proc/self/cgroup`'s text
/// `proc_cgroup` (tests give both).
pub fn limit_under(root: &Path, proc_cgroup: &str) -> Option<CgroupLimit> {
    let mut tightest: Option<CgroupLimit> = None;
    for dir in cgroup_dirs(root, proc_cgroup) {
        if let Some(l) = read_limit(&dir) {
            tightest = Some(match tightest {
                Some(t) if t.available <= l.available => t,
                _ => l,
            });
        }
    }
    tightest
}

/// The directories whose limits apply: the v2 cgroup (`0::/path`) or the v1 memory cgroup
/// (`N:memory:/path` or `N:…,memory,…:/path`), then each ancestor up to the mount root.
fn cgroup_dirs(root: &Path, proc_cgroup: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let base = if controllers.is_empty() {
            root.to_path_buf()
        } else if controllers.split(',').any(|c| c == "memory") {
            root.join("memory")
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            dirs.push(dir.clone());
            if dir == base || !dir.pop() || !dir.starts_with(&base) {
                break;
            }
        }
    }
    dirs
}

/// One cgroup directory's limit, if it has one.
fn read_limit(dir: &Path) -> Option<CgroupLimit> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let (limit, usage, inactive) = if let Some(max) = read("memory.max") {
        (
            number(&max)?,
            number(&read("memory.current")?)?,
            stat_field(&read("memory.stat").unwrap_or_default(), "inactive_file"),
        )
    } else {
        (
            number(&read("memory.limit_in_bytes")?)?,
            number(&read("memory.usage_in_bytes")?)?,
            stat_field(
                &read("memory.stat").unwrap_or_default(),
                "total_inactive_file",
            ),
        )
    };
    // v1 writes "no limit" as a page-rounded i64::MAX.
    if limit >= 1 << 62 {
        return None;
    }
    Some(CgroupLimit {
        limit,
        available: limit.saturating_sub(usage.saturating_sub(inactive)),
    })
}

/// A cgroup file's number (`max`: none).
fn number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A `memory.stat` line's value (0 when absent).
fn stat_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cuzk-cgroup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_v2_memory_max_limits_what_admission_sees_less_what_the_cgroup_holds() {
        let root = scratch("v2");
        let cg = root.join("system.slice/cuzk.service");
        write(&cg, "memory.max", "107374182400\n");
        write(&cg, "memory.current", "40000000000\n");
        write(
            &cg,
            "memory.stat",
            "anon 35000000000\ninactive_file 5000000000\n",
        );
        write(&root.join("system.slice"), "memory.max", "max\n");
        let l = limit_under(&root, "0::/system.slice/cuzk.service\n").expect("a limit");
        assert_eq!(l.limit, 107_374_182_400);
        assert_eq!(l.available, 107_374_182_400 - 35_000_000_000);
        let machine = HostMem {
            total: 128 << 30,
            available: 120 << 30,
        };
        let seen = l.clamp(machine);
        assert_eq!(seen.total, 107_374_182_400);
        assert_eq!(seen.available, 107_374_182_400 - 35_000_000_000);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_tightest_limit_among_the_ancestors_wins_and_max_is_no_limit() {
        let root = scratch("parents");
        let leaf = root.join("a/b");
        write(&leaf, "memory.max", "max\n");
        write(&leaf, "memory.current", "1000\n");
        write(&root.join("a"), "memory.max", "50000\n");
        write(&root.join("a"), "memory.current", "20000\n");
        let l = limit_under(&root, "0::/a/b\n").expect("the parent's limit");
        assert_eq!((l.limit, l.available), (50_000, 30_000));
        assert_eq!(limit_under(&root, "0::/elsewhere\n"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_v1_memory_cgroup_is_read_and_its_unlimited_value_is_no_limit() {
        let root = scratch("v1");
        let cg = root.join("memory/docker/abc");
        write(&cg, "memory.limit_in_bytes", "8589934592\n");
        write(&cg, "memory.usage_in_bytes", "1073741824\n");
        write(&cg, "memory.stat", "total_inactive_file 73741824\n");
        let text = "12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n";
        let l = limit_under(&root, text).expect("a v1 limit");
        assert_eq!(l.available, 8_589_934_592 - 1_000_000_000);
        write(&cg, "memory.limit_in_bytes", "9223372036854771712\n");
        assert_eq!(limit_under(&root, text), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_cgroup_over_its_limit_has_nothing_available_rather_than_wrapping() {
        let root = scratch("over");
        write(&root.join("x"), "memory.max", "1000\n");
        write(&root.join("x"), "memory.current", "5000\n");
        let l = limit_under(&root, "0::/x\n").expect("a limit");
        assert_eq!(l.available, 0);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
