//! Settings: `config/cuzk.toml` (every key documented there with its default) plus `CUZK_*`
//! environment overrides, turned into an [`EngineConfig`], and [`Engine::from_settings`], which
//! opens the devices they select and starts the engine on them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuzk_srs::{CacheMode, OpenOptions};
use serde::{Deserialize, Serialize};

use crate::pipeline::engine::{Engine, EngineConfig};
use crate::resources::devices;
/// The backend and residency choices are the devices' own; the settings name them.
pub use crate::resources::devices::{BackendChoice, Residency};
use crate::EngineError;

/// The defaults, compiled in: the same file a deployment copies.
pub const DEFAULT_TOML: &str = include_str!("../../../config/cuzk.toml");

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub engine: EngineSection,
    pub srs: SrsSection,
    pub filecoin: FilecoinSection,
    pub jobs: JobsSection,
    pub grpc: GrpcSection,
    pub metrics: MetricsSection,
    pub log: LogSection,
}

/// The keys `cuzk ctl reload` applies to a running daemon; every other key needs a restart.
pub const LIVE_KEYS: [&str; 3] = ["jobs.retain_s", "grpc.cancel_on_disconnect", "log.level"];

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FilecoinSection {
    /// The Filecoin parameter directory; "" = `$FIL_PROOFS_PARAMETER_CACHE`, else the default.
    pub params_dir: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsSection {
    pub retain_s: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GrpcSection {
    pub unix_socket: String,
    pub tcp_listen: String,
    pub token: String,
    pub allow_remote: bool,
    pub max_message_mib: u64,
    pub cancel_on_disconnect: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    pub http_listen: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    pub format: String,
    pub level: String,
}

/// How a host thread waits for a GPU (`engine.gpu_wait`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GpuWait {
    /// Sleep until the GPU signals: the core is free for synthesis meanwhile.
    Block,
    /// The driver's default: spin while the process has fewer contexts than cores.
    Spin,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    pub backend: BackendChoice,
    pub gpu_workers_per_device: usize,
    pub vram_reserve_mib: u64,
    pub vram_budget_mib: u64,
    pub host_budget_mib: u64,
    pub host_reserve_mib: u64,
    pub timeline_spans: usize,
    pub synth_threads: usize,
    /// The recording's periodic full check: every this many partitions of a shape (0 = never).
    pub recording_check_every: u64,
    pub pin_chunk_mib: u64,
    pub srs_residency: Residency,
    pub gpu_wait: GpuWait,
    pub self_verify: bool,
    pub device_fail_limit: u32,
    /// The CUDA devices the engine opens, by ordinal (relative to `CUDA_VISIBLE_DEVICES` when
    /// that is set); empty = every device. From the environment: `CUZK_ENGINE__GPUS=0,2`.
    #[serde(deserialize_with = "gpu_list")]
    pub gpus: Vec<usize>,
    /// On the CPU backend: how many CPU backends run as separate devices (each with a device's
    /// pipeline); more than 1 exercises the multi-device pipeline without a GPU.
    pub cpu_devices: usize,
}

/// `engine.gpus`: a TOML list of ordinals, or (from the environment) one ordinal or a
/// comma-separated string of them (`""` = every device; brackets allowed: `"[0, 1]"`).
fn gpu_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<usize>, D::Error> {
    use serde::de::Error;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Entry {
        Int(u64),
        Str(String),
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<Entry>),
        One(Entry),
    }
    let parse = |e: Entry| -> Result<Vec<usize>, D::Error> {
        match e {
            Entry::Int(i) => Ok(vec![i as usize]),
            Entry::Str(s) => s
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(|w| {
                    w.parse::<usize>().map_err(|_| {
                        D::Error::custom(format!(
                            "engine.gpus: `{w}` is not a device ordinal (a list such as [0, 1], \
                             or \"0,1\" from the environment)"
                        ))
                    })
                })
                .collect(),
        }
    };
    match Form::deserialize(d)? {
        Form::List(v) => {
            let mut out = Vec::new();
            for e in v {
                out.extend(parse(e)?);
            }
            Ok(out)
        }
        Form::One(e) => parse(e),
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SrsSection {
    pub cache_dir: String,
    pub subgroup_check: bool,
    pub idle_evict_s: u64,
}

impl Settings {
    /// The defaults, then `file` (if given), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Settings, EngineError> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`load`](Self::load), with the environment given explicitly (tests).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, EngineError> {
        let mut b = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(f) = file {
            if !f.exists() {
                return Err(EngineError::config(
                    f.display().to_string(),
                    format!("config file {} does not exist", f.display()),
                ));
            }
            b = b.add_source(config::File::from(f).format(config::FileFormat::Toml));
        }
        let env: config::Map<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with("CUZK_") && k.contains("__"))
            .collect();
        b = b.add_source(
            config::Environment::with_prefix("CUZK")
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .source(Some(env)),
        );
        let cfg = b
            .build()
            .map_err(|e| EngineError::config("config", format!("config: {e}")))?;
        let s: Settings = cfg.try_deserialize().map_err(|e| {
            let file = file.map(|f| format!(" {}", f.display()));
            EngineError::config("config", format!("config{}: {e}", file.unwrap_or_default()))
        })?;
        // The same error, its text prefixed as every other error of the configuration is.
        let prefixed = |e: EngineError| match e {
            EngineError::Config { key, detail } => {
                EngineError::config(key, format!("config: {detail}"))
            }
            other => other,
        };
        if s.engine.gpu_workers_per_device == 0 {
            return Err(EngineError::config(
                "engine.gpu_workers_per_device",
                "config: engine.gpu_workers_per_device must be at least 1",
            ));
        }
        s.log
            .format
            .parse::<crate::log::Format>()
            .map_err(prefixed)?;
        crate::log::parse_level(&s.log.level).map_err(prefixed)?;
        if let Some(dup) = s
            .engine
            .gpus
            .iter()
            .enumerate()
            .find(|(i, g)| s.engine.gpus[..*i].contains(g))
        {
            return Err(EngineError::config(
                "engine.gpus",
                format!(
                    "config: engine.gpus lists CUDA device {} twice ({:?})",
                    dup.1, s.engine.gpus
                ),
            ));
        }
        if s.engine.cpu_devices == 0 {
            return Err(EngineError::config(
                "engine.cpu_devices",
                "config: engine.cpu_devices must be at least 1",
            ));
        }
        if s.grpc.max_message_mib == 0 {
            return Err(EngineError::config(
                "grpc.max_message_mib",
                "config: grpc.max_message_mib must be at least 1",
            ));
        }
        Ok(s)
    }

    /// The keys (`section.key`) whose values differ between `self` and `new`.
    pub fn changed_keys(&self, new: &Settings) -> Vec<String> {
        let (a, b) = (
            serde_json::to_value(self).unwrap_or_default(),
            serde_json::to_value(new).unwrap_or_default(),
        );
        let mut out = Vec::new();
        if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
            for (section, sa) in a {
                let (Some(sa), Some(sb)) =
                    (sa.as_object(), b.get(section).and_then(|v| v.as_object()))
                else {
                    continue;
                };
                for (key, va) in sa {
                    if sb.get(key) != Some(va) {
                        out.push(format!("{section}.{key}"));
                    }
                }
            }
        }
        out
    }

    /// The live-changeable keys that differ in `new`, or an error naming every changed key that
    /// needs a restart (nothing is to be applied then: [`EngineError::Rejected`]).
    pub fn live_changes(&self, new: &Settings) -> Result<Vec<String>, EngineError> {
        let changed = self.changed_keys(new);
        let fixed: Vec<&String> = changed
            .iter()
            .filter(|k| !LIVE_KEYS.contains(&k.as_str()))
            .collect();
        if !fixed.is_empty() {
            let names: Vec<&str> = fixed.iter().map(|k| k.as_str()).collect();
            return Err(EngineError::Rejected(format!("reload refused: {} cannot change while the daemon runs (restart it); live keys are {}", names.join(", "), LIVE_KEYS.join(", "))));
        }
        Ok(changed)
    }

    /// `filecoin.params_dir`, if set (`None`: `$FIL_PROOFS_PARAMETER_CACHE`, else the default).
    pub fn filecoin_params_dir(&self) -> Option<PathBuf> {
        (!self.filecoin.params_dir.is_empty()).then(|| PathBuf::from(&self.filecoin.params_dir))
    }

    /// How parameter files are opened (subgroup check, where the decode cache lives).
    pub fn srs_open(&self) -> OpenOptions {
        OpenOptions {
            subgroup_check: self.srs.subgroup_check,
            cache: if self.srs.cache_dir.is_empty() {
                CacheMode::Beside
            } else {
                CacheMode::Dir(PathBuf::from(&self.srs.cache_dir))
            },
        }
    }

    /// The engine configuration for `devices` GPUs whose budgets are `vram_free` bytes each
    /// (free memory at start; ignored where `vram_budget_mib` is set).
    pub fn engine_config(&self, vram_free: &[u64]) -> EngineConfig {
        let e = &self.engine;
        let mib = |m: u64| m.saturating_mul(1 << 20);
        let vram_budget = vram_free
            .iter()
            .map(|&free| match () {
                _ if e.vram_budget_mib > 0 => mib(e.vram_budget_mib),
                // The CPU backend: no device memory to keep free.
                _ if free >= crate::resources::budget::UNLIMITED => {
                    crate::resources::budget::UNLIMITED
                }
                _ => free.saturating_sub(mib(e.vram_reserve_mib)),
            })
            .collect();
        EngineConfig {
            gpu_workers_per_device: e.gpu_workers_per_device,
            vram_budget,
            host_budget: if e.host_budget_mib == 0 {
                crate::resources::budget::UNLIMITED
            } else {
                mib(e.host_budget_mib)
            },
            // Known only once the devices are open: `Engine::from_settings` sets it.
            srs_resident: false,
            synth_threads: if e.synth_threads == 0 {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(2)
            } else {
                e.synth_threads
            },
            pin_chunk: mib(e.pin_chunk_mib.max(1)) as usize,
            self_verify: e.self_verify,
            srs_open: self.srs_open(),
            srs_idle_evict: Duration::from_secs(self.srs.idle_evict_s),
            device_fail_limit: e.device_fail_limit,
            vram_reserve: mib(e.vram_reserve_mib),
            host_memory: crate::resources::host_memory::HostMemory::system(),
            host_reserve: mib(e.host_reserve_mib),
            timeline_spans: e.timeline_spans,
        }
    }
}

