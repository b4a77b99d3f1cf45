//! `--gpus-sweep 1,2` for `bench batch` and `bench porep`: the same workload on the first N
//! devices, a fresh engine each. On GPUs, "the first N" are the first N of `engine.gpus` (or of
//! every visible GPU); on the CPU backend, N CPU backends run as N devices (`engine.cpu_devices`),
//! which exercises the multi-device pipeline but is no faster. The last line of a sweep is
//! `gpus1_s_per_proof=… gpus2_s_per_proof=…` (one key per device count, in first-run order; the
//! mean where a count was run more than once).

use cuzk_actors::daemon::settings::{BackendChoice, Settings};
use cuzk_actors::pipeline::timeline::{busy_fraction, Span, KERNEL_STAGES};
use cuzk_actors::EngineError;

use crate::common::Result;

/// How a sweep places its runs.
pub struct Sweep {
    /// The CUDA ordinals the sweep takes its first N from; `None`: CPU backends.
    ordinals: Option<Vec<usize>>,
}

impl Sweep {
    /// The sweep over `counts` devices for `settings` (its backend and `engine.gpus`): an error
    /// when a count is 0 or more GPUs are asked for than there are.
    pub fn plan(settings: &Settings, counts: &[usize]) -> Result<Sweep> {
        if counts.contains(&0) {
            return Err("--gpus-sweep: a run needs at least 1 device".into());
        }
        let want = counts.iter().copied().max().unwrap_or(1);
        let gpus = &settings.engine.gpus;
        let ordinals = match settings.engine.backend {
            BackendChoice::Cpu => None,
            BackendChoice::Cuda => Some(cuzk_actors::resources::devices::cuda_ordinals(gpus)?),
            BackendChoice::Auto => match cuzk_actors::resources::devices::cuda_ordinals(gpus) {
                Ok(o) => Some(o),
                Err(e @ EngineError::Config { .. }) => return Err(e.into()),
                Err(e) => {
                    println!("# no usable CUDA GPU ({e}): the sweep runs CPU backends as devices");
                    None
                }
            },
        };
        if let Some(o) = &ordinals {
            if want > o.len() {
                return Err(format!(
                    "--gpus-sweep asks for {want} GPUs but {} {} usable (CUDA ordinals {o:?}{}{})",
                    o.len(),
                    if o.len() == 1 { "is" } else { "are" },
                    if gpus.is_empty() {
                        String::new()
                    } else {
                        format!(", engine.gpus = {gpus:?}")
                    },
                    std::env::var("CUDA_VISIBLE_DEVICES")
                        .map(|v| format!(", CUDA_VISIBLE_DEVICES={v}"))
                        .unwrap_or_default()
                )
                .into());
            }
        }
        Ok(Sweep { ordinals })
    }

    /// `settings` for the run on the first `n` devices.
    pub fn apply(&self, settings: &mut Settings, n: usize) {
        match &self.ordinals {
            Some(o) => {
                settings.engine.backend = BackendChoice::Cuda;
                settings.engine.gpus = o[..n.min(o.len())].to_vec();
            }
            None => {
                settings.engine.backend = BackendChoice::Cpu;
                settings.engine.cpu_devices = n;
            }
        }
    }
}

/// Each device's busy fraction (kernel stages, else compute) over the window from the first to
/// the last such span on any device, e.g. `busy=[d0 95.1% d1 93.0%]`.
pub fn busy_line(spans: &[Span], devices: usize) -> String {
    let kernels = spans.iter().any(|s| KERNEL_STAGES.contains(&s.stage));
    let window: Vec<&Span> = spans
        .iter()
        .filter(|s| {
            s.gpu.is_some()
                && if kernels {
                    KERNEL_STAGES.contains(&s.stage)
                } else {
                    s.stage == "compute"
                }
        })
        .collect();
    let from = window.iter().map(|s| s.start_us).min().unwrap_or(0);
    let to = window.iter().map(|s| s.end_us).max().unwrap_or(0);
    let each: Vec<String> = (0..devices)
        .map(|g| format!("d{g} {:.1}%", busy_fraction(spans, g, from, to) * 100.0))
        .collect();
    format!("busy=[{}]", each.join(" "))
}

/// The devices that computed at least one partition in `spans`.
pub fn devices_used(spans: &[Span]) -> usize {
    let mut used: Vec<usize> = spans
        .iter()
        .filter(|s| s.stage == "compute")
        .filter_map(|s| s.gpu)
        .collect();
    used.sort_unstable();
    used.dedup();
    used.len()
}

/// The sweep's closing lines from its runs (device count, s/proof): `runs: …` when a count was
/// run more than once, then `gpus1_s_per_proof=… gpus2_s_per_proof=…` (always the last line).
pub fn closing_lines(runs: &[(usize, f64)]) -> Vec<String> {
    let mut counts: Vec<usize> = Vec::new();
    for (n, _) in runs {
        if !counts.contains(n) {
            counts.push(*n);
        }
    }
    let mut out = Vec::new();
    if counts.len() < runs.len() {
        out.push(format!(
            "runs: {}",
            runs.iter()
                .map(|(n, s)| format!("gpus{n}={s:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let mean = |n: usize| {
        let v: Vec<f64> = runs
            .iter()
            .filter(|(m, _)| *m == n)
            .map(|(_, s)| *s)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    out.push(
        counts
            .iter()
            .map(|&n| format!("gpus{n}_s_per_proof={:.3}", mean(n)))
            .collect::<Vec<_>>()
            .join(" "),
    );
    out
}
