//! A 32-bit word of the lean gadget ([`Word`], bellpepper's `UInt32`: 32 [`Bit`]s and the word's
//! value), its SHA-256 operations (the sigmas, `ch`, `maj`) and `addmany`, whose equality goes to
//! the folded constraint of `multieq.rs`.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;

use super::bit::{alloc_bit, ch_bit, maj_bit, xor_bit, Bit, FALSE, TRUE};
use super::multieq::Folded;

/// Bit `i` of a word value.
#[inline(always)]
fn bit(v: Option<u32>, i: usize) -> Option<bool> {
    v.map(|v| (v >> i) & 1 == 1)
}

#[derive(Clone, Copy)]
pub(super) struct Word {
    pub(super) bits: [Bit; 32],
    pub(super) value: Option<u32>,
}

impl Word {
    pub(super) fn constant(v: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Bit::constant((v >> i) & 1 == 1)),
            value: Some(v),
        }
    }

    /// `UInt32::from_bits_be` of bits and their values.
    pub(super) fn from_bits_be(bits: &[(Bit, Option<bool>)]) -> Word {
        let value = bits
            .iter()
            .try_fold(0u32, |v, (_, b)| Some(v << 1 | (*b)? as u32));
        Word {
            bits: std::array::from_fn(|i| bits[31 - i].0),
            value,
        }
    }

    pub(super) fn is_constant(&self) -> bool {
        self.bits.iter().all(|b| b.is_constant())
    }

    /// `(self rotr r1) xor (self rotr r2) xor (self rotr r3)`, or `… xor (self shr r3)` with
    /// `shift`: `UInt32::{rotr, shr}` and two `UInt32::xor`s (in the namespaces `names`), without
    /// the rotated words.
    pub(super) fn sigma<CS: ConstraintSystem<Scalar>>(
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
    pub(super) fn ch<CS: ConstraintSystem<Scalar>>(
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
    pub(super) fn maj<CS: ConstraintSystem<Scalar>>(
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
pub(super) fn addmany<CS: ConstraintSystem<Scalar>>(
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
