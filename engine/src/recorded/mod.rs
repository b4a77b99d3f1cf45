//! The recorded path: a circuit's constraints recorded once per shape ([`Recording`], by
//! [`record::Recorder`]), stored beside the decode cache ([`file`]), and every later proof
//! synthesized witness-only ([`witness::WitnessCs`], or in parallel pieces, [`pieces`]) with
//! `a, b, c` as sparse matrix–vector products ([`matvec`]) — the same [`crate::Assignment`]
//! `synth::synthesize` produces, for a fraction of the work. [`cache::RecordingCache`] ties it
//! together with the safety checks: counts, sampled rows, sampled full syntheses.

pub mod cache;
pub mod coeff;
pub mod file;
pub mod matvec;
pub mod pieces;
pub mod record;
pub mod recording;
pub mod witness;

pub use cache::{build_file, synthesize_default, RecordOptions, RecordingCache, Source, Synthesized};
pub use file::{open_for, recording_path, ParamsBinding};
pub use pieces::{PieceRange, Witness, WitnessPiece};
pub use record::{record, Recorder};
pub use recording::{Counts, Mark, Recording};
pub use witness::{witness, Values, WitnessCs};
