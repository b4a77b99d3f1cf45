//! The host's memory as synthesis admission sees it. Before a partition starts synthesizing, the
//! dispatcher reads what the machine has available now, so that what the parameters, the
//! recordings, other processes and our own finished partitions hold is counted as it really is,
//! not as a configured number guessed it. The readings come from `/proc/meminfo`
//! (`MemAvailable`) clamped by the process's cgroup memory limit (`cgroup.rs`), or from a test.

use std::sync::Arc;

/// One reading, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMem {
    pub total: u64,
    /// What can be allocated without swapping (`MemAvailable`: free memory plus the page cache
    /// and slabs the kernel can reclaim).
    pub available: u64,
}

/// Where the readings come from: the system (`/proc/meminfo`), nothing (no check), or a
/// function a test gives.
#[derive(Clone)]
pub struct HostMemory(Option<Arc<dyn Fn() -> Option<HostMem> + Send + Sync>>);

impl HostMemory {
    /// The machine's memory, from `/proc/meminfo` (where there is none, no reading).
    pub fn system() -> Self {
        HostMemory(Some(Arc::new(meminfo)))
    }
    /// No readings: only the configured host budget limits synthesis.
    pub fn unchecked() -> Self {
        HostMemory(None)
    }
    /// Readings from `f` (tests: memory that changes on cue).
    pub fn from_fn(f: impl Fn() -> Option<HostMem> + Send + Sync + 'static) -> Self {
        HostMemory(Some(Arc::new(f)))
    }
    pub fn read(&self) -> Option<HostMem> {
        self.0.as_ref().and_then(|f| f())
    }
}

impl Default for HostMemory {
    fn default() -> Self {
        HostMemory::system()
    }
}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            None => "HostMemory(unchecked)",
            Some(_) => "HostMemory(read)",
        })
    }
}

/// The machine's `/proc/meminfo`, clamped by the memory limit of this process's cgroup (and its
/// ancestors'), which `/proc/meminfo` does not show: see [`cgroup`](super::cgroup).
fn meminfo() -> Option<HostMem> {
    let m = parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)?;
    Some(match super::cgroup::own_limit() {
        Some(limit) => limit.clamp(m),
        None => m,
    })
}

/// The value of the `name` line (`MemTotal:`, `VmHWM:` …) of a `/proc` text whose values are in
/// kB, in bytes.
pub fn kb_field(text: &str, name: &str) -> Option<u64> {
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(name))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text (kB there, bytes here).
pub fn parse_meminfo(text: &str) -> Option<HostMem> {
    Some(HostMem {
        total: kb_field(text, "MemTotal:")?,
        available: kb_field(text, "MemAvailable:")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes_and_a_missing_field_is_no_reading() {
        let text =
            "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   65536000 kB\n";
        assert_eq!(
            parse_meminfo(text),
            Some(HostMem {
                total: 131_072_000 * 1024,
                available: 65_536_000 * 1024
            })
        );
        assert_eq!(parse_meminfo("MemTotal: 10 kB\n"), None);
        assert_eq!(parse_meminfo("MemTotal: x kB\nMemAvailable: 1 kB\n"), None);
        if std::path::Path::new("/proc/meminfo").exists() {
            let m = HostMemory::system().read().expect("this machine's meminfo");
            assert!(m.available <= m.total && m.total > 0);
        }
    }
}
