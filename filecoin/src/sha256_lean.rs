//! bellpepper's SHA-256 gadget with the same allocations, values and constraints, at a fraction
//! of its synthesis cost: the PoRep label is a 20-block SHA-256, most of a partition's
//! constraints.
//!
//! bellpepper's `UInt32::addmany` builds each sum's linear combinations at once (a small vector
//! per bit), and its `MultiEq` folds them into a running pair by cloning it and multiplying every
//! term by a power of two, on every addition. Witness-only synthesis never looks at those
//! combinations. Here an addition keeps its operand bits and result variables, and the folded
//! constraint is built from them inside `enforce`'s closures: by the same operations, so the
//! combination is the same when a system asks for it (a recording, a sampled row), and never
//! built when it does not.
//!
//! Everything else is bellpepper's own: `Boolean::{xor, sha256_ch, sha256_maj}` and
//! `AllocatedBit::alloc` allocate and constrain lazily already. The order of every allocation
//! and constraint (booleanity at once, a folded equality when the field's capacity is reached
//! and at the end of a block) is the gadget's; `tests` compare the two system for system.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256 of `input` (a whole number of bytes, big-endian bits), as bellpepper's
/// `gadgets::sha256::sha256` computes and constrains it.
pub fn sha256<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    input: &[Boolean],
) -> Result<Vec<Boolean>, SynthesisError> {
    if !input.len().is_multiple_of(8) {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut padded = input.to_vec();
    let len = padded.len() as u64;
    padded.push(Boolean::constant(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Boolean::constant(false));
    }
    padded.extend(
        (0..64)
            .rev()
            .map(|i| Boolean::constant((len >> i) & 1 == 1)),
    );
    let mut cur: Vec<Word> = IV.iter().map(|&v| Word::constant(v)).collect();
    for (i, block) in padded.chunks(512).enumerate() {
        cur = compress(cs.namespace(|| format!("block {i}")), block, &cur)?;
    }
    Ok(cur.into_iter().flat_map(Word::into_bits_be).collect())
}

/// A 32-bit word: bellpepper's `UInt32`, bits least significant first.
#[derive(Clone)]
struct Word {
    bits: Vec<Boolean>,
    value: Option<u32>,
}

impl Word {
    fn constant(v: u32) -> Word {
        Word {
            bits: (0..32)
                .map(|i| Boolean::constant((v >> i) & 1 == 1))
                .collect(),
            value: Some(v),
        }
    }

    fn from_bits_be(bits: &[Boolean]) -> Word {
        let value = bits
            .iter()
            .try_fold(0u32, |v, b| Some(v << 1 | b.get_value()? as u32));
        Word {
            bits: bits.iter().rev().cloned().collect(),
            value,
        }
    }

    fn into_bits_be(self) -> Vec<Boolean> {
        let mut bits = self.bits;
        bits.reverse();
        bits
    }

    fn rotr(&self, by: usize) -> Word {
        Word {
            bits: (0..32).map(|i| self.bits[(i + by) % 32].clone()).collect(),
            value: self.value.map(|v| v.rotate_right(by as u32)),
        }
    }

    fn shr(&self, by: usize) -> Word {
        Word {
            bits: (0..32)
                .map(|i| {
                    self.bits
                        .get(i + by)
                        .cloned()
                        .unwrap_or(Boolean::Constant(false))
                })
                .collect(),
            value: self.value.map(|v| v >> by),
        }
    }

    fn xor<CS: ConstraintSystem<Scalar>>(
        &self,
        mut cs: CS,
        other: &Word,
    ) -> Result<Word, SynthesisError> {
        let bits = (self.bits.iter().zip(&other.bits).enumerate())
            .map(|(i, (a, b))| Boolean::xor(cs.namespace(|| format!("xor of bit {i}")), a, b))
            .collect::<Result<_, _>>()?;
        Ok(Word {
            bits,
            value: self.value.zip(other.value).map(|(a, b)| a ^ b),
        })
    }

    /// `(a and b) xor (not a and c)`, bit by bit.
    fn ch<CS: ConstraintSystem<Scalar>>(
        mut cs: CS,
        a: &Word,
        b: &Word,
        c: &Word,
    ) -> Result<Word, SynthesisError> {
        let bits = (0..32)
            .map(|i| {
                let ns = cs.namespace(|| format!("ch {i}"));
                Boolean::sha256_ch(ns, &a.bits[i], &b.bits[i], &c.bits[i])
            })
            .collect::<Result<_, _>>()?;
        let value = match (a.value, b.value, c.value) {
            (Some(a), Some(b), Some(c)) => Some((a & b) ^ (!a & c)),
            _ => None,
        };
        Ok(Word { bits, value })
    }

    /// `(a and b) xor (a and c) xor (b and c)`, bit by bit.
    fn maj<CS: ConstraintSystem<Scalar>>(
        mut cs: CS,
        a: &Word,
        b: &Word,
        c: &Word,
    ) -> Result<Word, SynthesisError> {
        let bits = (0..32)
            .map(|i| {
                let ns = cs.namespace(|| format!("maj {i}"));
                Boolean::sha256_maj(ns, &a.bits[i], &b.bits[i], &c.bits[i])
            })
            .collect::<Result<_, _>>()?;
        let value = match (a.value, b.value, c.value) {
            (Some(a), Some(b), Some(c)) => Some((a & b) ^ (a & c) ^ (b & c)),
            _ => None,
        };
        Ok(Word { bits, value })
    }
}

/// The sum of 2 to 10 words mod 2^32 (`UInt32::addmany`): its result bits allocated at once, its
/// equality handed to `eq`, to be folded with others into one constraint.
fn addmany<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    eq: &mut Folded,
    operands: Vec<Word>,
) -> Result<Word, SynthesisError> {
    let sum = operands
        .iter()
        .try_fold(0u64, |s, w| Some(s + u64::from(w.value?)));
    if sum.is_some()
        && operands
            .iter()
            .all(|w| w.bits.iter().all(Boolean::is_constant))
    {
        return Ok(Word::constant(sum.unwrap_or(0) as u32));
    }
    let width = 64 - ((operands.len() as u64) * u64::from(u32::MAX)).leading_zeros() as usize;
    let mut bits = Vec::with_capacity(width);
    let mut vars = Vec::with_capacity(width);
    for i in 0..width {
        let b = AllocatedBit::alloc(
            cs.namespace(|| format!("result bit {i}")),
            sum.map(|v| (v >> i) & 1 == 1),
        )?;
        vars.push(b.get_variable());
        bits.push(Boolean::from(b));
    }
    eq.equal(&mut cs, width, operands, vars);
    bits.truncate(32);
    Ok(Word {
        bits,
        value: sum.map(|v| v as u32),
    })
}

