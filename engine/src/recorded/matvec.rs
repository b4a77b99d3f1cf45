//! `a = A·w`, `b = B·w`, `c = C·w` on the CPU from a [`Recording`] and a witness, row-parallel,
//! into the same [`Assignment`] `synth::synthesize` produces.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::coeff;
use super::recording::Recording;
use super::witness::Values;
use crate::error::EngineError;
use crate::synth::{Assignment, Deferred};
use std::sync::Arc;

/// Rows a rayon task takes at least.
const MIN_ROWS: usize = 1 << 12;

impl Recording {
    /// `M·w` for matrix `m` (0 = A, 1 = B, 2 = C), `w = inputs ++ aux`. The lengths must be the
    /// recorded counts (checked by [`Recording::assignment`]).
    pub(crate) fn product(&self, m: usize, inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
        let (ptr, ent, table) = (self.row_ptr(m), self.entries(m), self.table());
        let n_in = inputs.len();
        let mut out = Vec::new();
        (0..self.counts().rows())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|r| {
                let mut acc = Scalar::ZERO;
                for &e in &ent[ptr[r] as usize..ptr[r + 1] as usize] {
                    let col = (e & 0xffff_ffff) as usize;
                    let v = if col < n_in {
                        inputs[col]
                    } else {
                        aux[col - n_in]
                    };
                    coeff::accumulate(&mut acc, v, (e >> 32) as u32, table);
                }
                acc
            })
            .collect_into_vec(&mut out);
        out
    }

    /// The assignment of a witness: the three products, the witness and the recorded densities.
    pub fn assignment(
        &self,
        (inputs, aux): Values,
        circuit: usize,
    ) -> Result<Assignment, EngineError> {
        self.check_witness(&inputs, &aux, circuit)?;
        let (a, (b, cv)) = rayon::join(
            || self.product(0, &inputs, &aux),
            || {
                rayon::join(
                    || self.product(1, &inputs, &aux),
                    || self.product(2, &inputs, &aux),
                )
            },
        );
        let [a_aux_density, b_input_density, b_aux_density] = self.densities();
        Ok(Assignment {
            a,
            b,
            c: cv,
            inputs,
            aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
            deferred: None,
        })
    }

    /// The assignment of a witness with its products left to the backend
    /// ([`Assignment::deferred`]): no matrix–vector product on the CPU here.
    pub fn deferred(
        self: &Arc<Self>,
        (inputs, aux): Values,
        circuit: usize,
    ) -> Result<Assignment, EngineError> {
        self.check_witness(&inputs, &aux, circuit)?;
        let [a_aux_density, b_input_density, b_aux_density] = self.densities();
        Ok(Assignment {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            inputs,
            aux,
            a_aux_density,
            b_input_density,
            b_aux_density,
            deferred: Some(Deferred(self.clone())),
        })
    }

    pub(crate) fn check_witness(
        &self,
        inputs: &[Scalar],
        aux: &[Scalar],
        circuit: usize,
    ) -> Result<(), EngineError> {
        let c = self.counts();
        if inputs.len() != c.inputs || aux.len() != c.aux {
            return Err(EngineError::RecordingMismatch {
                circuit,
                what: format!(
                    "witness of {} inputs and {} aux for a recording of {} and {}",
                    inputs.len(),
                    aux.len(),
                    c.inputs,
                    c.aux
                ),
            });
        }
        Ok(())
    }

    /// `a`, `b`, `c` of a witness on the CPU, each zero-padded to `n` (≥ the recorded rows).
    pub fn products_padded(
        &self,
        inputs: &[Scalar],
        aux: &[Scalar],
        n: usize,
        circuit: usize,
    ) -> Result<[Vec<Scalar>; 3], EngineError> {
        self.check_witness(inputs, aux, circuit)?;
        let (a, (b, c)) = rayon::join(
            || self.product(0, inputs, aux),
            || {
                rayon::join(
                    || self.product(1, inputs, aux),
                    || self.product(2, inputs, aux),
                )
            },
        );
        let mut out = [a, b, c];
        for v in &mut out {
            v.resize(n.max(v.len()), Scalar::ZERO);
        }
        Ok(out)
    }
}
