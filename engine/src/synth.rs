//! Synthesis: running a `bellperson::Circuit` into an [`Assignment`] with bellperson's conventions.
//!
//! - input 0 is the constant `one`;
//! - after the circuit's constraints, a row `x_i · 0 = 0` is appended for every input;
//! - a variable counts toward a density only where it appears with a non-zero coefficient:
//!   A tracks aux (inputs are always dense in A because of those rows), B tracks inputs and aux.
//!
//! bellperson's own `ProvingAssignment` is private, so this is ours. It keeps everything in flat
//! vectors, reserved up front when the caller knows the shape (the partitions of one proof do).
//! [`synthesize_batch`] synthesizes a job's partitions in parallel (rayon). The recorded path
//! (`recorded/`: R1CS recorded once, witness-only synthesis, `a, b, c` by sparse matrix–vector
//! products) produces the same `Assignment`; nothing downstream changes.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::density::BitVec;
use crate::error::EngineError;

/// The shape of a synthesized circuit, used to reserve memory for the next one of the same kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
}

/// A synthesized circuit: evaluations of A, B, C at every constraint, the witness, and densities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assignment {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    pub inputs: Vec<Scalar>,
    pub aux: Vec<Scalar>,
    pub a_aux_density: BitVec,
    pub b_input_density: BitVec,
    pub b_aux_density: BitVec,
    /// Set by a witness-only synthesis on the recorded path: `a`, `b`, `c` are left empty, to be
    /// computed from this recording by the backend (on a GPU, from the uploaded witness).
    pub deferred: Option<Deferred>,
}

/// The recording whose products an [`Assignment`] left to the backend.
#[derive(Clone)]
pub struct Deferred(pub std::sync::Arc<crate::recorded::Recording>);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Deferred({} rows)", self.0.counts().rows())
    }
}

/// Two deferrals are equal when they defer to the same recording.
impl PartialEq for Deferred {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Assignment {
    pub fn with_shape(shape: Shape) -> Self {
        Assignment {
            a: Vec::with_capacity(shape.constraints),
            b: Vec::with_capacity(shape.constraints),
            c: Vec::with_capacity(shape.constraints),
            inputs: Vec::with_capacity(shape.inputs),
            aux: Vec::with_capacity(shape.aux),
            a_aux_density: BitVec::with_capacity(shape.aux),
            b_input_density: BitVec::with_capacity(shape.inputs),
            b_aux_density: BitVec::with_capacity(shape.aux),
            deferred: None,
        }
    }

    /// The rows of A, B, C (the recorded rows where the products are deferred).
    pub fn rows(&self) -> usize {
        match &self.deferred {
            Some(d) => d.0.counts().rows(),
            None => self.a.len(),
        }
    }

    pub fn shape(&self) -> Shape {
        Shape {
            constraints: self.rows(),
            inputs: self.inputs.len(),
            aux: self.aux.len(),
        }
    }

    /// The public inputs a verifier is given (all inputs but `one`).
    pub fn public_inputs(&self) -> &[Scalar] {
        self.inputs.get(1..).unwrap_or(&[])
    }

    /// The first constraint with `a·b ≠ c`, if any (of the products held: none where deferred).
    pub fn first_unsatisfied(&self) -> Option<usize> {
        (0..self.a.len())
            .into_par_iter()
            .with_min_len(4096)
            .find_first(|&i| self.a[i] * self.b[i] != self.c[i])
    }
}

#[inline]
fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut BitVec>,
    mut aux_density: Option<&mut BitVec>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE {
                inputs[i]
            } else {
                inputs[i] * coeff
            };
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE {
                aux[i]
            } else {
                aux[i] * coeff
            };
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for Assignment {
    type Root = Self;

    fn new() -> Self {
        Assignment::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.push_clear();
        self.b_aux_density.push_clear();
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.push_clear();
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
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let va = eval(
            &a,
            &self.inputs,
            &self.aux,
            None,
            Some(&mut self.a_aux_density),
        );
        let vb = eval(
            &b,
            &self.inputs,
            &self.aux,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
        );
        let vc = eval(&c, &self.inputs, &self.aux, None, None);
        self.a.push(va);
        self.b.push(vb);
        self.c.push(vc);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend_from(&other.a_aux_density, false);
        // The other system's input 0 is its own `one`: a use of it in B is a use of ours (as
        // bellperson's `DensityTracker::extend` coalesces it); the rest are appended.
        if !other.b_input_density.is_empty()
            && other.b_input_density.get(0)
            && !self.b_input_density.is_empty()
        {
            self.b_input_density.set(0);
        }
        self.b_input_density
            .extend_from(&other.b_input_density, true);
        self.b_aux_density.extend_from(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.c.extend_from_slice(&other.c);
        // The other system's input 0 is its own temporary `one`.
        self.inputs
            .extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }
}

/// Synthesizes one circuit, reserving for `shape` (pass `Shape::default()` when unknown).
pub fn synthesize<C: Circuit<Scalar>>(
    circuit: C,
    shape: Shape,
) -> Result<Assignment, SynthesisError> {
    let mut cs = Assignment::with_shape(shape);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.inputs.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs)
}

/// Synthesizes the partitions of a batch in parallel, reserving memory for `hint` (the shape of
/// an earlier partition of the same circuit type; `Shape::default()` when unknown).
pub fn synthesize_batch<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    hint: Shape,
) -> Result<Vec<Assignment>, EngineError> {
    circuits
        .into_par_iter()
        .enumerate()
        .map(|(i, c)| {
            synthesize(c, hint).map_err(|source| EngineError::Synthesis { circuit: i, source })
        })
        .collect()
}
