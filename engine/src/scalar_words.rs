//! Zero and one tested on a scalar's Montgomery limbs read as plain words, at memory speed:
//! blstrs' `is_zero` and `==` are constant-time, ~10 ns a scalar against ~1.2 ns here (2^24
//! scalars, 2026-12-07). The host's passes over a 32 GiB partition's witness and tails (the
//! gather plans, the packed witness, the splits) read ~400 M scalars each. Zero is all-zero
//! limbs in Montgomery form, and one is R's limbs, so the answers are blstrs' own (tested).
//! Not constant-time: the prover's splits and densities branch on these values anyway.

use blstrs::Scalar;
use ff::Field;

// A scalar is blst's `blst_fr`: four u64 limbs, nothing else.
const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::align_of::<Scalar>() >= std::mem::align_of::<u64>());

fn limbs(s: &Scalar) -> &[u64; 4] {
    // SAFETY: `Scalar` is `repr(transparent)` over `blst_fr`, a `repr(C)` struct of `[u64; 4]`
    // (size and alignment asserted above).
    unsafe { &*(s as *const Scalar as *const [u64; 4]) }
}

/// `s == 0`.
#[inline]
pub fn is_zero(s: &Scalar) -> bool {
    let l = limbs(s);
    (l[0] | l[1] | l[2] | l[3]) == 0
}

/// `s == 1`.
#[inline]
pub fn is_one(s: &Scalar) -> bool {
    static ONE: Scalar = Scalar::ONE;
    limbs(s) == limbs(&ONE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zero_and_one_on_the_limbs_are_blstrs_own() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        let mut values = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)];
        values.extend((0..1000).map(|_| Scalar::random(&mut rng)));
        values.push(Scalar::ONE + Scalar::ONE - Scalar::ONE);
        values.push(Scalar::from(5u64) - Scalar::from(5u64));
        for v in &values {
            assert_eq!(is_zero(v), bool::from(v.is_zero()), "{v:?}");
            assert_eq!(is_one(v), *v == Scalar::ONE, "{v:?}");
        }
    }
}
