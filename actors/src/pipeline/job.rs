//! Jobs: what a caller submits (partition circuits sharing one SRS, a priority, randomness) and
//! the handle through which it awaits, polls or cancels the result. A job's [`Synthesis`] probe
//! tells the dispatcher, as each partition is about to start, whether it synthesizes
//! witness-only from a held recording, must record its shape first, or runs in full.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::Proof;
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use cuzk_engine::recorded::synthesize_default;
use cuzk_engine::synth::Shape;
use cuzk_engine::{Assignment, EngineError};
use cuzk_srs::Srs;
use serde::Serialize;

pub type JobId = u64;

/// Scheduling class: a higher class always goes first; within a class, the oldest job's lowest
/// partition goes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Priority {
    Low,
    Normal,
    High,
}

/// One partition's synthesis, boxed so that jobs of any circuit type share one queue.
pub type SynthFn = Box<dyn FnOnce(Shape) -> Result<Assignment, EngineError> + Send>;

pub enum Randomness {
    /// `r, s` drawn per partition from the engine's RNG.
    Random,
    /// Caller-chosen `(r, s)` per partition.
    Fixed(Vec<(Scalar, Scalar)>),
}

/// How a job's partitions will synthesize, asked when each is about to start (the answer
/// changes once the first partition of a shape has recorded it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synthesis {
    /// Witness-only, from the recording held for the circuit type.
    Recorded,
    /// The recording's periodic full check falls on this partition: it is synthesized in full
    /// and compared with the recording (`RecordOptions::check_every`), which records it again
    /// beside the witness (`recording`: the held recording's bytes), then goes on witness-only.
    Checked { recording: u64 },
    /// The recording of circuit type `key` is not held: the next partition records it (or maps
    /// its file). A recording takes far more memory than a witness, so the dispatcher lets one
    /// partition per key do it while the others of that key wait for it.
    Unrecorded { key: &'static str },
    /// Full synthesis (the recorded path is turned off).
    Full,
}

/// Answers [`Synthesis`] for a job.
pub type SynthesisProbe = Arc<dyn Fn() -> Synthesis + Send + Sync>;

pub struct JobSpec {
    pub srs: Arc<Srs>,
    pub partitions: Vec<SynthFn>,
    pub synthesis: SynthesisProbe,
    pub priority: Priority,
    pub randomness: Randomness,
    /// What kind of proof this is, for log lines (`porep`, `snap`, …; `custom` unless set).
    pub kind: Arc<str>,
    /// How long after submission ([`Engine::submit`](crate::Engine::submit)) the proof is due;
    /// `None`: no deadline. It does not change the order of work (the priority does): a job that
    /// ends after it is reported as a missed deadline (a WARN line, the engine's count by kind,
    /// [`JobOutput::missed_deadline_by`]).
    pub deadline: Option<Duration>,
}

impl JobSpec {
    /// A job proving `circuits` (the partitions of one proof) against `srs`.
    pub fn new<C: Circuit<Scalar> + Send + 'static>(srs: Arc<Srs>, circuits: Vec<C>) -> Self {
        let partitions = circuits
            .into_iter()
            .enumerate()
            .map(|(i, c)| synth_fn(&srs, i, c, None, None))
            .collect();
        JobSpec {
            synthesis: probe::<C>(&srs),
            srs,
            partitions,
            priority: Priority::Normal,
            randomness: Randomness::Random,
            kind: Arc::from("custom"),
            deadline: None,
        }
    }

    /// A job whose partitions must synthesize to exactly these public inputs (`expected[i]` for
    /// partition `i`, `one` excluded), as a proof system's own `generate_public_inputs` computes
    /// them: a partition whose synthesized inputs differ fails before any proving work.
    pub fn with_expected_inputs<C: Circuit<Scalar> + Send + 'static>(
        srs: Arc<Srs>,
        circuits: Vec<C>,
        expected: Vec<Vec<Scalar>>,
    ) -> Result<Self, crate::EngineError> {
        JobSpec::with_parallel_witness(srs, circuits, expected, None)
    }

    /// As [`JobSpec::with_expected_inputs`], where the circuit type has a witness that
    /// synthesizes on several threads against its recording (`parallel`); the first partition
    /// of a shape records on the default path.
    pub fn with_parallel_witness<C: Circuit<Scalar> + Send + 'static>(
        srs: Arc<Srs>,
        circuits: Vec<C>,
        expected: Vec<Vec<Scalar>>,
        parallel: Option<ParallelWitness<C>>,
    ) -> Result<Self, crate::EngineError> {
        if expected.len() != circuits.len() {
            return Err(crate::EngineError::Rejected(format!(
                "{} circuits but {} public-input vectors",
                circuits.len(),
                expected.len()
            )));
        }
        let partitions = circuits
            .into_iter()
            .zip(expected)
            .enumerate()
            .map(|(i, (c, e))| synth_fn(&srs, i, c, Some(e), parallel))
            .collect();
        Ok(JobSpec {
            synthesis: probe::<C>(&srs),
            srs,
            partitions,
            priority: Priority::Normal,
            randomness: Randomness::Random,
            kind: Arc::from("custom"),
            deadline: None,
        })
    }
    pub fn priority(mut self, p: Priority) -> Self {
        self.priority = p;
        self
    }
    pub fn randomness(mut self, r: Randomness) -> Self {
        self.randomness = r;
        self
    }
    /// Names the kind of proof in log lines.
    pub fn kind(mut self, k: &str) -> Self {
        self.kind = Arc::from(k);
        self
    }
    /// Due `d` after submission ([`JobSpec::deadline`]).
    pub fn deadline(mut self, d: Option<Duration>) -> Self {
        self.deadline = d;
        self
    }
}

