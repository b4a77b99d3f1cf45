//! How a proof kind hands over its circuits: to a [`CircuitSink`], generically, so that the
//! receiver (the engine's job builder, a reference prover in a test) gets the concrete circuit
//! type without boxing the circuit itself. Blank circuits (for a parameter setup or a shape
//! report) go to a [`BlankSink`], as a [`Remake`] that can be built again for each pass.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_engine::recorded::{Recording, Values};
use cuzk_engine::EngineError;

/// The partition circuits of one proof and, for each, the public inputs (without `one`) that
/// filecoin-proofs' `generate_public_inputs` computes for it; a verifier checks against these.
pub struct Partitions<C> {
    pub circuits: Vec<C>,
    pub public_inputs: Vec<Vec<Scalar>>,
    /// Where the circuit's structure allows it: its witness on several threads, against a
    /// recording of the same circuit type (PoRep: one thread per challenge).
    pub parallel_witness: Option<WitnessFn<C>>,
}

/// A partition's witness synthesized against its recording, in pieces on several threads.
pub type WitnessFn<C> = fn(C, &Recording, usize) -> Result<Values, EngineError>;

pub trait CircuitSink {
    type Out;
    fn take<C: Circuit<Scalar> + Send + 'static>(self, parts: Partitions<C>) -> Self::Out;
}

pub trait BlankSink {
    type Out;
    fn take<C: Circuit<Scalar> + Clone + Send + 'static>(self, blank: C) -> Self::Out;
}

/// A blank circuit as the function that builds it, so that it can be synthesized more than once
/// even where the circuit type itself is not `Clone`.
#[derive(Clone)]
pub struct Remake<F>(pub F);

impl<C: Circuit<Scalar>, F: Fn() -> C> Circuit<Scalar> for Remake<F> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        (self.0)().synthesize(cs)
    }
}