/// The engine as settings describe it (its constructor lives here, with the settings, so that
/// the pipeline never reads them).
impl Engine {
    /// Starts the engine as `settings` describe it: opens the devices (the CUDA GPUs `engine.gpus`
    /// selects if usable, else `engine.cpu_devices` CPU backends, per `engine.backend`), takes
    /// the budgets from their free memory, and keeps the SRS resident where
    /// `engine.srs_residency` says so. `resident` is what a resident SRS needs per GPU when the
    /// SRS is already known (it decides `auto`). Returns the engine and a line describing the
    /// devices (each GPU's engine index, CUDA ordinal and PCI bus id).
    pub fn from_settings(
        settings: &Settings,
        resident: Option<u64>,
    ) -> Result<(Engine, String), EngineError> {
        let e = &settings.engine;
        cuzk_engine::gpu::device::set_blocking_waits(e.gpu_wait == GpuWait::Block);
        // The recorded path's options are the process's (`RecordingCache::global`).
        let cache = cuzk_engine::recorded::RecordingCache::global();
        cache.set_options(cuzk_engine::recorded::RecordOptions {
            check_every: e.recording_check_every,
            ..cache.options()
        });
        let mut dev = devices::open_on(
            e.backend,
            e.srs_residency,
            resident,
            e.vram_reserve_mib << 20,
            &devices::Placement {
                gpus: e.gpus.clone(),
                cpu_devices: e.cpu_devices,
            },
        )?;
        let cfg = settings.engine_config(&dev.free);
        let description = std::mem::take(&mut dev.description);
        let engine = Engine::start_on(cfg, dev)?;
        Ok((engine, description))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_file_and_environment_layer() {
        let d = Settings::load_with_env(None, []).unwrap();
        assert_eq!(d.engine.backend, BackendChoice::Auto);
        assert_eq!(
            (
                d.engine.gpu_workers_per_device,
                d.engine.vram_reserve_mib,
                d.srs.idle_evict_s
            ),
            (1, 512, 600)
        );
        let cfg = d.engine_config(&[8 << 30]);
        assert_eq!(cfg.vram_budget, vec![(8 << 30) - (512 << 20)]);
        assert_eq!(
            (d.engine.gpu_wait, cfg.timeline_spans),
            (GpuWait::Block, crate::pipeline::timeline::MAX_SPANS)
        );
        assert_eq!(
            d.engine.recording_check_every,
            cuzk_engine::recorded::RecordOptions::default().check_every
        );

        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(
            &f,
            "[engine]\ngpu_workers_per_device = 2\nbackend = \"cpu\"\n",
        )
        .unwrap();
        let env = [
            (
                "CUZK_ENGINE__VRAM_BUDGET_MIB".to_string(),
                "1024".to_string(),
            ),
            ("CUZK_SRS__CACHE_DIR".to_string(), "/c".to_string()),
            ("CUZK_ENGINE__GPU_WAIT".to_string(), "spin".to_string()),
            ("CUZK_ENGINE__TIMELINE_SPANS".to_string(), "256".to_string()),
        ];
        let s = Settings::load_with_env(Some(&f), env).unwrap();
        assert_eq!(
            (s.engine.gpu_workers_per_device, s.engine.backend),
            (2, BackendChoice::Cpu)
        );
        assert_eq!(s.engine.gpu_wait, GpuWait::Spin);
        assert_eq!(s.engine_config(&[8 << 30]).timeline_spans, 256);
        let cfg = s.engine_config(&[8 << 30, 4 << 30]);
        assert_eq!(cfg.vram_budget, vec![1 << 30, 1 << 30]);
        assert_eq!(cfg.srs_open.cache, CacheMode::Dir("/c".into()));

        std::fs::write(&f, "[engine]\ngpu_workerz = 2\n").unwrap();
        let err = Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string();
        assert!(err.contains("gpu_workerz"), "{err}");
        std::fs::write(&f, "[engine]\ngpu_workers_per_device = 0\n").unwrap();
        assert!(Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string()
            .contains("at least 1"));
        assert!(
            Settings::load_with_env(Some(&dir.path().join("none.toml")), [])
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        std::fs::write(&f, "[log]\nformat = \"xml\"\n").unwrap();
        assert!(Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string()
            .contains("log.format `xml`"));
    }

    #[test]
    fn gpus_from_file_and_environment_and_duplicates_refused() {
        let d = Settings::load_with_env(None, []).unwrap();
        assert_eq!((d.engine.gpus.clone(), d.engine.cpu_devices), (vec![], 1));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "[engine]\ngpus = [2, 0]\ncpu_devices = 2\n").unwrap();
        let s = Settings::load_with_env(Some(&f), []).unwrap();
        assert_eq!(
            (s.engine.gpus.clone(), s.engine.cpu_devices),
            (vec![2, 0], 2)
        );
        let env = |v: &str| [("CUZK_ENGINE__GPUS".to_string(), v.to_string())];
        for (v, want) in [
            ("1,3", vec![1, 3]),
            (" 0, 1 ", vec![0, 1]),
            ("[1, 2]", vec![1, 2]),
            ("1", vec![1]),
            ("", vec![]),
        ] {
            let s = Settings::load_with_env(Some(&f), env(v)).unwrap();
            assert_eq!(s.engine.gpus, want, "CUZK_ENGINE__GPUS={v:?}");
        }
        let err = Settings::load_with_env(None, env("0,x"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("engine.gpus") && err.contains("`x`"), "{err}");
        let err = Settings::load_with_env(None, env("1,0,1"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("engine.gpus") && err.contains("twice"),
            "{err}"
        );
        std::fs::write(&f, "[engine]\ngpus = [0, 0]\n").unwrap();
        let err = Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("engine.gpus") && err.contains("device 0 twice"),
            "{err}"
        );
        std::fs::write(&f, "[engine]\ncpu_devices = 0\n").unwrap();
        let err = Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string();
        assert!(err.contains("engine.cpu_devices"), "{err}");
        // Changing the placement needs a restart.
        let mut n = d.clone();
        n.engine.gpus = vec![1];
        assert!(d
            .live_changes(&n)
            .unwrap_err()
            .to_string()
            .contains("engine.gpus"));
    }

    #[test]
    fn configuration_errors_name_the_key_at_fault_and_a_refused_reload_is_rejected() {
        let key_of = |env: &[(&str, &str)]| {
            let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
            match Settings::load_with_env(None, env).unwrap_err() {
                EngineError::Config { key, detail } => {
                    assert!(detail.starts_with("config"), "{detail}");
                    key
                }
                other => panic!("not a configuration error: {other:?}"),
            }
        };
        assert_eq!(key_of(&[("CUZK_LOG__LEVEL", "loud")]), "log.level");
        assert_eq!(key_of(&[("CUZK_LOG__FORMAT", "xml")]), "log.format");
        assert_eq!(key_of(&[("CUZK_ENGINE__GPUS", "1,1")]), "engine.gpus");
        assert_eq!(
            key_of(&[("CUZK_ENGINE__CPU_DEVICES", "0")]),
            "engine.cpu_devices"
        );
        let d = Settings::load_with_env(None, []).unwrap();
        let mut n = d.clone();
        n.engine.synth_threads = 3;
        assert!(matches!(
            d.live_changes(&n),
            Err(EngineError::Rejected(m)) if m.starts_with("reload refused")
        ));
    }

    #[test]
    fn filecoin_params_dir_from_file_and_environment() {
        let d = Settings::load_with_env(None, []).unwrap();
        assert_eq!(d.filecoin_params_dir(), None);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "[filecoin]\nparams_dir = \"/p/file\"\n").unwrap();
        let s = Settings::load_with_env(Some(&f), []).unwrap();
        assert_eq!(s.filecoin_params_dir(), Some(PathBuf::from("/p/file")));
        let env = [(
            "CUZK_FILECOIN__PARAMS_DIR".to_string(),
            "/p/env".to_string(),
        )];
        let s = Settings::load_with_env(Some(&f), env).unwrap();
        assert_eq!(s.filecoin_params_dir(), Some(PathBuf::from("/p/env")));
        std::fs::write(&f, "[filecoin]\nparams_directory = \"/p\"\n").unwrap();
        let err = Settings::load_with_env(Some(&f), [])
            .unwrap_err()
            .to_string();
        assert!(err.contains("params_directory"), "{err}");
    }

    #[test]
    fn reload_applies_live_keys_and_names_the_others() {
        let d = Settings::load_with_env(None, []).unwrap();
        assert_eq!(
            (
                d.jobs.retain_s,
                d.grpc.max_message_mib,
                d.grpc.cancel_on_disconnect
            ),
            (3600, 256, false)
        );
        let mut n = d.clone();
        n.jobs.retain_s = 5;
        n.log.level = "debug".into();
        assert_eq!(
            d.live_changes(&n).unwrap(),
            vec!["jobs.retain_s".to_string(), "log.level".to_string()]
        );
        n.engine.synth_threads = 3;
        n.grpc.tcp_listen = "127.0.0.1:1".into();
        let err = d.live_changes(&n).unwrap_err().to_string();
        let refused = err.split(" cannot change").next().unwrap();
        assert!(
            refused.contains("engine.synth_threads")
                && refused.contains("grpc.tcp_listen")
                && !refused.contains("jobs.retain_s"),
            "{err}"
        );
        assert!(d.live_changes(&d).unwrap().is_empty());
    }
}