/// The probe of circuit type `C` against `srs` (the parameter binding, a hash of the verifying
/// key, is computed on the first question only).
fn probe<C: 'static>(srs: &Arc<Srs>) -> SynthesisProbe {
    use cuzk_engine::recorded::{ParamsBinding, RecordingCache};
    let srs = srs.clone();
    let binding = std::sync::OnceLock::new();
    Arc::new(move || {
        let cache = RecordingCache::global();
        if !cache.options().enabled {
            return Synthesis::Full;
        }
        let key = RecordingCache::key_of::<C>();
        let b = binding.get_or_init(|| ParamsBinding::of(&srs));
        if let Some(recording) = cache.check_due(key, b) {
            Synthesis::Checked { recording }
        } else if cache.holds(key, b) {
            Synthesis::Recorded
        } else {
            Synthesis::Unrecorded { key }
        }
    })
}

/// A circuit type's witness on several threads against its recording.
pub use cuzk_engine::recorded::ParallelWitness;

/// Partition `i`'s synthesis (the one place the pipeline turns a circuit into an assignment), with
/// an optional check of its public inputs against `expected`.
fn synth_fn<C: Circuit<Scalar> + Send + 'static>(
    srs: &Arc<Srs>,
    i: usize,
    c: C,
    expected: Option<Vec<Scalar>>,
    parallel: Option<ParallelWitness<C>>,
) -> SynthFn {
    // The recorded path unless `RecordingCache::global()`'s options turn it off: witness-only,
    // on several threads where the circuit has a parallel witness, with the products left to
    // the backend (a GPU computes them from the uploaded witness).
    let srs = srs.clone();
    Box::new(move |hint| {
        let run = || {
            let cache = cuzk_engine::recorded::RecordingCache::global();
            let opts = cache.options();
            if !opts.enabled {
                return synthesize_default(&srs, c, i, hint);
            }
            cache
                .synthesize_deferred(&srs, c, i, &opts, parallel)
                .map(|s| s.assignment)
        };
        // A gadget that panics on a witness it did not expect fails this partition, not the pool.
        let asg = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|p| {
            EngineError::Other(format!(
                "partition {i}: synthesis panicked: {}",
                panic_text(&*p)
            ))
        })??;
        if let Some(e) = expected {
            cuzk_engine::verify::check_public_inputs(i, asg.public_inputs(), &e)?;
        }
        Ok(asg)
    })
}

pub use cuzk_engine::error::panic_text;

/// A finished job: proofs in partition order.
#[derive(Debug, Clone)]
pub struct JobOutput {
    pub id: JobId,
    pub proofs: Vec<Proof<Bls12>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    /// Submission to the start of the first partition's synthesis: the time the job waited for
    /// host memory and a synthesis worker (synthesis itself is not counted).
    pub queue: Duration,
    /// First upload to the last partition's result.
    pub prove: Duration,
    /// Submission to result.
    pub wall: Duration,
    /// The job's deadline ([`JobSpec::deadline`]), if it had one.
    pub deadline: Option<Duration>,
    /// How long after its deadline the job ended (`wall - deadline`); `None`: met, or none set.
    pub missed_deadline_by: Option<Duration>,
}

impl JobOutput {
    /// 192 bytes per partition, concatenated in order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(192 * self.proofs.len());
        for p in &self.proofs {
            let _ = p.write(&mut out);
        }
        out
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum JobError {
    #[error("job {0} was cancelled")]
    Cancelled(JobId),
    #[error("job {job} partition {partition}: {what}")]
    Failed {
        job: JobId,
        partition: usize,
        what: String,
    },
    #[error("job {job}: {what}")]
    Rejected { job: JobId, what: String },
    #[error("the engine stopped before job {0} finished")]
    EngineStopped(JobId),
}

pub struct JobHandle {
    pub id: JobId,
    pub(crate) rx: Receiver<Result<JobOutput, JobError>>,
    pub(crate) submitted: Instant,
}

impl JobHandle {
    /// Blocks until the job ends.
    pub fn wait(&self) -> Result<JobOutput, JobError> {
        self.rx
            .recv()
            .unwrap_or(Err(JobError::EngineStopped(self.id)))
    }
    /// Waits at most `d`; `None` if the job is still running.
    pub fn wait_timeout(&self, d: Duration) -> Option<Result<JobOutput, JobError>> {
        match self.rx.recv_timeout(d) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => Some(Err(JobError::EngineStopped(self.id))),
        }
    }
    /// The result if the job has ended.
    pub fn poll(&self) -> Option<Result<JobOutput, JobError>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(JobError::EngineStopped(self.id))),
        }
    }
    pub fn submitted(&self) -> Instant {
        self.submitted
    }
}
