//! [`WitnessCs`]: witness-only synthesis against a [`Recording`]. `alloc` and `alloc_input` write
//! the values into vectors reserved to the recorded sizes, `enforce` only counts (its closures are
//! never called, so no linear combination is built), except on sampled rows: every `every`-th
//! row's linear combinations are built and compared with the recording, so that a circuit whose
//! structure drifted from its recording is caught even when its counts still agree.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::recording::Recording;
use crate::error::EngineError;

struct Sampler<'r> {
    rec: &'r Recording,
    every: usize,
    phase: usize,
    mismatch: Option<(usize, usize)>,
}

/// Witness-only synthesis (see the module documentation).
pub struct WitnessCs<'r> {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    constraints: usize,
    sampler: Option<Sampler<'r>>,
}

/// The witness `(inputs, aux)` of one synthesis.
pub type Values = (Vec<Scalar>, Vec<Scalar>);

/// A linear combination's non-zero terms as recorded columns (inputs, then aux after `n_inputs`).
pub(crate) fn terms(lc: &LinearCombination<Scalar>, n_inputs: usize) -> Vec<(usize, Scalar)> {
    let nz = |c: &&Scalar| !bool::from(c.is_zero());
    let ins = lc
        .iter_inputs()
        .filter(|(_, c)| nz(c))
        .map(|(&i, c)| (i, *c));
    ins.chain(
        lc.iter_aux()
            .filter(|(_, c)| nz(c))
            .map(|(&i, c)| (n_inputs + i, *c)),
    )
    .collect()
}

impl<'r> WitnessCs<'r> {
    /// A witness synthesis sized for `rec`, comparing rows `phase, phase + every, …` with it
    /// (`every == 0`: no row is compared).
    pub fn for_recording(rec: &'r Recording, every: usize, phase: usize) -> WitnessCs<'r> {
        let c = rec.counts();
        let sampler = (every > 0).then(|| Sampler {
            rec,
            every,
            phase: phase % every,
            mismatch: None,
        });
        WitnessCs {
            inputs: Vec::with_capacity(c.inputs),
            aux: Vec::with_capacity(c.aux),
            constraints: 0,
            sampler,
        }
    }

    /// The witness, after checking that the synthesis made as many inputs, aux variables and
    /// constraints as `rec` holds and that every sampled row matched. `circuit` names the
    /// partition in errors.
    pub fn finish(self, rec: &Recording, circuit: usize) -> Result<Values, EngineError> {
        let c = rec.counts();
        let mismatch = |what: String| EngineError::RecordingMismatch { circuit, what };
        // A recording is kept only when it fits its parameters, so other inputs, aux or domain
        // are the parameters' mismatch too, and are reported as `prepare` would (in its order).
        let unfit = |what: String| EngineError::ShapeMismatch { circuit, what };
        let rows = self.constraints + self.inputs.len();
        if rows.next_power_of_two() != c.rows().next_power_of_two() {
            return Err(unfit(format!("{rows} constraints (with one row per input) need a domain of {}; its recording has {}", rows.next_power_of_two(), c.rows())));
        }
        if self.inputs.len() != c.inputs {
            return Err(unfit(format!(
                "{} inputs (one included); its recording has {}",
                self.inputs.len(),
                c.inputs
            )));
        }
        if self.aux.len() != c.aux {
            return Err(unfit(format!(
                "{} aux variables; its recording has {}",
                self.aux.len(),
                c.aux
            )));
        }
        if self.constraints != c.circuit_rows {
            return Err(mismatch(format!(
                "constraints: {} recorded, {} synthesized (a shape that depends on the witness?)",
                c.circuit_rows, self.constraints
            )));
        }
        if let Some((m, row)) = self.sampler.and_then(|s| s.mismatch) {
            let name = super::recording::MATRICES[m];
            return Err(mismatch(format!("constraint {row}'s {name} differs from the recording (a structure that depends on the witness?)")));
        }
        Ok((self.inputs, self.aux))
    }
}

impl ConstraintSystem<Scalar> for WitnessCs<'_> {
    type Root = Self;

    fn new() -> Self {
        WitnessCs {
            inputs: Vec::new(),
            aux: Vec::new(),
            constraints: 0,
            sampler: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.constraints;
        self.constraints += 1;
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        if row % s.every != s.phase || s.mismatch.is_some() {
            return;
        }
        let n = s.rec.counts().inputs;
        let lcs = [
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        ];
        if let Some(m) = (0..3).find(|&m| !s.rec.row_is(m, row, &terms(&lcs[m], n))) {
            s.mismatch = Some((m, row));
        }
    }

    crate::witness_only_namespaces!();

    fn is_extensible() -> bool {
        true
    }

    /// As `Assignment::extend`: the other's input 0 (its own `one`) is dropped.
    fn extend(&mut self, other: &Self) {
        self.inputs
            .extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
        self.constraints += other.constraints;
    }
}

/// Synthesizes `circuit`'s witness against `rec` (`one` first, as `synth::synthesize` does).
pub fn witness<C: Circuit<Scalar>>(
    rec: &Recording,
    circuit: C,
    index: usize,
    every: usize,
    phase: usize,
) -> Result<Values, EngineError> {
    let synth = |source| EngineError::Synthesis {
        circuit: index,
        source,
    };
    let mut cs = WitnessCs::for_recording(rec, every, phase);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .map_err(synth)?;
    circuit.synthesize(&mut cs).map_err(synth)?;
    cs.finish(rec, index)
}
