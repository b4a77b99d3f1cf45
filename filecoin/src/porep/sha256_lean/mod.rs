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
//! The rest is bellpepper's logic on a lighter representation: a bit is one `u64` ([`Bit`], a
//! `Boolean` without its value), a word 32 of them in an array with its value as a `u32`
//! ([`Word`], `UInt32`), and every allocated bit's value is read from the word values (bellpepper
//! computes a word's value from the word values too; a bit's, from its operand bits': the same
//! numbers). `Boolean::{xor, and, sha256_ch, sha256_maj}` and `AllocatedBit::{alloc, xor, and,
//! and_not, nor}` are mirrored case for case: which operand bits are constants, allocated or
//! negated decides what is allocated and constrained, in which order and by which combinations
//! (the closures build them from the same terms in the same order). Namespaces are bellpepper's
//! too. The order of every allocation and constraint (booleanity at once, a folded equality when
//! the field's capacity is reached and at the end of a block) is the gadget's; `tests` compare
//! the two system for system.
//!
//! One difference, in no circuit that runs: bellpepper keeps a value per bit, so when a word's
//! value is unknown (a bit of it without a value) an allocation whose bits do have values still
//! gets one here it does not; a system that asks for values then fails here with
//! `AssignmentMissing` where bellpepper fails with it later (its additions need the word value).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
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
    let len = input.len() as u64;
    let mut padded: Vec<(Bit, Option<bool>)> = Vec::with_capacity(input.len() + 576);
    padded.extend(input.iter().map(|b| (Bit::of(b), b.get_value())));
    padded.push((TRUE, Some(true)));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push((FALSE, Some(false)));
    }
    padded.extend((0..64).rev().map(|i| {
        let v = (len >> i) & 1 == 1;
        (Bit::constant(v), Some(v))
    }));
    let words: Vec<Word> = padded.chunks(32).map(Word::from_bits_be).collect();
    let blocks = words.len() / 16;
    let mut cur = IV.map(Word::constant);
    // The last block's sums are allocated as `AllocatedBit`s: they are the digest.
    let mut digest: [Vec<Boolean>; 8] = Default::default();
    for (i, block) in words.chunks(16).enumerate() {
        let keep = (i + 1 == blocks).then_some(&mut digest);
        cur = compress(
            &mut cs.namespace(|| format!("block {i}")),
            block,
            &cur,
            keep,
        )?;
    }
    Ok(digest
        .into_iter()
        .flat_map(|bits| bits.into_iter().rev())
        .collect())
}

/// A bit, bellpepper's `Boolean` without its value, in one word: `0` and `1` the constants false
/// and true; otherwise bit 1 is set, bit 0 says `Not`, bit 2 an input variable, and the
/// variable's index is above. Negation is `^ 1` for all three kinds.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Bit(u64);

const FALSE: Bit = Bit(0);
const TRUE: Bit = Bit(1);

impl Bit {
    fn constant(v: bool) -> Bit {
        Bit(v as u64)
    }

    fn is(var: Variable) -> Bit {
        match var.get_unchecked() {
            Index::Aux(i) => Bit((i as u64) << 3 | 2),
            Index::Input(i) => Bit((i as u64) << 3 | 6),
        }
    }

    fn of(b: &Boolean) -> Bit {
        match b {
            Boolean::Constant(v) => Bit::constant(*v),
            Boolean::Is(v) => Bit::is(v.get_variable()),
            Boolean::Not(v) => Bit::is(v.get_variable()).not(),
        }
    }

    #[inline(always)]
    fn is_constant(self) -> bool {
        self.0 & 2 == 0
    }

    /// A `Not` (for an allocated bit).
    #[inline(always)]
    fn negated(self) -> bool {
        self.0 & 1 == 1
    }

    #[inline(always)]
    fn not(self) -> Bit {
        Bit(self.0 ^ 1)
    }