/// bellpepper's `MultiEq`: equalities of sums, shifted into one constraint until the field's
/// capacity is reached. Each keeps what its combinations are made of; they are built in the
/// constraint's closures.
#[derive(Default)]
struct Folded {
    ops: usize,
    bits_used: usize,
    lhs: Vec<(usize, Vec<Word>)>,
    rhs: Vec<(usize, Vec<Variable>)>,
}

impl Folded {
    fn equal<CS: ConstraintSystem<Scalar>>(
        &mut self,
        cs: &mut CS,
        num_bits: usize,
        operands: Vec<Word>,
        result: Vec<Variable>,
    ) {
        if Scalar::CAPACITY as usize <= self.bits_used + num_bits {
            self.flush(cs);
        }
        self.lhs.push((self.bits_used, operands));
        self.rhs.push((self.bits_used, result));
        self.bits_used += num_bits;
    }

    fn flush<CS: ConstraintSystem<Scalar>>(&mut self, cs: &mut CS) {
        let (lhs, rhs) = (std::mem::take(&mut self.lhs), std::mem::take(&mut self.rhs));
        let ops = self.ops;
        let one = CS::one();
        cs.enforce(
            || format!("multieq {ops}"),
            move |_| {
                lhs.iter()
                    .fold(LinearCombination::zero(), |acc, (shift, operands)| {
                        let mut lc = LinearCombination::zero();
                        for w in operands {
                            let mut coeff = Scalar::ONE;
                            for bit in &w.bits {
                                lc = lc + &bit.lc(one, coeff);
                                coeff = coeff.double();
                            }
                        }
                        acc + (shift_of(*shift), &lc)
                    })
            },
            |lc| lc + one,
            move |_| {
                rhs.iter()
                    .fold(LinearCombination::zero(), |acc, (shift, vars)| {
                        let mut lc = LinearCombination::zero();
                        let mut coeff = Scalar::ONE;
                        for &v in vars {
                            lc = lc + (coeff, v);
                            coeff = coeff.double();
                        }
                        acc + (shift_of(*shift), &lc)
                    })
            },
        );
        self.bits_used = 0;
        self.ops += 1;
    }
}

