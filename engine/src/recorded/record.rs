//! [`Recorder`]: the `ConstraintSystem` that records a circuit's constraints into a
//! [`Recording`], optionally keeping the witness too (the first proof of a shape records and
//! proves from one synthesis, since a circuit can be synthesized only once).
//!
//! It follows `synth::Assignment` exactly: a zero coefficient is dropped and sets no density, a
//! variable that bellpepper merged within one linear combination is one entry, and `extend`
//! appends another recorder's variables and rows as `Assignment::extend` appends its values
//! (the other's input 0 is its own `one`: the first of its inputs is dropped, and bit 0 of its B
//! input density is merged into ours, as bellperson does).

use std::collections::HashMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::coeff;
use super::recording::{Counts, Recording, Store};
use super::witness::Values;
use crate::density::BitVec;
use crate::error::EngineError;

/// Namespaces up to this depth are kept as marks.
pub const MARK_DEPTH: usize = 2;
/// Bit 31 of a column while recording: an aux variable (inputs are numbered on their own until
/// `finish` knows how many there are).
const AUX: u64 = 1 << 31;

#[derive(Default, Clone)]
struct Rows {
    ptr: Vec<u64>,
    ent: Vec<u64>,
}

#[derive(Clone)]
struct OpenMark {
    path: String,
    start: [usize; 3],
}

/// Records constraints (see the module documentation).
pub struct Recorder {
    values: bool,
    inputs: Vec<Scalar>,
    n_inputs: usize,
    aux: Vec<Scalar>,
    n_aux: usize,
    rows: [Rows; 3],
    table: Vec<Scalar>,
    table_ix: HashMap<[u8; 32], u32>,
    dens: [BitVec; 3],
    open: Vec<OpenMark>,
    depth: usize,
    /// Closed marks: path, then (start, end) of inputs, aux, rows.
    marks: Vec<(String, [usize; 6])>,
    error: Option<String>,
}

impl Recorder {
    /// A recorder that keeps the witness (`values`) or never calls the value closures.
    pub fn new(values: bool) -> Recorder {
        let rows = std::array::from_fn(|_| Rows {
            ptr: vec![0],
            ent: Vec::new(),
        });
        Recorder {
            values,
            inputs: Vec::new(),
            n_inputs: 0,
            aux: Vec::new(),
            n_aux: 0,
            rows,
            table: Vec::new(),
            table_ix: HashMap::new(),
            dens: Default::default(),
            open: Vec::new(),
            depth: 0,
            marks: Vec::new(),
            error: None,
        }
    }

    fn code(&mut self, c: &Scalar) -> u32 {
        if let Some(code) = coeff::inline_code(c) {
            return code;
        }
        let key = ff::PrimeField::to_repr(c);
        if let Some(&i) = self.table_ix.get(&key) {
            return coeff::TABLE | i;
        }
        let i = self.table.len() as u32;
        if i >= coeff::TABLE {
            self.error
                .get_or_insert_with(|| "more than 2^31 distinct general coefficients".into());
        }
        self.table.push(*c);
        self.table_ix.insert(key, i);
        coeff::TABLE | i
    }