    /// The variable of an allocated bit.
    #[inline(always)]
    fn var(self) -> Variable {
        let i = (self.0 >> 3) as usize;
        Variable::new_unchecked(if self.0 & 4 == 0 {
            Index::Aux(i)
        } else {
            Index::Input(i)
        })
    }

    /// `Boolean::lc`.
    fn lc(self, one: Variable, coeff: Scalar) -> LinearCombination<Scalar> {
        if self.is_constant() {
            if self == TRUE {
                LinearCombination::zero() + (coeff, one)
            } else {
                LinearCombination::zero()
            }
        } else if self.negated() {
            LinearCombination::zero() + (coeff, one) - (coeff, self.var())
        } else {
            LinearCombination::zero() + (coeff, self.var())
        }
    }
}

const SCALARS: [Scalar; 2] = [Scalar::ZERO, Scalar::ONE];

/// An allocated bit's value, as bellpepper's closures give it.
#[inline(always)]
fn scalar(v: Option<bool>) -> Result<Scalar, SynthesisError> {
    match v {
        Some(b) => Ok(SCALARS[b as usize]),
        None => Err(SynthesisError::AssignmentMissing),
    }
}

/// Bit `i` of a word value.
#[inline(always)]
fn bit(v: Option<u32>, i: usize) -> Option<bool> {
    v.map(|v| (v >> i) & 1 == 1)
}

/// `AllocatedBit::alloc`.
#[inline(always)]
fn alloc_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    v: Option<bool>,
) -> Result<Variable, SynthesisError> {
    let var = cs.alloc(|| "boolean", || scalar(v))?;
    cs.enforce(
        || "boolean constraint",
        |lc| lc + CS::one() - var,
        |lc| lc + var,
        |lc| lc,
    );
    Ok(var)
}

