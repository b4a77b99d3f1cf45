//! The lean gadget against bellpepper's, system for system and witness for witness: whole
//! digests over inputs of every kind of bit, each bit operation on every kind of operand, and the
//! digest against SHA-256 itself.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::sha256::sha256 as gadget;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_engine::recorded::{record, witness};
use ff::Field;
use rand::{Rng, SeedableRng};

use super::bit::{and_bit, ch_bit, maj_bit, xor_bit, Bit};
use super::sha256;

/// How a test input's bits are made.
#[derive(Clone, Copy, Debug)]
enum Mix {
    /// Each bit a constant (1 in 4), negated allocated (1 in 4) or allocated.
    Bits,
    /// Each 32-bit word all constants, all negated, all allocated or of mixed bits.
    Words,
    /// Every bit a constant.
    Constants,
    /// Every bit an allocated bit, negated.
    Negated,
    /// Every bit allocated, except constants and negated bits around each block boundary.
    Boundaries,
}

/// `len` input bytes of random values, made as `mix` says; hashed by the lean gadget or
/// bellpepper's.
struct Hash {
    len: usize,
    seed: u64,
    mix: Mix,
    lean: bool,
}

impl Circuit<Scalar> for Hash {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        let mut bits = Vec::with_capacity(8 * self.len);
        let mut word_kind = 0;
        for i in 0..8 * self.len {
            let v: bool = rng.gen();
            if i % 32 == 0 {
                word_kind = rng.gen_range(0..4);
            }
            let kind = match self.mix {
                Mix::Bits => rng.gen_range(0..4),
                Mix::Words if word_kind == 3 => rng.gen_range(0..4),
                Mix::Words => word_kind,
                Mix::Constants => 0,
                Mix::Negated => 1,
                Mix::Boundaries => match i % 512 {
                    0..=3 | 508..=511 => rng.gen_range(0..2),
                    _ => 2,
                },
            };
            bits.push(match kind {
                0 => Boolean::constant(v),
                1 => Boolean::from(AllocatedBit::alloc(
                    cs.namespace(|| format!("in {i}")),
                    Some(!v),
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

/// The lean gadget records bellpepper's system (with and without values) and its witness,
/// and synthesizes that witness witness-only with every row sampled.
fn same(len: usize, seed: u64, mix: Mix) {
    let hash = |lean| Hash {
        len,
        seed,
        mix,
        lean,
    };
    let what = format!("{len} bytes, {mix:?}");
    let (theirs, tv) = record(hash(false), true, 0).unwrap();
    let (ours, ov) = record(hash(true), true, 0).unwrap();
    assert_eq!(
        theirs.first_difference(&ours),
        None,
        "{what}: the systems differ"
    );
    let (ours_bare, _) = record(hash(true), false, 0).unwrap();
    assert_eq!(
        theirs.first_difference(&ours_bare),
        None,
        "{what}: the systems differ without values"
    );
    let (tv, ov) = (tv.unwrap(), ov.unwrap());
    let w = witness(&theirs, hash(true), 0, 1, 0).unwrap();
    assert!(w == ov, "{what}: witness-only synthesis differs");
    let (ta, oa) = (
        theirs.assignment(tv, 0).unwrap(),
        ours.assignment(ov, 0).unwrap(),
    );
    assert!(ta == oa, "{what}: the witnesses differ");
    assert!(oa.first_unsatisfied().is_none());
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
        same(len, seed, Mix::Bits);
    }
}

#[test]
fn constants_negations_and_whole_words_fold_as_bellpeppers() {
    for (len, seed) in [(0, 11), (3, 12), (64, 13), (128, 14), (200, 15)] {
        for mix in [Mix::Words, Mix::Constants, Mix::Negated, Mix::Boundaries] {
            same(len, seed, mix);
        }
    }
    // Words of one kind meet in every combination over several blocks.
    for seed in 20..30 {
        same(64 * 3 + 7, seed, Mix::Words);
    }
}

/// One bit operation on three operands of the given kinds (0, 1: the constants; 2: an
/// allocated bit; 3: a negated one) and values, by bellpepper's `Boolean` or the lean
/// mirror, its result made public.
struct Op {
    op: usize,
    kinds: [usize; 3],
    values: [bool; 3],
    lean: bool,
}

impl Circuit<Scalar> for Op {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut ops = Vec::new();
        for (i, (&k, &v)) in self.kinds.iter().zip(&self.values).enumerate() {
            ops.push(match k {
                0 | 1 => Boolean::constant(k == 1),
                _ => {
                    let stored = if k == 3 { !v } else { v };
                    let b = AllocatedBit::alloc(cs.namespace(|| format!("in {i}")), Some(stored))?;
                    if k == 3 {
                        Boolean::from(b).not()
                    } else {
                        Boolean::from(b)
                    }
                }
            });
        }
        let [a, b, c] = self.values;
        let want = match self.op {
            0 => a ^ b,
            1 => a & b,
            2 => (a & b) ^ (!a & c),
            _ => (a & b) ^ (a & c) ^ (b & c),
        };
        let lc = if self.lean {
            let [x, y, z] = [0, 1, 2].map(|i| Bit::of(&ops[i]));
            let cs = &mut cs.namespace(|| "op");
            let out = match self.op {
                0 => xor_bit(cs, x, y, Some(want))?,
                1 => and_bit(cs, x, y, Some(want))?,
                2 => ch_bit(cs, x, y, z, Some(want))?,
                _ => maj_bit(cs, x, y, z, Some(want), Some(b & c))?,
            };
            out.lc(CS::one(), Scalar::ONE)
        } else {
            let cs = cs.namespace(|| "op");
            let [x, y, z] = [&ops[0], &ops[1], &ops[2]];
            let out = match self.op {
                0 => Boolean::xor(cs, x, y)?,
                1 => Boolean::and(cs, x, y)?,
                2 => Boolean::sha256_ch(cs, x, y, z)?,
                _ => Boolean::sha256_maj(cs, x, y, z)?,
            };
            out.lc(CS::one(), Scalar::ONE)
        };
        let input = cs.alloc_input(|| "out", || Ok(Scalar::from(want as u64)))?;
        cs.enforce(|| "out is", |lc| lc + input, |lc| lc + CS::one(), |_| lc);
        Ok(())
    }
}

#[test]
fn each_bit_operation_is_bellpeppers_on_every_kind_of_operand() {
    for op in 0..4 {
        for k in 0..64 {
            let kinds = [k % 4, k / 4 % 4, k / 16];
            for v in 0..8 {
                let values = [0, 1, 2].map(|i| match kinds[i] {
                    0 | 1 => kinds[i] == 1,
                    _ => v >> i & 1 == 1,
                });
                let make = |lean| Op {
                    op,
                    kinds,
                    values,
                    lean,
                };
                let what = format!("op {op}, kinds {kinds:?}, values {values:?}");
                let (theirs, tv) = record(make(false), true, 0).unwrap();
                let (ours, ov) = record(make(true), true, 0).unwrap();
                assert_eq!(theirs.first_difference(&ours), None, "{what}: systems");
                let (ta, oa) = (
                    theirs.assignment(tv.unwrap(), 0).unwrap(),
                    ours.assignment(ov.unwrap(), 0).unwrap(),
                );
                assert!(ta == oa, "{what}: witnesses");
                assert!(oa.first_unsatisfied().is_none(), "{what}: unsatisfied");
            }
        }
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
