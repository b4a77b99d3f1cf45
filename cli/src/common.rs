//! Pieces the subcommands share: picking an example circuit and its parameter file.

use std::path::Path;
use std::time::Instant;

use cuzk_engine::circuits::Example;
use cuzk_engine::setup::open_or_generate;
use cuzk_srs::{OpenOptions, Srs};

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

pub fn example(name: &str, size: Option<usize>, seed: u64) -> Result<(Example, usize)> {
    let size = size.unwrap_or_else(|| Example::default_size(name));
    let ex = Example::new(name, size, seed).ok_or_else(|| {
        format!(
            "unknown circuit `{name}`; choose one of {}",
            Example::NAMES.join(", ")
        )
    })?;
    Ok((ex, size))
}

/// Opens (or generates, the first time) the parameters of example `name` at `size`.
pub fn example_params(dir: &Path, name: &str, size: usize, opts: &OpenOptions) -> Result<Srs> {
    let path = Example::params_path(dir, name, size);
    let (ex, _) = example(name, Some(size), 0)?;
    let start = Instant::now();
    if !path.exists() {
        eprintln!(
            "generating parameters for {name} (size {size}) into {} — once; later runs reuse them",
            path.display()
        );
    }
    let (srs, generated) = open_or_generate(&path, ex, Example::SETUP_SEED, opts)?;
    eprintln!(
        "parameters {}: {} in {:.2} s ({:?})",
        path.display(),
        if generated { "generated" } else { "opened" },
        start.elapsed().as_secs_f64(),
        srs.origin()
    );
    Ok(srs)
}

/// The steady state of a run on GPU 0: from its first kernel to its last (before, the GPU waits
/// for the first job's synthesis; after, nothing is left to run), or, on a backend without
/// device-timed steps, from the first compute to the last. Returns `(from_us, to_us, busy)`.
pub fn steady_window(spans: &[cuzk_actors::pipeline::timeline::Span]) -> (u64, u64, f64) {
    use cuzk_actors::pipeline::timeline::{busy_fraction, KERNEL_STAGES};
    let kernels: Vec<_> = spans
        .iter()
        .filter(|s| s.gpu == Some(0) && KERNEL_STAGES.contains(&s.stage))
        .collect();
    let window: Vec<_> = if kernels.is_empty() {
        spans.iter().filter(|s| s.stage == "compute").collect()
    } else {
        kernels
    };
    let from = window.iter().map(|s| s.start_us).min().unwrap_or(0);
    let to = window.iter().map(|s| s.end_us).max().unwrap_or(0);
    (from, to, busy_fraction(spans, 0, from, to))
}

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes, if there is one.
pub fn proc_status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    cuzk_actors::resources::host_memory::kb_field(&text, field)
}

/// CPU seconds this process has used so far (user + system, all threads), if the OS says.
pub fn cpu_seconds() -> Option<f64> {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: the call succeeded, so the struct is initialised.
    let u = unsafe { u.assume_init() };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    Some(t(u.ru_utime) + t(u.ru_stime))
}
