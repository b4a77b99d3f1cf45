//! The parameter layout a registered proof's circuit needs, counted from its blank circuit: what
//! cuzk expects of a `.params` file before any is opened (and what a setup must produce).

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use serde::Serialize;

use crate::error::FilecoinError;
use crate::params;
use crate::registered::Registered;
use crate::sink::BlankSink;

/// Counts of a circuit in bellperson's conventions (`one` and the input rows included) and the
/// section sizes of the parameter file it is proved against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CircuitLayout {
    /// Rows of A, B, C: the circuit's constraints plus one per input.
    pub constraints: u64,
    /// Public inputs, `one` included (= `n_ic`).
    pub inputs: u64,
    /// Aux variables (= `n_l`).
    pub aux: u64,
    /// The evaluation domain (`n_h + 1`).
    pub domain: u64,
    /// Inputs, and aux variables appearing in A (= `n_a`).
    pub a: u64,
    /// Inputs and aux variables appearing in B (= `n_b1 = n_b2`).
    pub b: u64,
}

impl CircuitLayout {
    /// Bytes of the `.params` file: the verifying key, the counts and every point section.
    pub fn params_bytes(&self) -> u64 {
        let (g1, g2) = (96u64, 192u64);
        3 * g1 + 3 * g2 + 6 * 4 + g1 * (self.inputs + self.domain - 1 + self.aux + self.a + self.b) + g2 * self.b
    }

    /// The layout of an opened parameter set, for comparison.
    pub fn of_srs(srs: &cuzk_srs::Srs) -> CircuitLayout {
        CircuitLayout {
            constraints: 0,
            inputs: srs.num_inputs() as u64,
            aux: srs.l().len() as u64,
            domain: srs.domain_size() as u64,
            a: srs.a().len() as u64,
            b: srs.b_g1().len() as u64,
        }
    }

    /// Whether `srs` has exactly this layout (the constraint count is not in a parameter file;
    /// the domain stands for it).
    pub fn matches(&self, srs: &cuzk_srs::Srs) -> bool {
        CircuitLayout { constraints: 0, ..*self } == CircuitLayout::of_srs(srs)
    }
}

/// Counts `registered`'s blank circuit (single-threaded, no witness; tens of seconds at 32 GiB).
pub fn of(registered: Registered) -> Result<CircuitLayout, FilecoinError> {
    params::blank(registered, Count)?
}

struct Count;

impl BlankSink for Count {
    type Out = Result<CircuitLayout, FilecoinError>;
    fn take<C: Circuit<Scalar> + Clone + Send + 'static>(self, blank: C) -> Self::Out {
        let mut cs = Counter { inputs: 1, ..Counter::default() };
        blank.synthesize(&mut cs).map_err(|source| cuzk_engine::EngineError::Synthesis { circuit: 0, source })?;
        let inputs = cs.inputs as u64;
        let constraints = cs.constraints + inputs;
        Ok(CircuitLayout {
            constraints,
            inputs,
            aux: cs.a_aux.len() as u64,
            domain: constraints.next_power_of_two(),
            // Inputs are dense in A through their `x_i · 0 = 0` rows.
            a: inputs + cs.a_aux.iter().filter(|b| **b).count() as u64,
            b: cs.b_input.iter().filter(|b| **b).count() as u64 + cs.b_aux.iter().filter(|b| **b).count() as u64,
        })
    }
}

#[derive(Default)]
struct Counter {
    inputs: usize,
    constraints: u64,
    a_aux: Vec<bool>,
    b_input: Vec<bool>,
    b_aux: Vec<bool>,
}

fn mark(lc: &LinearCombination<Scalar>, inputs: Option<&mut Vec<bool>>, aux: &mut [bool]) {
    if let Some(inputs) = inputs {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                if let Some(b) = inputs.get_mut(i) {
                    *b = true;
                }
            }
        }
    }
    for (&i, c) in lc.iter_aux() {
        if !bool::from(c.is_zero()) {
            if let Some(b) = aux.get_mut(i) {
                *b = true;
            }
        }
    }
}

impl ConstraintSystem<Scalar> for Counter {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.a_aux.push(false);
        self.b_aux.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.a_aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.b_input.len() < self.inputs {
            self.b_input.resize(self.inputs, false);
        }
        mark(&a(LinearCombination::zero()), None, &mut self.a_aux);
        mark(&b(LinearCombination::zero()), Some(&mut self.b_input), &mut self.b_aux);
        self.constraints += 1;
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}