    /// Appends one row to matrix `m` from `lc`, setting densities as `synth::eval` does.
    fn push_row(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                let code = self.code(c) as u64;
                self.rows[m].ent.push(i as u64 | code << 32);
                if m == 1 {
                    self.dens[1].set(i);
                }
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !bool::from(c.is_zero()) {
                let code = self.code(c) as u64;
                self.rows[m].ent.push(AUX | i as u64 | code << 32);
                if m < 2 {
                    self.dens[if m == 0 { 0 } else { 2 }].set(i);
                }
            }
        }
        let n = self.rows[m].ent.len() as u64;
        self.rows[m].ptr.push(n);
    }

    fn counters(&self) -> [usize; 3] {
        [self.n_inputs, self.n_aux, self.rows[0].ptr.len() - 1]
    }

    /// The recording (the input rows appended, columns numbered inputs then aux), and the witness
    /// `(inputs, aux)` when values were kept.
    pub fn finish(mut self) -> Result<(Recording, Option<Values>), EngineError> {
        if let Some(what) = self.error.take() {
            return Err(EngineError::Recording { what });
        }
        let (n_in, n_aux) = (self.n_inputs, self.n_aux);
        if (n_in + n_aux) as u64 >= 1 << 32 || n_in as u64 >= AUX || n_aux as u64 >= AUX {
            return Err(EngineError::Recording {
                what: format!("{n_in} inputs and {n_aux} aux variables do not fit 32-bit columns"),
            });
        }
        let circuit_rows = self.rows[0].ptr.len() - 1;
        // The `x_i · 0 = 0` rows: input i in A, nothing in B or C.
        for i in 0..n_in {
            self.rows[0].ent.push(i as u64 | (coeff::ONE as u64) << 32);
            for m in 0..3 {
                let n = self.rows[m].ent.len() as u64;
                self.rows[m].ptr.push(n);
            }
        }
        let names: Vec<u8> = self.marks.iter().flat_map(|(p, _)| p.bytes()).collect();
        let counts = Counts {
            inputs: n_in,
            aux: n_aux,
            circuit_rows,
            nnz: std::array::from_fn(|m| self.rows[m].ent.len()),
            table: self.table.len(),
            marks: self.marks.len(),
            names: names.len(),
        };
        let mut image = Vec::with_capacity(super::recording::Sections::of(&counts).total());
        for rows in &self.rows {
            image.extend_from_slice(&rows.ptr);
            image.extend(rows.ent.iter().map(|&e| {
                let col = e & 0xffff_ffff;
                let col = if col & AUX != 0 {
                    n_in as u64 + (col & !AUX)
                } else {
                    col
                };
                col | (e & !0xffff_ffff)
            }));
        }
        for s in &self.table {
            // SAFETY: Scalar is four u64 limbs (asserted in recording.rs).
            image.extend_from_slice(&unsafe { std::mem::transmute::<Scalar, [u64; 4]>(*s) });
        }
        for d in &self.dens {
            image.extend_from_slice(d.words());
        }
        let mut at = 0u64;
        for (p, r) in &self.marks {
            image.extend(r.iter().map(|&x| x as u64));
            image.extend([at, p.len() as u64]);
            at += p.len() as u64;
        }
        let mut padded = names;
        padded.resize(padded.len().div_ceil(8) * 8, 0);
        image.extend(
            padded
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())),
        );
        let rec = Recording::from_store(Store::Owned(image), counts, None)?;
        let witness = self.values.then(|| {
            (
                std::mem::take(&mut self.inputs),
                std::mem::take(&mut self.aux),
            )
        });
        Ok((rec, witness))
    }
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;

    fn new() -> Self {
        Recorder::new(true)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.values {
            self.aux.push(f()?);
        }
        self.n_aux += 1;
        self.dens[0].push_clear();
        self.dens[2].push_clear();
        Ok(Variable::new_unchecked(Index::Aux(self.n_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.values {
            self.inputs.push(f()?);
        }
        self.n_inputs += 1;
        self.dens[1].push_clear();
        Ok(Variable::new_unchecked(Index::Input(self.n_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        self.push_row(2, &c(LinearCombination::zero()));
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.depth += 1;
        if self.depth <= MARK_DEPTH {
            let name = name().into();
            let path = match self.open.last() {
                Some(parent) => format!("{}/{name}", parent.path),
                None => name,
            };
            self.open.push(OpenMark {
                path,
                start: self.counters(),
            });
        }
    }

    fn pop_namespace(&mut self) {
        if self.depth <= MARK_DEPTH {
            if let Some(m) = self.open.pop() {
                let end = self.counters();
                self.marks.push((
                    m.path,
                    [m.start[0], end[0], m.start[1], end[1], m.start[2], end[2]],
                ));
            }
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        let [in0, aux0, row0] = self.counters();
        // The other's input 0 is its own `one`: it stays input 0; its input k is ours in0 + k − 1.
        let remap = |e: u64| {
            let col = e & 0xffff_ffff;
            let col = if col & AUX != 0 {
                AUX | (aux0 as u64 + (col & !AUX))
            } else if col == 0 {
                0
            } else {
                in0 as u64 + col - 1
            };
            (col, (e >> 32) as u32)
        };
        for m in 0..3 {
            let (ptr, ent) = (&other.rows[m].ptr, &other.rows[m].ent);
            for r in 0..ptr.len() - 1 {
                for &e in &ent[ptr[r] as usize..ptr[r + 1] as usize] {
                    let (col, code) = remap(e);
                    let code = match code & coeff::TABLE {
                        0 => code,
                        _ => match other.table.get((code & !coeff::TABLE) as usize) {
                            Some(t) => self.code(t),
                            None => code,
                        },
                    };
                    self.rows[m].ent.push(col | (code as u64) << 32);
                }
                let n = self.rows[m].ent.len() as u64;
                self.rows[m].ptr.push(n);
            }
        }
        self.dens[0].extend_from(&other.dens[0], false);
        // bellperson's DensityTracker::extend coalesces the other's `one` into ours: a use of
        // its `one` in B marks our input 0 (FallbackPoSt's per-sector systems rely on this).
        if !other.dens[1].is_empty() && other.dens[1].get(0) && !self.dens[1].is_empty() {
            self.dens[1].set(0);
        }
        self.dens[1].extend_from(&other.dens[1], true);
        self.dens[2].extend_from(&other.dens[2], false);
        self.inputs
            .extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
        self.n_inputs += other.n_inputs.saturating_sub(1);
        self.n_aux += other.n_aux;
        let prefix = self.open.last().map(|m| m.path.clone());
        for (p, r) in &other.marks {
            let path = prefix
                .as_ref()
                .map_or_else(|| p.clone(), |q| format!("{q}/{p}"));
            let shift = |x: usize, by: usize, minus: usize| (x + by).saturating_sub(minus);
            let r = [
                shift(r[0], in0, 1),
                shift(r[1], in0, 1),
                r[2] + aux0,
                r[3] + aux0,
                r[4] + row0,
                r[5] + row0,
            ];
            self.marks.push((path, r));
        }
        if let Some(e) = &other.error {
            self.error.get_or_insert_with(|| e.clone());
        }
    }
}

/// Records `circuit` as `synth::synthesize` would run it (`one` first, the input rows after),
/// keeping the witness when `values` is set. Without values the value closures are never called
/// (a blank circuit records), except inside pieces a circuit makes with `CS::new()` for `extend`,
/// which keep values.
/// `circuit` names the partition in errors.
pub fn record<C: Circuit<Scalar>>(
    circuit: C,
    values: bool,
    index: usize,
) -> Result<(Recording, Option<Values>), EngineError> {
    let synth = |source| EngineError::Synthesis {
        circuit: index,
        source,
    };
    let mut cs = Recorder::new(values);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .map_err(synth)?;
    circuit.synthesize(&mut cs).map_err(synth)?;
    cs.finish()
}
