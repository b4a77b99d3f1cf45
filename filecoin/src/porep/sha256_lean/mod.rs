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
//! Files: `bit.rs` (a bit and the bit operations), `word.rs` (a word, its operations and
//! `addmany`), `multieq.rs` (the folded constraint), this one (padding, the compression function
//! and the digest), `tests.rs`.
//!
//! One difference, in no circuit that runs: bellpepper keeps a value per bit, so when a word's
//! value is unknown (a bit of it without a value) an allocation whose bits do have values still
//! gets one here it does not; a system that asks for values then fails here with
//! `AssignmentMissing` where bellpepper fails with it later (its additions need the word value).

use bellperson::gadgets::boolean::Boolean;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;

mod bit;
mod multieq;
#[cfg(test)]
mod tests;
mod word;

use bit::{Bit, FALSE, TRUE};
use multieq::Folded;
use word::{addmany, Word};

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
