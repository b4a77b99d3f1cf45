//! SrsLoader: owns the parameter files. Each is opened once (through cuzk-srs and its decode
//! cache) and handed out as a shared handle; evicting a handle a job still holds is refused;
//! handles idle longer than the configured time are evicted (least recently used first).
//! Parameters built in memory (a setup run into the engine, no file behind them) are installed
//! under the path they stand for, and kept until evicted by name: idle eviction skips them,
//! since they cannot be opened again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use crossbeam_channel::Sender;
use cuzk_srs::{OpenOptions, Srs};

pub struct SrsLoader {
    opts: OpenOptions,
    loaded: HashMap<PathBuf, (Arc<Srs>, Instant)>,
}

impl SrsLoader {
    pub fn new(opts: OpenOptions) -> Self {
        SrsLoader {
            opts,
            loaded: HashMap::new(),
        }
    }
}

impl Actor for SrsLoader {
    type Context = SyncContext<Self>;
}

/// Opens (once) and returns the parameters at `path`.
pub struct Load {
    pub path: PathBuf,
    pub reply: Sender<Result<Arc<Srs>, String>>,
}
impl Message for Load {
    type Result = ();
}
impl Handler<Load> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: Load, _: &mut SyncContext<Self>) {
        let now = Instant::now();
        let result = match self.loaded.get_mut(&msg.path) {
            Some((srs, used)) => {
                *used = now;
                Ok(srs.clone())
            }
            None => match Srs::open(&msg.path, &self.opts) {
                Ok(srs) => {
                    let srs = Arc::new(srs);
                    self.loaded.insert(msg.path.clone(), (srs.clone(), now));
                    Ok(srs)
                }
                Err(e) => Err(e.to_string()),
            },
        };
        let _ = msg.reply.send(result);
    }
}

/// Installs parameters built in memory under `path` (where their file would be), replacing
/// nothing: a path already loaded is refused.
pub struct Install {
    pub path: PathBuf,
    pub srs: Arc<Srs>,
    pub reply: Sender<Result<(), String>>,
}
impl Message for Install {
    type Result = ();
}
impl Handler<Install> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: Install, _: &mut SyncContext<Self>) {
        let result = match self.loaded.entry(msg.path) {
            std::collections::hash_map::Entry::Occupied(e) => Err(format!(
                "{}: parameters are already loaded there",
                e.key().display()
            )),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert((msg.srs, Instant::now()));
                Ok(())
            }
        };
        let _ = msg.reply.send(result);
    }
}

/// Drops the loader's handle to `path`; refused while anyone else holds it. Replies with the
/// handle (the caller drops it, once the GPUs' resident copies are dropped too).
pub struct Evict {
    pub path: PathBuf,
    pub reply: Sender<Result<Arc<Srs>, String>>,
}
impl Message for Evict {
    type Result = ();
}
impl Handler<Evict> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: Evict, _: &mut SyncContext<Self>) {
        let result = match self.loaded.get(&msg.path) {
            None => Err(format!("{} is not loaded", msg.path.display())),
            Some((srs, _)) if Arc::strong_count(srs) > 1 => Err(format!(
                "{} is in use by {} holder(s); evict refused",
                msg.path.display(),
                Arc::strong_count(srs) - 1
            )),
            Some(_) => self
                .loaded
                .remove(&msg.path)
                .map(|(srs, _)| srs)
                .ok_or_else(|| format!("{} is not loaded", msg.path.display())),
        };
        let _ = msg.reply.send(result);
    }
}

/// Evicts every handle idle for longer than the given time and held by nobody; replies with the
/// evicted paths, least recently used first.
pub struct EvictIdle {
    pub idle: Duration,
    pub reply: Option<Sender<Vec<PathBuf>>>,
}
impl Message for EvictIdle {
    type Result = ();
}
impl Handler<EvictIdle> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: EvictIdle, _: &mut SyncContext<Self>) {
        let now = Instant::now();
        let mut idle: Vec<(Instant, PathBuf)> = self
            .loaded
            .iter()
            .filter(|(_, (srs, used))| {
                Arc::strong_count(srs) == 1 && now - *used >= msg.idle && srs.layout().is_some()
            })
            .map(|(p, (_, used))| (*used, p.clone()))
            .collect();
        idle.sort();
        for (_, p) in &idle {
            self.loaded.remove(p);
        }
        if let Some(r) = msg.reply {
            let _ = r.send(idle.into_iter().map(|(_, p)| p).collect());
        }
    }
}

/// An open parameter file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadedSrs {
    pub path: PathBuf,
    /// Bytes of its points (in memory or mapped from the decode cache).
    pub bytes: u64,
    /// Handles held besides the loader's own (jobs, a GPU's resident copy).
    pub holders: usize,
    pub idle_ms: u64,
}

impl LoadedSrs {
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

/// Lists the open parameter files, by path.
pub struct List(pub Sender<Vec<LoadedSrs>>);
impl Message for List {
    type Result = ();
}
impl Handler<List> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: List, _: &mut SyncContext<Self>) {
        let mut v: Vec<LoadedSrs> = self
            .loaded
            .iter()
            .map(|(p, (srs, used))| LoadedSrs {
                path: p.clone(),
                bytes: srs.point_bytes(),
                holders: Arc::strong_count(srs) - 1,
                idle_ms: used.elapsed().as_millis() as u64,
            })
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        let _ = msg.0.send(v);
    }
}
