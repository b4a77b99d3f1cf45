//! SrsLoader: owns the parameter files. Each is opened once (through cuzk-srs and its decode
//! cache) and handed out as a shared handle; evicting a handle a job still holds is refused;
//! handles idle longer than the configured time are evicted (least recently used first).
//! Parameters built in memory (a setup run into the engine, no file behind them) are installed
//! under the path they stand for, and kept until evicted by name: idle eviction skips them,
//! since they cannot be opened again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_srs::{OpenOptions, Srs};

use crate::pipeline::messages::{Evict, EvictIdle, Install, List, Load};

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