/// `AllocatedBit::xor` of the variables of `a` and `b`, its value `v`.
#[inline(always)]
fn alloc_xor<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "xor result", || scalar(v))?;
    cs.enforce(
        || "xor constraint",
        |lc| lc + a.var() + a.var(),
        |lc| lc + b.var(),
        |lc| lc + a.var() + b.var() - r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::and`.
#[inline(always)]
fn alloc_and<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "and result", || scalar(v))?;
    cs.enforce(
        || "and constraint",
        |lc| lc + a.var(),
        |lc| lc + b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::and_not`: `a and not b`, of the variables.
#[inline(always)]
fn alloc_and_not<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "and not result", || scalar(v))?;
    cs.enforce(
        || "and not constraint",
        |lc| lc + a.var(),
        |lc| lc + CS::one() - b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::nor`.
#[inline(always)]
fn alloc_nor<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "nor result", || scalar(v))?;
    cs.enforce(
        || "nor constraint",
        |lc| lc + CS::one() - a.var(),
        |lc| lc + CS::one() - b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

fn not(v: Option<bool>) -> Option<bool> {
    v.map(|v| !v)
}

/// `Boolean::xor`; `v` is the value of `a xor b`.
#[inline(always)]
fn xor_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a == FALSE {
        return Ok(b);
    }
    if b == FALSE {
        return Ok(a);
    }
    if a == TRUE {
        return Ok(b.not());
    }
    if b == TRUE {
        return Ok(a.not());
    }
    match (a.negated(), b.negated()) {
        // a xor (not b) = not (a xor b), the `Is` operand first.
        (false, true) => Ok(alloc_xor(cs, a, b, not(v))?.not()),
        (true, false) => Ok(alloc_xor(cs, b, a, not(v))?.not()),
        // (not a) xor (not b) = a xor b.
        _ => alloc_xor(cs, a, b, v),
    }
}

/// `Boolean::and`; `v` is the value of `a and b`.
#[inline(always)]
fn and_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a == FALSE || b == FALSE {
        return Ok(FALSE);
    }
    if a == TRUE {
        return Ok(b);
    }
    if b == TRUE {
        return Ok(a);
    }
    match (a.negated(), b.negated()) {
        (false, true) => alloc_and_not(cs, a, b, v),
        (true, false) => alloc_and_not(cs, b, a, v),
        (true, true) => alloc_nor(cs, a, b, v),
        (false, false) => alloc_and(cs, a, b, v),
    }
}

/// `Boolean::sha256_ch`: `(a and b) xor (not a and c)`, its value `v`.
#[inline(always)]
fn ch_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    c: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a.is_constant() && b.is_constant() && c.is_constant() {
        let (a, b, c) = (a == TRUE, b == TRUE, c == TRUE);
        return Ok(Bit::constant((a & b) ^ (!a & c)));
    }
    if a == FALSE {
        return Ok(c);
    }
    if b == FALSE {
        return and_bit(cs, a.not(), c, v);
    }
    if c == FALSE {
        return and_bit(cs, a, b, v);
    }
    if c == TRUE {
        return Ok(and_bit(cs, a, b.not(), not(v))?.not());
    }
    if b == TRUE {
        return Ok(and_bit(cs, a.not(), c.not(), not(v))?.not());
    }
    // `a` true or allocated, `b` and `c` allocated.
    let ch = cs.alloc(|| "ch", || scalar(v))?;
    let one = CS::one();
    cs.enforce(
        || "ch computation",
        |_| b.lc(one, Scalar::ONE) - &c.lc(one, Scalar::ONE),
        |_| a.lc(one, Scalar::ONE),
        |lc| lc + ch - &c.lc(one, Scalar::ONE),
    );
    Ok(Bit::is(ch))
}

/// `Boolean::sha256_maj`: `(a and b) xor (a and c) xor (b and c)`, its value `v`; `bc` is the
/// value of `b and c`.
#[inline(always)]
fn maj_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    c: Bit,
    v: Option<bool>,
    bc: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a.is_constant() && b.is_constant() && c.is_constant() {
        let (a, b, c) = (a == TRUE, b == TRUE, c == TRUE);
        return Ok(Bit::constant((a & b) ^ (a & c) ^ (b & c)));
    }
    if a == FALSE {
        return and_bit(cs, b, c, v);
    }
    if b == FALSE {
        return and_bit(cs, a, c, v);
    }
    if c == FALSE {
        return and_bit(cs, a, b, v);
    }
    if c == TRUE {
        return Ok(and_bit(cs, a.not(), b.not(), not(v))?.not());
    }
    if b == TRUE {
        return Ok(and_bit(cs, a.not(), c.not(), not(v))?.not());
    }
    if a == TRUE {
        return Ok(and_bit(cs, b.not(), c.not(), not(v))?.not());
    }
    let maj = cs.alloc(|| "maj", || scalar(v))?;
    let bc = and_bit(&mut cs.namespace(|| "b and c"), b, c, bc)?;
    let one = CS::one();
    cs.enforce(
        || "maj computation",
        |_| {
            bc.lc(one, Scalar::ONE) + &bc.lc(one, Scalar::ONE)
                - &b.lc(one, Scalar::ONE)
                - &c.lc(one, Scalar::ONE)
        },
        |_| a.lc(one, Scalar::ONE),
        |_| bc.lc(one, Scalar::ONE) - maj,
    );
    Ok(Bit::is(maj))
}

/// A 32-bit word: bellpepper's `UInt32`, bits least significant first.
#[derive(Clone, Copy)]
struct Word {
    bits: [Bit; 32],
    value: Option<u32>,
}

impl Word {
    fn constant(v: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Bit::constant((v >> i) & 1 == 1)),
            value: Some(v),
        }
    }

    /// `UInt32::from_bits_be` of bits and their values.
    fn from_bits_be(bits: &[(Bit, Option<bool>)]) -> Word {
        let value = bits
            .iter()
            .try_fold(0u32, |v, (_, b)| Some(v << 1 | (*b)? as u32));
        Word {
            bits: std::array::from_fn(|i| bits[31 - i].0),
            value,
        }
    }

    fn is_constant(&self) -> bool {
        self.bits.iter().all(|b| b.is_constant())
    }

    /// `(self rotr r1) xor (self rotr r2) xor (self rotr r3)`, or `… xor (self shr r3)` with
    /// `shift`: `UInt32::{rotr, shr}` and two `UInt32::xor`s (in the namespaces `names`), without
    /// the rotated words.
    fn sigma<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        names: [&'static str; 2],
        (r1, r2, r3): (usize, usize, usize),
        shift: bool,
    ) -> Result<Word, SynthesisError> {
        let w = &self.bits;
        let first = self
            .value
            .map(|v| v.rotate_right(r1 as u32) ^ v.rotate_right(r2 as u32));
        let mut t = [FALSE; 32];
        {
            let mut cs = cs.namespace(|| names[0]);
            for (i, out) in t.iter_mut().enumerate() {
                let cs = &mut cs.namespace(|| format!("xor of bit {i}"));
                *out = xor_bit(cs, w[(i + r1) % 32], w[(i + r2) % 32], bit(first, i))?;
            }
        }
        let third = self.value.map(|v| match shift {
            true => v >> r3,
            false => v.rotate_right(r3 as u32),
        });
        let value = first.zip(third).map(|(a, b)| a ^ b);
        let mut bits = [FALSE; 32];
        let mut cs = cs.namespace(|| names[1]);
        for (i, out) in bits.iter_mut().enumerate() {
            let z = match shift {
                true => w.get(i + r3).copied().unwrap_or(FALSE),
                false => w[(i + r3) % 32],
            };
            let cs = &mut cs.namespace(|| format!("xor of bit {i}"));
            *out = xor_bit(cs, t[i], z, bit(value, i))?;
        }
        Ok(Word { bits, value })
    }

    /// `UInt32::sha256_ch`.
    fn ch<CS: ConstraintSystem<Scalar>>(
        mut cs: CS,
        a: &Word,
        b: &Word,
        c: &Word,
    ) -> Result<Word, SynthesisError> {
        let value = match (a.value, b.value, c.value) {
            (Some(a), Some(b), Some(c)) => Some((a & b) ^ (!a & c)),
            _ => None,
        };
        let mut bits = [FALSE; 32];
        for (i, out) in bits.iter_mut().enumerate() {
            let cs = &mut cs.namespace(|| format!("ch {i}"));
            *out = ch_bit(cs, a.bits[i], b.bits[i], c.bits[i], bit(value, i))?;
        }
        Ok(Word { bits, value })
    }

    /// `UInt32::sha256_maj`.
    fn maj<CS: ConstraintSystem<Scalar>>(
        mut cs: CS,
        a: &Word,
        b: &Word,
        c: &Word,
    ) -> Result<Word, SynthesisError> {
        let value = match (a.value, b.value, c.value) {
            (Some(a), Some(b), Some(c)) => Some((a & b) ^ (a & c) ^ (b & c)),
            _ => None,
        };
        let bc = b.value.zip(c.value).map(|(b, c)| b & c);
        let mut bits = [FALSE; 32];
        for (i, out) in bits.iter_mut().enumerate() {
            let cs = &mut cs.namespace(|| format!("maj {i}"));
            let (x, y, z) = (a.bits[i], b.bits[i], c.bits[i]);
            *out = maj_bit(cs, x, y, z, bit(value, i), bit(bc, i))?;
        }
        Ok(Word { bits, value })
    }
}

/// The sum of 2 to 10 words mod 2^32 (`UInt32::addmany`): its result bits allocated at once, its
/// equality handed to `eq`, to be folded with others into one constraint. With `digest`, the
/// result bits are `AllocatedBit`s (the same allocations and constraints), kept there.
fn addmany<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    eq: &mut Folded,
    operands: &[&Word],
    digest: Option<&mut Vec<Boolean>>,
) -> Result<Word, SynthesisError> {
    let sum = operands
        .iter()
        .try_fold(0u64, |s, w| Some(s + u64::from(w.value?)));
    if let Some(sum) = sum {
        if operands.iter().all(|w| w.is_constant()) {
            let w = Word::constant(sum as u32);
            if let Some(d) = digest {
                d.extend(w.bits.iter().map(|&b| Boolean::constant(b == TRUE)));
            }
            return Ok(w);
        }
    }
    let width = 64 - ((operands.len() as u64) * u64::from(u32::MAX)).leading_zeros() as usize;
    let mut vars = [FALSE; 36];
    match digest {
        None => {
            for (i, out) in vars[..width].iter_mut().enumerate() {
                let cs = &mut cs.namespace(|| format!("result bit {i}"));
                *out = Bit::is(alloc_bit(cs, sum.map(|v| (v >> i) & 1 == 1))?);
            }
        }
        Some(d) => {
            for (i, out) in vars[..width].iter_mut().enumerate() {
                let b = AllocatedBit::alloc(
                    cs.namespace(|| format!("result bit {i}")),
                    sum.map(|v| (v >> i) & 1 == 1),
                )?;
                *out = Bit::is(b.get_variable());
                if i < 32 {
                    d.push(Boolean::from(b));
                }
            }
        }
    }
    eq.equal(&mut cs, width, operands, &vars[..width]);
    Ok(Word {
        bits: std::array::from_fn(|i| vars[i]),
        value: sum.map(|v| v as u32),
    })
}

/// bellpepper's `MultiEq`: equalities of sums, shifted into one constraint until the field's
/// capacity is reached. Each keeps what its combinations are made of (the operands' bits, the
/// result's variables); they are built in the constraint's closures.
#[derive(Default)]
struct Folded {
    ops: usize,
    bits_used: usize,
    /// Each equality's shift and number of operands, whose bits are in `operands`.
    lhs: Vec<(usize, usize)>,
    operands: Vec<[Bit; 32]>,
    /// Each equality's shift and width, whose variables are in `results`.
    rhs: Vec<(usize, usize)>,
    results: Vec<Bit>,
}

impl Folded {
    fn equal<CS: ConstraintSystem<Scalar>>(
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

    fn flush<CS: ConstraintSystem<Scalar>>(&mut self, cs: &mut CS) {
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

/// One compression of a 512-bit block (16 words) into `current`; with `digest`, the result's
/// bits as `Boolean`s too (least significant first).
fn compress<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    input: &[Word],
    current: &[Word; 8],
    digest: Option<&mut [Vec<Boolean>; 8]>,
) -> Result<[Word; 8], SynthesisError> {
    if input.len() != 16 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut eq = Folded::default();
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(input);
    for i in 16..64 {
        let cs = &mut cs.namespace(|| format!("w extension {i}"));
        let names = ["first xor for s0", "second xor for s0"];
        let s0 = w[i - 15].sigma(cs, names, (7, 18, 3), true)?;
        let names = ["first xor for s1", "second xor for s1"];
        let s1 = w[i - 2].sigma(cs, names, (17, 19, 10), true)?;
        let ops = [&w[i - 16], &s0, &w[i - 7], &s1];
        w[i] = addmany(cs.namespace(|| "computation of w[i]"), &mut eq, &ops, None)?;
    }

    // bellpepper's `Maybe`: `a` and `e` are the words of `current` at first, then sums not
    // taken yet (each folds into the next addition): `e` of `temp1` and `d_e`, `a` of `temp1`,
    // `s0` and `maj`, all of the round before.
    let mut temp1 = [Word::constant(0); 5];
    let (mut d_e, mut s0, mut maj) = (temp1[0], temp1[0], temp1[0]);
    let [mut b, mut c, mut d, mut f, mut g, mut h] = [1, 2, 3, 5, 6, 7].map(|i| current[i]);
    for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
        let cs = &mut cs.namespace(|| format!("compression round {i}"));
        let t = &temp1;
        let new_e = {
            let cs = cs.namespace(|| "deferred e computation");
            match i {
                0 => current[4],
                _ => addmany(
                    cs,
                    &mut eq,
                    &[&t[0], &t[1], &t[2], &t[3], &t[4], &d_e],
                    None,
                )?,
            }
        };
        let names = ["first xor for s1", "second xor for s1"];
        let s1 = new_e.sigma(cs, names, (6, 11, 25), false)?;
        let ch = Word::ch(cs.namespace(|| "ch"), &new_e, &f, &g)?;

        let new_a = {
            let cs = cs.namespace(|| "deferred a computation");
            let ops = [&t[0], &t[1], &t[2], &t[3], &t[4], &s0, &maj];
            match i {
                0 => current[0],
                _ => addmany(cs, &mut eq, &ops, None)?,
            }
        };
        let names = ["first xor for s0", "second xor for s0"];
        s0 = new_a.sigma(cs, names, (2, 13, 22), false)?;
        maj = Word::maj(cs.namespace(|| "maj"), &new_a, &b, &c)?;

        // temp1 := h + S1 + ch + k[i] + w[i]; e := d + temp1; a := temp1 + S0 + maj.
        temp1 = [h, s1, ch, Word::constant(k), w[i]];
        d_e = d;
        h = g;
        g = f;
        f = new_e;
        d = c;
        c = b;
        b = new_a;
    }

    let mut kept: [Option<&mut Vec<Boolean>>; 8] = match digest {
        Some(d) => d.each_mut().map(Some),
        None => Default::default(),
    };
    let mut keep = |i: usize| kept[i].take();
    let t = &temp1;
    let h0 = addmany(
        cs.namespace(|| "deferred h0 computation"),
        &mut eq,
        &[&t[0], &t[1], &t[2], &t[3], &t[4], &s0, &maj, &current[0]],
        keep(0),
    )?;
    let h1 = add_into(cs, &mut eq, current, 1, &b, keep(1))?;
    let h2 = add_into(cs, &mut eq, current, 2, &c, keep(2))?;
    let h3 = add_into(cs, &mut eq, current, 3, &d, keep(3))?;
    let h4 = addmany(
        cs.namespace(|| "deferred h4 computation"),
        &mut eq,
        &[&t[0], &t[1], &t[2], &t[3], &t[4], &d_e, &current[4]],
        keep(4),
    )?;
    let h5 = add_into(cs, &mut eq, current, 5, &f, keep(5))?;
    let h6 = add_into(cs, &mut eq, current, 6, &g, keep(6))?;
    let h7 = add_into(cs, &mut eq, current, 7, &h, keep(7))?;
    // MultiEq's drop: what is left folds into the block's last constraint.
    if eq.bits_used > 0 {
        eq.flush(cs);
    }
    Ok([h0, h1, h2, h3, h4, h5, h6, h7])
}

/// `current[i] + w`, the block's word `i` added into the hash value (`new h<i>`).
fn add_into<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    eq: &mut Folded,
    current: &[Word; 8],
    i: usize,
    w: &Word,
    digest: Option<&mut Vec<Boolean>>,
) -> Result<Word, SynthesisError> {
    addmany(
        cs.namespace(|| format!("new h{i}")),
        eq,
        &[&current[i], w],
        digest,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::sha256::sha256 as gadget;
    use bellperson::Circuit;
    use cuzk_engine::recorded::{record, witness};
    use rand::{Rng, SeedableRng};

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
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
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
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let mut ops = Vec::new();
            for (i, (&k, &v)) in self.kinds.iter().zip(&self.values).enumerate() {
                ops.push(match k {
                    0 | 1 => Boolean::constant(k == 1),
                    _ => {
                        let stored = if k == 3 { !v } else { v };
                        let b =
                            AllocatedBit::alloc(cs.namespace(|| format!("in {i}")), Some(stored))?;
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
}
