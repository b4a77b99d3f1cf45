//! Circuit shape without a witness: counting synthesis (how many inputs, aux variables and
//! constraints), and the QAP polynomials of every variable evaluated at one point — what a setup
//! needs. Both run the circuit's `synthesize` with the value closures never called.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// Counts variables and constraints (the input rows `x_i · 0 = 0` included) and, where asked,
/// which variables A and B use with a non-zero coefficient (the parameter layout's densities).
#[derive(Default)]
struct Counter {
    inputs: usize,
    aux: usize,
    constraints: usize,
    densities: Option<Densities>,
}

#[derive(Default)]
struct Densities {
    a_aux: Vec<bool>,
    b_input: Vec<bool>,
    b_aux: Vec<bool>,
}

fn mark(lc: &LinearCombination<Scalar>, inputs: Option<&mut Vec<bool>>, aux: &mut Vec<bool>) {
    if let Some(inputs) = inputs {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                if inputs.len() <= i {
                    inputs.resize(i + 1, false);
                }
                inputs[i] = true;
            }
        }
    }
    for (&i, c) in lc.iter_aux() {
        if !bool::from(c.is_zero()) {
            if aux.len() <= i {
                aux.resize(i + 1, false);
            }
            aux[i] = true;
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
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
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
        self.constraints += 1;
        if let Some(d) = &mut self.densities {
            mark(&a(LinearCombination::zero()), None, &mut d.a_aux);
            mark(
                &b(LinearCombination::zero()),
                Some(&mut d.b_input),
                &mut d.b_aux,
            );
        }
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}

/// `(inputs, aux, constraints)` of a circuit, `one` and the input rows included.
pub fn count<C: Circuit<Scalar>>(circuit: C) -> Result<(usize, usize, usize), SynthesisError> {
    let mut c = Counter {
        inputs: 1,
        ..Default::default()
    };
    circuit.synthesize(&mut c)?;
    Ok((c.inputs, c.aux, c.constraints + c.inputs))
}

/// What a circuit's parameter file holds, counted without a witness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutCounts {
    /// Rows, the input rows included.
    pub constraints: usize,
    /// Inputs, `one` included (`n_ic`).
    pub inputs: usize,
    /// Aux variables (`n_l`).
    pub aux: usize,
    /// Inputs and the aux variables A uses (`n_a`; inputs are dense through their rows).
    pub a: usize,
    /// Inputs and aux variables B uses (`n_b1 = n_b2`).
    pub b: usize,
}

/// Counts `circuit` and its A and B densities, as bellperson's setup lays out its parameters.
pub fn layout<C: Circuit<Scalar>>(circuit: C) -> Result<LayoutCounts, SynthesisError> {
    let mut c = Counter {
        inputs: 1,
        densities: Some(Densities::default()),
        ..Default::default()
    };
    circuit.synthesize(&mut c)?;
    let d = c.densities.unwrap_or_default();
    let ones = |v: &[bool]| v.iter().filter(|b| **b).count();
    Ok(LayoutCounts {
        constraints: c.constraints + c.inputs,
        inputs: c.inputs,
        aux: c.aux,
        a: c.inputs + ones(&d.a_aux),
        b: ones(&d.b_input) + ones(&d.b_aux),
    })
}

/// `u_j(τ), v_j(τ), w_j(τ)` of every input and aux variable.
pub struct QapAt {
    pub u_inputs: Vec<Scalar>,
    pub v_inputs: Vec<Scalar>,
    pub w_inputs: Vec<Scalar>,
    pub u_aux: Vec<Scalar>,
    pub v_aux: Vec<Scalar>,
    pub w_aux: Vec<Scalar>,
}

struct Evaluator<'a> {
    /// `L_i(τ)` of constraint row `i`.
    lagrange: &'a [Scalar],
    row: usize,
    q: QapAt,
}

fn acc(lc: &LinearCombination<Scalar>, l: Scalar, inputs: &mut [Scalar], aux: &mut [Scalar]) {
    let minus_one = -Scalar::ONE;
    // Most coefficients are ±1 (bits, packing sums): an addition instead of a product.
    let add = |x: &mut Scalar, c: &Scalar| {
        if *c == Scalar::ONE {
            *x += l;
        } else if *c == minus_one {
            *x -= l;
        } else {
            *x += l * c;
        }
    };
    for (&i, c) in lc.iter_inputs() {
        add(&mut inputs[i], c);
    }
    for (&i, c) in lc.iter_aux() {
        add(&mut aux[i], c);
    }
}

impl ConstraintSystem<Scalar> for Evaluator<'_> {
    type Root = Self;
    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        for v in [&mut self.q.u_aux, &mut self.q.v_aux, &mut self.q.w_aux] {
            v.push(Scalar::ZERO);
        }
        Ok(Variable::new_unchecked(Index::Aux(self.q.u_aux.len() - 1)))
    }
    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        for v in [
            &mut self.q.u_inputs,
            &mut self.q.v_inputs,
            &mut self.q.w_inputs,
        ] {
            v.push(Scalar::ZERO);
        }
        Ok(Variable::new_unchecked(Index::Input(
            self.q.u_inputs.len() - 1,
        )))
    }
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let l = self.lagrange[self.row];
        let q = &mut self.q;
        acc(
            &a(LinearCombination::zero()),
            l,
            &mut q.u_inputs,
            &mut q.u_aux,
        );
        acc(
            &b(LinearCombination::zero()),
            l,
            &mut q.v_inputs,
            &mut q.v_aux,
        );
        acc(
            &c(LinearCombination::zero()),
            l,
            &mut q.w_inputs,
            &mut q.w_aux,
        );
        self.row += 1;
    }
    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}
    fn pop_namespace(&mut self) {}
    fn get_root(&mut self) -> &mut Self {
        self
    }
}

/// Evaluates every variable's QAP polynomials at the point whose Lagrange coefficients over the
/// domain are `lagrange` (at least as many as the circuit's rows).
pub fn evaluate<C: Circuit<Scalar>>(
    circuit: C,
    lagrange: &[Scalar],
    shape: (usize, usize),
) -> Result<QapAt, SynthesisError> {
    let (inputs, aux) = shape;
    let with = |n| Vec::with_capacity(n);
    let mut e = Evaluator {
        lagrange,
        row: 0,
        q: QapAt {
            u_inputs: with(inputs),
            v_inputs: with(inputs),
            w_inputs: with(inputs),
            u_aux: with(aux),
            v_aux: with(aux),
            w_aux: with(aux),
        },
    };
    e.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut e)?;
    for i in 0..e.q.u_inputs.len() {
        e.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(e.q)
}