fn shift_of(bits: usize) -> Scalar {
    Scalar::from(2u64).pow_vartime([bits as u64])
}

/// A round's `a` or `e`: a word, or a sum not taken yet (bellpepper folds the next addition in).
enum Maybe {
    Word(Word),
    Sum(Vec<Word>),
}

impl Maybe {
    fn compute<CS: ConstraintSystem<Scalar>>(
        self,
        cs: CS,
        eq: &mut Folded,
        others: &[Word],
    ) -> Result<Word, SynthesisError> {
        match self {
            Maybe::Word(w) => Ok(w),
            Maybe::Sum(mut v) => {
                v.extend(others.iter().cloned());
                addmany(cs, eq, v)
            }
        }
    }
}

/// One compression of a 512-bit block into `current`.
fn compress<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    input: &[Boolean],
    current: &[Word],
) -> Result<Vec<Word>, SynthesisError> {
    if input.len() != 512 || current.len() != 8 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut eq = Folded::default();
    let mut w: Vec<Word> = input.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let cs = &mut cs.namespace(|| format!("w extension {i}"));
        let s0 = w[i - 15].rotr(7);
        let s0 = s0.xor(cs.namespace(|| "first xor for s0"), &w[i - 15].rotr(18))?;
        let s0 = s0.xor(cs.namespace(|| "second xor for s0"), &w[i - 15].shr(3))?;
        let s1 = w[i - 2].rotr(17);
        let s1 = s1.xor(cs.namespace(|| "first xor for s1"), &w[i - 2].rotr(19))?;
        let s1 = s1.xor(cs.namespace(|| "second xor for s1"), &w[i - 2].shr(10))?;
        let ops = vec![w[i - 16].clone(), s0, w[i - 7].clone(), s1];
        let next = addmany(cs.namespace(|| "computation of w[i]"), &mut eq, ops)?;
        w.push(next);
    }

    let mut a = Maybe::Word(current[0].clone());
    let mut b = current[1].clone();
    let mut c = current[2].clone();
    let mut d = current[3].clone();
    let mut e = Maybe::Word(current[4].clone());
    let mut f = current[5].clone();
    let mut g = current[6].clone();
    let mut h = current[7].clone();
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let cs = &mut cs.namespace(|| format!("compression round {i}"));
        let new_e = e.compute(cs.namespace(|| "deferred e computation"), &mut eq, &[])?;
        let s1 = new_e.rotr(6);
        let s1 = s1.xor(cs.namespace(|| "first xor for s1"), &new_e.rotr(11))?;
        let s1 = s1.xor(cs.namespace(|| "second xor for s1"), &new_e.rotr(25))?;
        let ch = Word::ch(cs.namespace(|| "ch"), &new_e, &f, &g)?;
        let temp1 = vec![h, s1, ch, Word::constant(k), w[i].clone()];

        let new_a = a.compute(cs.namespace(|| "deferred a computation"), &mut eq, &[])?;
        let s0 = new_a.rotr(2);
        let s0 = s0.xor(cs.namespace(|| "first xor for s0"), &new_a.rotr(13))?;
        let s0 = s0.xor(cs.namespace(|| "second xor for s0"), &new_a.rotr(22))?;
        let maj = Word::maj(cs.namespace(|| "maj"), &new_a, &b, &c)?;

        h = g;
        g = f;
        f = new_e;
        e = Maybe::Sum(temp1.iter().cloned().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Maybe::Sum(temp1.into_iter().chain([s0, maj]).collect());
    }

    let h0 = a.compute(
        cs.namespace(|| "deferred h0 computation"),
        &mut eq,
        &current[0..1],
    )?;
    let h1 = add_into(&mut cs, &mut eq, current, 1, b)?;
    let h2 = add_into(&mut cs, &mut eq, current, 2, c)?;
    let h3 = add_into(&mut cs, &mut eq, current, 3, d)?;
    let h4 = e.compute(
        cs.namespace(|| "deferred h4 computation"),
        &mut eq,
        &current[4..5],
    )?;
    let h5 = add_into(&mut cs, &mut eq, current, 5, f)?;
    let h6 = add_into(&mut cs, &mut eq, current, 6, g)?;
    let h7 = add_into(&mut cs, &mut eq, current, 7, h)?;
    // MultiEq's drop: what is left folds into the block's last constraint.
    if eq.bits_used > 0 {
        eq.flush(&mut cs);
    }
    Ok(vec![h0, h1, h2, h3, h4, h5, h6, h7])
}

