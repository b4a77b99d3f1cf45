//! The recorded path: a circuit's constraints recorded once per shape ([`Recording`], by
//! [`record::Recorder`]), stored beside the decode cache ([`file`]), and every later proof
//! synthesized witness-only ([`witness::WitnessCs`], or in parallel pieces, [`pieces`]) with
//! `a, b, c` as sparse matrix–vector products ([`matvec`]) — the same [`crate::Assignment`]
//! `synth::synthesize` produces, for a fraction of the work. [`cache::RecordingCache`] ties it
//! together with the safety checks: counts, sampled rows, sampled full syntheses.

/// The namespace methods of a witness-only `ConstraintSystem` (its own root): names are never
/// built, so nothing is done.
#[macro_export]
#[doc(hidden)]
macro_rules! witness_only_namespaces {
    () => {
        fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
        fn pop_namespace(&mut self) {}
        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

pub mod cache;
pub mod coeff;
pub mod file;
pub mod matvec;
pub mod pieces;
pub mod record;
pub mod recording;
pub mod witness;

pub use cache::{
    build_file, synthesize_default, with_check, ParallelWitness, RecordOptions, RecordingCache,
    Source, Synthesized,
};
pub use file::{open_for, recording_path, ParamsBinding};
pub use pieces::{PieceRange, Witness, WitnessPiece};
pub use record::{record, Recorder};
pub use recording::{Counts, Mark, Recording};
pub use witness::{witness, Values, WitnessCs};
