//! The recorded path as a proof uses it: [`RecordingCache`] keeps one recording per (circuit
//! type, parameter binding) in memory, loads it from its file beside the decode cache or records
//! it on first use, and synthesizes each later proof witness-only, with the safety checks of
//! [`RecordOptions`].
//!
//! No lock is held while a circuit is synthesized or a file is hashed (both may run rayon work,
//! and a rayon thread that blocks on a lock held further down its own stack deadlocks): the
//! partitions of a first batch that find no recording yet each record their own, and the first
//! to finish keeps its recording and writes the file. A file found damaged or stale is recorded
//! again, with a log line. [`synthesize_default`] is one partition on the process-wide cache (the
//! engine's path); [`build_file`] writes a shape's file ahead of its first proof.
//!
//! The periodic full check falls on a shape's `check_every`-th synthesis since its last one,
//! unless the caller decides which synthesis checks ([`with_check`]): a pipeline that budgets
//! host memory asks [`RecordingCache::check_due`] when it admits a partition, reserves the
//! check's memory for that one, and runs it under `with_check(true, ..)` (the others under
//! `with_check(false, ..)`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_srs::Srs;
use rayon::prelude::*;

use super::file::{self, OpenError, ParamsBinding};
use super::record::record;
use super::recording::Recording;
use super::witness::{witness, Values};
use crate::error::EngineError;
use crate::synth::{synthesize, Assignment, Shape};

/// How the recorded path runs (`ProveOptions::recorded`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordOptions {
    /// Synthesize from recordings (default on). Off: every proof builds its constraints.
    pub enabled: bool,
    /// Every `check_every`-th proof of a shape is synthesized in full and compared with the
    /// recording (0: never; default 64).
    pub check_every: u64,
    /// Every `sample_rows`-th constraint's linear combinations are built and compared with the
    /// recording, at a phase that moves from proof to proof (0: none; default 1024).
    pub sample_rows: usize,
    /// Keep recordings in files beside the decode cache (default on).
    pub files: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            enabled: true,
            check_every: 64,
            sample_rows: 1024,
            files: true,
        }
    }
}

/// Where a synthesis got its recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Recorded by this synthesis (`rebuilt`: why the file could not be used, if there was one).
    Recorded { rebuilt: Option<String> },
    /// Mapped from its file by this synthesis.
    File,
    /// Held in memory already.
    Memory,
    /// A sampled full synthesis, compared with the recording.
    Checked,
}

/// One synthesis on the recorded path.
pub struct Synthesized {
    pub assignment: Assignment,
    pub source: Source,
}

/// A circuit type's witness on several threads against its recording (as `WitnessCs` makes it
/// on one): `(circuit, recording, partition index)`.
pub type ParallelWitness<C> = fn(C, &Recording, usize) -> Result<Values, EngineError>;

/// How a synthesis from a held recording runs.
struct How<C> {
    parallel: Option<ParallelWitness<C>>,
    defer: bool,
}

#[derive(Default)]
struct Slot {
    rec: Mutex<Option<Arc<Recording>>>,
    loading: AtomicBool,
    proofs: AtomicU64,
    /// Syntheses since the last full check (the recording counts as the first).
    since_check: AtomicU64,
}

thread_local! {
    /// The caller's decision for the next synthesis on this thread ([`with_check`]).
    static CHECK: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the periodic full check of the syntheses it makes on this thread decided by the
/// caller: `true`, a full synthesis compared with the recording; `false`, witness-only (the
/// cadence of `check_every` is then the caller's, see [`RecordingCache::check_due`]).
pub fn with_check<R>(check: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<bool>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CHECK.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CHECK.with(|c| c.replace(Some(check))));
    f()
}

