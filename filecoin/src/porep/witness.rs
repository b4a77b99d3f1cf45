//! A PoRep partition's witness synthesized on several threads: its challenges are independent,
//! so each runs into its own recorded range of the witness at once (a 32 GiB partition has 18,
//! the test sizes 2).
//!
//! The partition's glue (replica id and its bits, comm_d, comm_r, comm_r_last, comm_c, the
//! comm_r hash) comes first in the recording, then one `challenge_<i>` namespace per challenge.
//! Each challenge thread runs the partition circuit (`circuit.rs`, filecoin-proofs' own cut)
//! with that one challenge through [`SkipGlue`], which maps the glue it allocates again onto the
//! glue's own variables (computing, not storing, its values) and writes the challenge's
//! variables into the challenge's range. Every piece must fill exactly its recorded range and constraint count, and
//! the assignment still goes through `prepare`'s row check and self-verification.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_engine::recorded::{Mark, Recording, Values, Witness, WitnessPiece};
use cuzk_engine::EngineError;
use filecoin_proofs::types::MerkleTreeTrait;
use rayon::prelude::*;
use std::marker::PhantomData;

use super::circuit::{self, ChallengeInputs, Glue};

/// One PoRep partition: what `StackedCompound::circuit` puts in a `StackedCircuit`, kept apart
/// so that its challenges can be synthesized one by one, and synthesized by `circuit.rs`.
pub struct PoRepPartition<Tree: 'static + MerkleTreeTrait> {
    pub glue: Glue,
    pub challenges: Vec<ChallengeInputs>,
    _tree: PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> PoRepPartition<Tree> {
    pub fn new(glue: Glue, challenges: Vec<ChallengeInputs>) -> Self {
        PoRepPartition {
            glue,
            challenges,
            _tree: PhantomData,
        }
    }

    fn synthesize_with<CS: ConstraintSystem<Scalar>>(
        &self,
        mut cs: CS,
        challenges: &[ChallengeInputs],
    ) -> Result<(), SynthesisError> {
        circuit::synthesize::<Tree, _>(&mut cs, &self.glue, challenges)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PoRepPartition<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.synthesize_with(cs, &self.challenges)
    }
}

fn mismatch(circuit: usize, what: impl Into<String>) -> EngineError {
    EngineError::RecordingMismatch {
        circuit,
        what: what.into(),
    }
}

/// The witness of partition `index` against its recording `rec`, the challenges in parallel.
pub fn parallel_witness<Tree: 'static + MerkleTreeTrait>(
    p: PoRepPartition<Tree>,
    rec: &Recording,
    index: usize,
) -> Result<Values, EngineError> {
    let n = p.challenges.len();
    let marks: Vec<&Mark> = (0..n)
        .map(|i| {
            rec.mark(&format!("challenge_{i}")).ok_or_else(|| {
                mismatch(
                    index,
                    format!("the recording has no challenge_{i} namespace"),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let ranges = rec.tiling(&marks)?;
    // [glue, challenge 0, between, challenge 1, …, challenge n−1, tail]: only the first glue is
    // non-empty in a StackedCircuit.
    let glue = ranges
        .first()
        .cloned()
        .ok_or_else(|| mismatch(index, "no pieces"))?;
    if glue.inputs.start != 1 || glue.aux.start != 0 || glue.rows.start != 0 {
        return Err(mismatch(index, "the glue does not open the witness"));
    }
    let empty = |r: &cuzk_engine::recorded::PieceRange| {
        r.inputs.is_empty() && r.aux.is_empty() && r.rows.is_empty()
    };
    if ranges.iter().skip(2).step_by(2).any(|r| !empty(r)) {
        return Err(mismatch(
            index,
            "variables or constraints between or after the challenges",
        ));
    }
    let mut w = Witness::for_recording(rec);
    {
        let mut pieces = w.pieces(&ranges)?.into_iter();
        let mut glue_piece = pieces
            .next()
            .ok_or_else(|| mismatch(index, "no glue piece"))?;
        let rest: Vec<WitnessPiece<'_>> = pieces.collect();
        let (challenges, others): (Vec<_>, Vec<_>) =
            rest.into_iter().enumerate().partition(|(k, _)| k % 2 == 0);
        let sizes = (glue.inputs.len(), glue.aux.len(), glue.rows.len());
        let synth = |e: SynthesisError| EngineError::Synthesis {
            circuit: index,
            source: e,
        };
        let glue_run = || -> Result<(), EngineError> {
            p.synthesize_with(&mut glue_piece, &[]).map_err(synth)?;
            glue_piece.finish(index)
        };
        let run = || -> Result<(), EngineError> {
            challenges
                .into_par_iter()
                .zip(p.challenges.par_iter())
                .try_for_each(|((_, mut piece), proof)| {
                    let mut cs = SkipGlue {
                        piece: &mut piece,
                        glue: sizes,
                        seen: (0, 0, 0),
                    };
                    p.synthesize_with(&mut cs, std::slice::from_ref(proof))
                        .map_err(synth)?;
                    if cs.seen != (sizes.0, sizes.1, sizes.2) {
                        return Err(mismatch(
                            index,
                            "a challenge's glue differs from the partition's",
                        ));
                    }
                    piece.finish(index)
                })
        };
        let (g, c) = rayon::join(glue_run, run);
        g?;
        c?;
        for (_, piece) in others {
            piece.finish(index)?;
        }
    }
    Ok(w.into_values())
}

/// A challenge's system: the first `glue` inputs, aux and constraints it makes are the glue's
/// (their values computed and dropped, their variables the glue's own); the rest go to `piece`.
struct SkipGlue<'p, 'w> {
    piece: &'p mut WitnessPiece<'w>,
    glue: (usize, usize, usize),
    seen: (usize, usize, usize),
}

impl ConstraintSystem<Scalar> for SkipGlue<'_, '_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.seen.1 < self.glue.1 {
            f()?;
            self.seen.1 += 1;
            return Ok(Variable::new_unchecked(Index::Aux(self.seen.1 - 1)));
        }
        self.piece.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.seen.0 < self.glue.0 {
            f()?;
            self.seen.0 += 1;
            // Input 0 is `one`: the glue's inputs are 1, 2, ….
            return Ok(Variable::new_unchecked(Index::Input(self.seen.0)));
        }
        self.piece.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, a: A, la: LA, lb: LB, lc: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.seen.2 < self.glue.2 {
            self.seen.2 += 1;
            return;
        }
        self.piece.enforce(a, la, lb, lc)
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}
