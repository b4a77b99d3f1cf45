//! The folded equality constraint of the lean gadget (bellpepper's `MultiEq`), its combinations
//! built only inside `enforce`'s closures, so that witness-only synthesis never builds them.

use bellperson::{ConstraintSystem, LinearCombination};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::bit::Bit;
use super::word::Word;

/// bellpepper's `MultiEq`: equalities of sums, shifted into one constraint until the field's
/// capacity is reached. Each keeps what its combinations are made of (the operands' bits, the
/// result's variables); they are built in the constraint's closures.
#[derive(Default)]
pub(super) struct Folded {
    ops: usize,
    pub(super) bits_used: usize,
    /// Each equality's shift and number of operands, whose bits are in `operands`.
    lhs: Vec<(usize, usize)>,
    operands: Vec<[Bit; 32]>,
    /// Each equality's shift and width, whose variables are in `results`.
    rhs: Vec<(usize, usize)>,
    results: Vec<Bit>,
}

impl Folded {
    pub(super) fn equal<CS: ConstraintSystem<Scalar>>(
        &mut self,
        cs: &mut CS,
        num_bits: usize,
        operands: &[&Word],
        result: &[Bit],
    ) {
        if Scalar::CAPACITY as usize <= self.bits_used + num_bits {
            self.flush(cs);
        }
        self.lhs.push((self.bits_used, operands.len()));
        self.operands.extend(operands.iter().map(|w| w.bits));
        self.rhs.push((self.bits_used, result.len()));
        self.results.extend_from_slice(result);
        self.bits_used += num_bits;
    }

    pub(super) fn flush<CS: ConstraintSystem<Scalar>>(&mut self, cs: &mut CS) {
        let ops = self.ops;
        let one = CS::one();
        let (lhs, operands, rhs, results) = (&self.lhs, &self.operands, &self.rhs, &self.results);
        cs.enforce(
            || format!("multieq {ops}"),
            |_| {
                let mut words = operands.iter();
                lhs.iter()
                    .fold(LinearCombination::zero(), |acc, &(shift, n)| {
                        let mut lc = LinearCombination::zero();
                        for w in words.by_ref().take(n) {
                            let mut coeff = Scalar::ONE;
                            for bit in w {
                                lc = lc + &bit.lc(one, coeff);
                                coeff = coeff.double();
                            }
                        }
                        acc + (shift_of(shift), &lc)
                    })
            },
            |lc| lc + one,
            |_| {
                let mut vars = results.iter();
                rhs.iter()
                    .fold(LinearCombination::zero(), |acc, &(shift, n)| {
                        let mut lc = LinearCombination::zero();
                        let mut coeff = Scalar::ONE;
                        for v in vars.by_ref().take(n) {
                            lc = lc + (coeff, v.var());
                            coeff = coeff.double();
                        }
                        acc + (shift_of(shift), &lc)
                    })
            },
        );
        self.lhs.clear();
        self.operands.clear();
        self.rhs.clear();
        self.results.clear();
        self.bits_used = 0;
        self.ops += 1;
    }
}

fn shift_of(bits: usize) -> Scalar {
    Scalar::from(2u64).pow_vartime([bits as u64])
}