/// Recordings by (circuit key, parameter binding).
#[derive(Default)]
pub struct RecordingCache {
    slots: Mutex<HashMap<(String, ParamsBinding), Arc<Slot>>>,
    options: RwLock<RecordOptions>,
    /// Full checks passed, every shape together.
    checks: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `rec`'s counts are those of the parameters (a recording that cannot prove against
/// them is not kept; `prepare` reports the mismatch).
fn fits(rec: &Recording, b: &ParamsBinding) -> bool {
    let c = rec.counts();
    let [a, b_in, b_aux] = rec.densities();
    let want = [
        c.rows().next_power_of_two(),
        c.inputs,
        c.aux,
        c.inputs + a.count_ones(),
        b_in.count_ones() + b_aux.count_ones(),
    ];
    want.map(|n| n as u64) == b.counts
}

impl RecordingCache {
    pub fn new() -> RecordingCache {
        RecordingCache::default()
    }

    /// The key a circuit type's recordings are held under.
    pub fn key_of<C>() -> &'static str {
        std::any::type_name::<C>()
    }

    /// The process-wide cache (what `Prover::new` and the `Engine`'s jobs use).
    pub fn global() -> &'static RecordingCache {
        static GLOBAL: OnceLock<RecordingCache> = OnceLock::new();
        GLOBAL.get_or_init(RecordingCache::new)
    }

    /// The options of [`RecordingCache::synthesize_default`] (an engine sets them from its config).
    pub fn options(&self) -> RecordOptions {
        self.options
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    pub fn set_options(&self, o: RecordOptions) {
        *self.options.write().unwrap_or_else(|e| e.into_inner()) = o;
    }

    fn slot(&self, key: &str, b: &ParamsBinding) -> Arc<Slot> {
        lock(&self.slots)
            .entry((key.to_string(), b.clone()))
            .or_default()
            .clone()
    }

    /// Whether circuit `key`'s recording against the parameters of `binding` is held in memory
    /// (a synthesis of it is witness-only; else the next one records it, or maps its file).
    /// `binding` is `ParamsBinding::of(srs)`, which hashes the verifying key: a caller that asks
    /// often computes it once.
    pub fn holds(&self, key: &str, binding: &ParamsBinding) -> bool {
        let slot = lock(&self.slots)
            .get(&(key.to_string(), binding.clone()))
            .cloned();
        slot.is_some_and(|s| lock(&s.rec).is_some())
    }

    /// Whether the next synthesis of circuit `key` against `binding` is due for the periodic full
    /// check (`check_every` of the cache's options, counted since the last check), and if so the
    /// bytes of the recording it compares with: the check records the circuit again, which holds
    /// as much beside the witness while it runs. `None`: not due, or no recording held.
    pub fn check_due(&self, key: &str, binding: &ParamsBinding) -> Option<u64> {
        let every = self.options().check_every;
        let slot = lock(&self.slots)
            .get(&(key.to_string(), binding.clone()))
            .cloned()?;
        let due = every > 0 && slot.since_check.load(Ordering::Acquire) + 1 >= every;
        let held = lock(&slot.rec).clone()?;
        due.then(|| held.bytes())
    }

    /// Periodic full checks this cache has made and passed, every shape together.
    pub fn checks_passed(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// The recording held for circuit `key` against `srs`, if any.
    pub fn get(&self, key: &str, srs: &Srs) -> Option<Arc<Recording>> {
        lock(&self.slot(key, &ParamsBinding::of(srs)).rec).clone()
    }

    /// Holds `rec` (made for `srs`, see [`Recording::check_params`]) for later proofs.
    pub fn insert(
        &self,
        key: &str,
        srs: &Srs,
        rec: Recording,
    ) -> Result<Arc<Recording>, EngineError> {
        let b = ParamsBinding::of(srs);
        rec.check_params(&b)?;
        let rec = Arc::new(rec);
        *lock(&self.slot(key, &b).rec) = Some(rec.clone());
        Ok(rec)
    }

    /// Synthesizes partition `index` from the recording of its circuit type against `srs`
    /// (recording it first when there is none in memory or in its file).
    pub fn synthesize<C: Circuit<Scalar>>(
        &self,
        srs: &Srs,
        circuit: C,
        index: usize,
        opts: &RecordOptions,
    ) -> Result<Synthesized, EngineError> {
        self.synthesize_with(srs, circuit, index, opts, None, false)
    }

    /// As [`RecordingCache::synthesize`], for the pipeline: a synthesis from a held recording
    /// leaves the products to the backend ([`Assignment::deferred`]: no CPU matrix–vector
    /// product), and runs `parallel` (a circuit type's witness on several threads against its
    /// recording) where given instead of the one-thread witness. Every `check_every`-th proof of
    /// the shape is still a full synthesis compared with the recording, on either witness.
    pub fn synthesize_deferred<C: Circuit<Scalar>>(
        &self,
        srs: &Srs,
        circuit: C,
        index: usize,
        opts: &RecordOptions,
        parallel: Option<ParallelWitness<C>>,
    ) -> Result<Synthesized, EngineError> {
        self.synthesize_with(srs, circuit, index, opts, parallel, true)
    }

    fn synthesize_with<C: Circuit<Scalar>>(
        &self,
        srs: &Srs,
        circuit: C,
        index: usize,
        opts: &RecordOptions,
        parallel: Option<ParallelWitness<C>>,
        defer: bool,
    ) -> Result<Synthesized, EngineError> {
        let how = How { parallel, defer };
        let key = Self::key_of::<C>();
        let binding = ParamsBinding::of(srs);
        let slot = self.slot(key, &binding);
        let n = slot.proofs.fetch_add(1, Ordering::Relaxed);
        // The full check: where the caller decided (`with_check`), else every `check_every`-th
        // synthesis since the last one.
        let since = slot.since_check.fetch_add(1, Ordering::AcqRel) + 1;
        let check = CHECK
            .with(|c| c.take())
            .unwrap_or(opts.check_every > 0 && since >= opts.check_every);
        let held = lock(&slot.rec).clone();
        if check {
            slot.since_check.store(0, Ordering::Release);
        }
        let (rec, source) = match held {
            Some(rec) => (rec, Source::Memory),
            None => {
                let path = if opts.files {
                    file::recording_path(srs, key)
                } else {
                    None
                };
                let mut rebuilt = None;
                if let Some(p) = path
                    .as_ref()
                    .filter(|_| !slot.loading.swap(true, Ordering::AcqRel))
                {
                    match file::open(p, key, &binding) {
                        Ok(rec) => {
                            let rec = Arc::new(rec);
                            *lock(&slot.rec) = Some(rec.clone());
                            return self.synthesize_held(
                                &rec,
                                circuit,
                                index,
                                (n, check),
                                opts,
                                Source::File,
                                how,
                            );
                        }
                        Err(OpenError::Missing) => {}
                        Err(e) => {
                            log::warn!("recording {}: {e}; rebuilding it", p.display());
                            rebuilt = Some(e.to_string());
                        }
                    }
                }
                let (rec, values) = record(circuit, true, index)?;
                let rec = rec.bind(key, binding.clone());
                let asg = rec.assignment(values.unwrap_or_default(), index)?;
                if fits(&rec, &binding) {
                    let mut held = lock(&slot.rec);
                    if held.is_none() {
                        if let Some(p) = &path {
                            if let Err(e) = file::save(&rec, p, key, &binding) {
                                log::warn!("recording not saved: {e}");
                            }
                        }
                        *held = Some(Arc::new(rec));
                    }
                }
                return Ok(Synthesized {
                    assignment: asg,
                    source: Source::Recorded { rebuilt },
                });
            }
        };
        self.synthesize_held(&rec, circuit, index, (n, check), opts, source, how)
    }

    /// Proof `n` of a shape from its recording: witness-only, or (`check`) a full synthesis
    /// compared with it. A checked synthesis whose products are left to the backend drops its
    /// fresh recording once compared and goes on as the witness-only ones do.
    #[allow(clippy::too_many_arguments)]
    fn synthesize_held<C: Circuit<Scalar>>(
        &self,
        rec: &Arc<Recording>,
        circuit: C,
        index: usize,
        (n, check): (u64, bool),
        opts: &RecordOptions,
        source: Source,
        how: How<C>,
    ) -> Result<Synthesized, EngineError> {
        if check {
            let (fresh, values) = record(circuit, true, index)?;
            if let Some(d) = rec.first_difference(&fresh) {
                return Err(EngineError::RecordingMismatch {
                    circuit: index,
                    what: format!("a full synthesis differs from the recording: {d}"),
                });
            }
            self.checks.fetch_add(1, Ordering::Relaxed);
            let values = values.unwrap_or_default();
            let assignment = if how.defer {
                drop(fresh);
                rec.deferred(values, index)?
            } else {
                fresh.assignment(values, index)?
            };
            return Ok(Synthesized {
                assignment,
                source: Source::Checked,
            });
        }
        let every = opts.sample_rows;
        let phase = if every > 0 {
            (n as usize).wrapping_mul(2_654_435_761) % every
        } else {
            0
        };
        let values = match how.parallel {
            Some(w) => w(circuit, rec, index)?,
            None => witness(rec, circuit, index, every, phase)?,
        };
        let assignment = if how.defer {
            rec.deferred(values, index)?
        } else {
            rec.assignment(values, index)?
        };
        Ok(Synthesized { assignment, source })
    }

    /// The partitions of a batch, in parallel (as `synth::synthesize_batch`).
    pub fn synthesize_batch<C: Circuit<Scalar> + Send>(
        &self,
        srs: &Srs,
        circuits: Vec<C>,
        opts: &RecordOptions,
    ) -> Result<Vec<Assignment>, EngineError> {
        circuits
            .into_par_iter()
            .enumerate()
            .map(|(i, c)| self.synthesize(srs, c, i, opts).map(|s| s.assignment))
            .collect()
    }

    /// As [`RecordingCache::synthesize_batch`], with the products of the partitions synthesized
    /// from a held recording left to the backend ([`RecordingCache::synthesize_deferred`]).
    pub fn synthesize_batch_deferred<C: Circuit<Scalar> + Send>(
        &self,
        srs: &Srs,
        circuits: Vec<C>,
        opts: &RecordOptions,
    ) -> Result<Vec<Assignment>, EngineError> {
        circuits
            .into_par_iter()
            .enumerate()
            .map(|(i, c)| {
                self.synthesize_deferred(srs, c, i, opts, None)
                    .map(|s| s.assignment)
            })
            .collect()
    }
}

/// One partition on the default path of the process: recorded through
/// [`RecordingCache::global`] unless its options turn it off, else `synth::synthesize`.
pub fn synthesize_default<C: Circuit<Scalar>>(
    srs: &Srs,
    circuit: C,
    index: usize,
    hint: Shape,
) -> Result<Assignment, EngineError> {
    let cache = RecordingCache::global();
    let opts = cache.options();
    if !opts.enabled {
        return synthesize(circuit, hint).map_err(|source| EngineError::Synthesis {
            circuit: index,
            source,
        });
    }
    cache
        .synthesize(srs, circuit, index, &opts)
        .map(|s| s.assignment)
}

/// Records `circuit` (a blank one will do: no value is computed) against `srs` and writes the
/// file where proofs will look for it, ahead of the first proof (for a CLI command). Returns
/// the path.
pub fn build_file<C: Circuit<Scalar>>(
    srs: &Srs,
    circuit: C,
) -> Result<std::path::PathBuf, EngineError> {
    let key = RecordingCache::key_of::<C>();
    let path = file::recording_path(srs, key).ok_or_else(|| EngineError::Recording {
        what: format!(
            "{} has no decode cache to keep a recording beside",
            srs.path().display()
        ),
    })?;
    let binding = ParamsBinding::of(srs);
    let (rec, _) = record(circuit, false, 0)?;
    if !fits(&rec, &binding) {
        return Err(EngineError::Recording {
            what: format!("{key}'s recording does not fit the parameters {binding}"),
        });
    }
    file::save(&rec, &path, key, &binding)?;
    Ok(path)
}
