//! SrsLoader: owns the parameter files. Each is opened once (through cuzk-srs and its decode
//! cache) and handed out as a shared handle; handles idle longer than the configured time and
//! held by nobody are evicted (least recently used first). Evicting by name is refused while a
//! job (queued or running) uses the parameters: the engine asks the dispatcher for those jobs
//! ([`Handles`] gives it the handles to ask about) before it sends [`Evict`].
//! Parameters built in memory (a setup run into the engine, no file behind them) are installed
//! under the path they stand for, and kept until evicted by name: idle eviction skips them,
//! since they cannot be opened again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use cuzk_srs::{OpenOptions, Srs};

use crossbeam_channel::Sender;

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
        // Whether a job uses the handle is the engine's check (the dispatcher knows the jobs);
        // other holders (a job's partition still draining after its answer) keep their copy.
        let result = self
            .loaded
            .remove(&msg.path)
            .map(|(srs, _)| srs)
            .ok_or_else(|| format!("{} is not loaded", msg.path.display()));
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
    /// Handles held besides the loader's own (jobs, their partitions in flight, callers).
    pub holders: usize,
    /// Jobs not yet answered (queued or running) that use these parameters: what refuses an
    /// evict (filled in by `Engine::loaded_srs`).
    pub jobs: usize,
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
                jobs: 0,
                idle_ms: used.elapsed().as_millis() as u64,
            })
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        let _ = msg.0.send(v);
    }
}

/// The loaded handles, by path (for the engine to ask the dispatcher which jobs use them).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Handles(pub Sender<Vec<(PathBuf, Arc<Srs>)>>);

impl Handler<Handles> for SrsLoader {
    type Result = ();
    fn handle(&mut self, msg: Handles, _: &mut SyncContext<Self>) {
        let v = self
            .loaded
            .iter()
            .map(|(p, (srs, _))| (p.clone(), srs.clone()))
            .collect();
        let _ = msg.0.send(v);
    }
}