/// `current[i] + w`, the block's word `i` added into the hash value (`new h<i>`).
fn add_into<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    eq: &mut Folded,
    current: &[Word],
    i: usize,
    w: Word,
) -> Result<Word, SynthesisError> {
    addmany(
        cs.namespace(|| format!("new h{i}")),
        eq,
        vec![current[i].clone(), w],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::sha256::sha256 as gadget;
    use bellperson::Circuit;
    use cuzk_engine::recorded::record;
    use rand::{Rng, SeedableRng};

    /// `len` input bytes: random allocated bits, some negated, some constants; hashed by the lean
    /// gadget or bellpepper's.
    struct Hash {
        len: usize,
        seed: u64,
        lean: bool,
    }

    impl Circuit<Scalar> for Hash {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
            let mut bits = Vec::with_capacity(8 * self.len);
            for i in 0..8 * self.len {
                let v: bool = rng.gen();
                bits.push(match rng.gen_range(0..4) {
                    0 => Boolean::constant(v),
                    1 => Boolean::from(AllocatedBit::alloc(
                        cs.namespace(|| format!("in {i}")),
                        Some(v),
                    )?)
                    .not(),
                    _ => Boolean::from(AllocatedBit::alloc(
                        cs.namespace(|| format!("in {i}")),
                        Some(v),
                    )?),
                });
            }
            let out = if self.lean {
                sha256(cs.namespace(|| "sha256"), &bits)?
            } else {
                gadget(cs.namespace(|| "sha256"), &bits)?
            };
            // The digest made public, so that a wrong bit changes the inputs too.
            for (i, b) in out.iter().enumerate() {
                let v = b.get_value().ok_or(SynthesisError::AssignmentMissing)?;
                let input = cs.alloc_input(|| format!("out {i}"), || Ok(Scalar::from(v as u64)))?;
                cs.enforce(
                    || format!("out {i} is"),
                    |lc| lc + input,
                    |lc| lc + CS::one(),
                    |_| b.lc(CS::one(), Scalar::ONE),
                );
            }
            Ok(())
        }
    }

    #[test]
    fn the_lean_gadget_is_bellpeppers_system_and_witness() {
        // Lengths around the padding boundaries, one block and the PoRep label's 39 × 32 bytes.
        for (len, seed) in [
            (0, 1),
            (1, 2),
            (55, 3),
            (56, 4),
            (64, 5),
            (119, 6),
            (1248, 7),
        ] {
            let (theirs, tv) = record(
                Hash {
                    len,
                    seed,
                    lean: false,
                },
                true,
                0,
            )
            .unwrap();
            let (ours, ov) = record(
                Hash {
                    len,
                    seed,
                    lean: true,
                },
                true,
                0,
            )
            .unwrap();
            assert_eq!(
                theirs.first_difference(&ours),
                None,
                "{len} bytes: the systems differ"
            );
            let (ta, oa) = (
                theirs.assignment(tv.unwrap(), 0).unwrap(),
                ours.assignment(ov.unwrap(), 0).unwrap(),
            );
            assert!(ta == oa, "{len} bytes: the witnesses differ");
            assert!(oa.first_unsatisfied().is_none());
        }
    }

    #[test]
    fn the_digest_is_sha256() {
        use sha2::Digest;
        struct Bytes(Vec<u8>, Vec<bool>);
        impl Circuit<Scalar> for Bytes {
            fn synthesize<CS: ConstraintSystem<Scalar>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                let bits: Vec<Boolean> = (self.0.iter())
                    .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
                    .enumerate()
                    .map(|(i, v)| {
                        AllocatedBit::alloc(cs.namespace(|| format!("b{i}")), Some(v))
                            .map(Boolean::from)
                    })
                    .collect::<Result<_, _>>()?;
                let out = sha256(cs.namespace(|| "h"), &bits)?;
                let got: Vec<bool> = out.iter().map(|b| b.get_value().unwrap_or(false)).collect();
                if got != self.1 {
                    return Err(SynthesisError::Unsatisfiable);
                }
                Ok(())
            }
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for len in [0usize, 3, 64, 200] {
            let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let digest = sha2::Sha256::digest(&data);
            let want = digest
                .iter()
                .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
                .collect();
            record(Bytes(data, want), true, 0).unwrap();
        }
        // A wrong expectation is refused: the check above can fail.
        assert!(record(Bytes(vec![1], vec![false; 256]), true, 0).is_err());
    }
}
