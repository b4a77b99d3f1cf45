//! Parallel witness synthesis inside one partition: the witness vector is cut into disjoint
//! pieces, each a `ConstraintSystem` ([`WitnessPiece`]) that allocates into its own sub-range of
//! inputs and aux, so that threads synthesize independent parts of a circuit (Filecoin's
//! challenges) into one witness. [`Recording::tiling`] gives the pieces of recorded namespaces
//! and the glue between them; [`Witness::pieces`] checks that the pieces tile the witness.

use std::ops::Range;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::recording::{Mark, Recording};
use super::witness::Values;
use crate::error::EngineError;

/// The part of a witness one piece writes: inputs and aux ranges, and the constraints it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceRange {
    pub inputs: Range<usize>,
    pub aux: Range<usize>,
    pub rows: Range<usize>,
}

impl From<&Mark> for PieceRange {
    fn from(m: &Mark) -> Self {
        PieceRange {
            inputs: m.inputs.clone(),
            aux: m.aux.clone(),
            rows: m.rows.clone(),
        }
    }
}

impl Recording {
    /// Pieces covering the whole witness: each of `marks` (in order, disjoint) and the glue
    /// before, between and after them (input 0, `one`, belongs to no piece). An error names
    /// marks that overlap or are out of order.
    pub fn tiling(&self, marks: &[&Mark]) -> Result<Vec<PieceRange>, EngineError> {
        let c = self.counts();
        let mut at = PieceRange {
            inputs: 1..1,
            aux: 0..0,
            rows: 0..0,
        };
        let mut out = Vec::with_capacity(2 * marks.len() + 1);
        for m in marks {
            if m.inputs.start < at.inputs.start
                || m.aux.start < at.aux.start
                || m.rows.start < at.rows.start
            {
                return Err(EngineError::Recording {
                    what: format!("mark {} overlaps or precedes the piece before it", m.path),
                });
            }
            out.push(PieceRange {
                inputs: at.inputs.start..m.inputs.start,
                aux: at.aux.start..m.aux.start,
                rows: at.rows.start..m.rows.start,
            });
            out.push(PieceRange::from(*m));
            at = PieceRange {
                inputs: m.inputs.end..m.inputs.end,
                aux: m.aux.end..m.aux.end,
                rows: m.rows.end..m.rows.end,
            };
        }
        out.push(PieceRange {
            inputs: at.inputs.start..c.inputs,
            aux: at.aux.start..c.aux,
            rows: at.rows.start..c.circuit_rows,
        });
        Ok(out)
    }
}

/// A full-size witness, filled by pieces.
pub struct Witness {
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
}

impl Witness {
    /// A witness of `rec`'s size with input 0 set to `one` (the rest zero until written).
    pub fn for_recording(rec: &Recording) -> Witness {
        let c = rec.counts();
        let mut inputs = vec![Scalar::ZERO; c.inputs];
        if let Some(one) = inputs.first_mut() {
            *one = Scalar::ONE;
        }
        Witness {
            inputs,
            aux: vec![Scalar::ZERO; c.aux],
        }
    }

    /// One piece per range; the ranges must tile inputs `1..`, aux and the rows in order (as
    /// [`Recording::tiling`] makes them).
    pub fn pieces(&mut self, ranges: &[PieceRange]) -> Result<Vec<WitnessPiece<'_>>, EngineError> {
        let (n_in, n_aux) = (self.inputs.len(), self.aux.len());
        let inputs_end = tiles(ranges, 1.min(n_in), |r| r.inputs.clone());
        if inputs_end != Some(n_in)
            || tiles(ranges, 0, |r| r.aux.clone()) != Some(n_aux)
            || tiles(ranges, 0, |r| r.rows.clone()).is_none()
        {
            return Err(EngineError::Recording {
                what: format!(
                    "pieces do not tile the witness ({n_in} inputs, {n_aux} aux) in order"
                ),
            });
        }
        let (mut ins, mut aux) = (
            self.inputs.get_mut(1..).unwrap_or_default(),
            &mut self.aux[..],
        );
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            let (i, rest_i) = std::mem::take(&mut ins).split_at_mut(r.inputs.len());
            let (a, rest_a) = std::mem::take(&mut aux).split_at_mut(r.aux.len());
            (ins, aux) = (rest_i, rest_a);
            out.push(WitnessPiece {
                range: r.clone(),
                inputs: i,
                aux: a,
                at: (0, 0),
                constraints: 0,
                overflow: false,
            });
        }
        Ok(out)
    }

    pub fn into_values(self) -> Values {
        (self.inputs, self.aux)
    }
}

/// The end of `ranges` laid end to end from `start` (`None` if one does not start where the last
/// ended).
fn tiles(
    ranges: &[PieceRange],
    start: usize,
    get: impl Fn(&PieceRange) -> Range<usize>,
) -> Option<usize> {
    ranges.iter().try_fold(start, |at, r| {
        let g = get(r);
        (g.start == at && g.end >= at).then_some(g.end)
    })
}

/// Witness-only synthesis into one piece of a [`Witness`]: variables are numbered from the
/// piece's start; allocating past its end is an error (reported by [`WitnessPiece::finish`]).
pub struct WitnessPiece<'w> {
    range: PieceRange,
    inputs: &'w mut [Scalar],
    aux: &'w mut [Scalar],
    at: (usize, usize),
    constraints: usize,
    overflow: bool,
}

impl WitnessPiece<'_> {
    pub fn range(&self) -> &PieceRange {
        &self.range
    }

    /// Checks the piece wrote exactly its range and made its recorded number of constraints.
    pub fn finish(self, circuit: usize) -> Result<(), EngineError> {
        let r = &self.range;
        let got = (self.at.0, self.at.1, self.constraints);
        if self.overflow || got != (r.inputs.len(), r.aux.len(), r.rows.len()) {
            return Err(EngineError::RecordingMismatch {
                circuit,
                what: format!(
                    "piece at aux {}..{}: {} inputs, {} aux and {} constraints recorded, {}{} inputs, {} aux and {} constraints synthesized",
                    r.aux.start,
                    r.aux.end,
                    r.inputs.len(),
                    r.aux.len(),
                    r.rows.len(),
                    if self.overflow { "more than " } else { "" },
                    got.0,
                    got.1,
                    got.2
                ),
            });
        }
        Ok(())
    }
}

impl ConstraintSystem<Scalar> for WitnessPiece<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let Some(slot) = self.aux.get_mut(self.at.1) else {
            self.overflow = true;
            return Err(SynthesisError::AssignmentMissing);
        };
        *slot = f()?;
        self.at.1 += 1;
        Ok(Variable::new_unchecked(Index::Aux(
            self.range.aux.start + self.at.1 - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let Some(slot) = self.inputs.get_mut(self.at.0) else {
            self.overflow = true;
            return Err(SynthesisError::AssignmentMissing);
        };
        *slot = f()?;
        self.at.0 += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.range.inputs.start + self.at.0 - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    crate::witness_only_namespaces!();
}
