//! Fixed-base multiplication in batches: `k_i · g` for many scalars `k_i` and one base `g`, by
//! byte windows over a precomputed table (`T[j][d] = d · 256^j · g`), so each product costs 32
//! mixed additions; results are normalised to affine in one batch per chunk (one inversion a
//! chunk, by Montgomery's trick: blstrs' `batch_normalize` inverts every point on its own).

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// The group operations the table needs, for G1 and G2 alike.
pub trait FixedBaseGroup: Group<Scalar = Scalar> + Curve + Send + Sync
where
    Self::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    fn add_affine(&mut self, p: &Self::AffineRepr);
    /// `out[i]` = `p[i]` in affine form, with one field inversion for the whole slice.
    fn to_affine_batch(p: &[Self], out: &mut [Self::AffineRepr]);
}

/// Jacobian (X, Y, Z) → affine (X/Z², Y/Z³) for every point, `None` for Z = 0, with one
/// inversion: the running products of the Z's, inverted once, walked back.
fn jacobian_to_affine<F: Field>(pts: &[(F, F, F)]) -> Vec<Option<(F, F)>> {
    let mut prefix = Vec::with_capacity(pts.len());
    let mut acc = F::ONE;
    for (_, _, z) in pts {
        prefix.push(acc);
        if !bool::from(z.is_zero()) {
            acc *= z;
        }
    }
    // acc is a product of non-zero values, so it has an inverse.
    let mut inv = Option::<F>::from(acc.invert()).unwrap_or(F::ZERO);
    let mut out = vec![None; pts.len()];
    for (i, (x, y, z)) in pts.iter().enumerate().rev() {
        if bool::from(z.is_zero()) {
            continue;
        }
        let zi = inv * prefix[i];
        inv *= z;
        let zi2 = zi.square();
        out[i] = Some((*x * zi2, *y * zi2 * zi));
    }
    out
}

impl FixedBaseGroup for G1Projective {
    fn add_affine(&mut self, p: &G1Affine) {
        *self += p;
    }
    fn to_affine_batch(p: &[Self], out: &mut [G1Affine]) {
        let pts: Vec<(Fp, Fp, Fp)> = p.iter().map(|q| (q.x(), q.y(), q.z())).collect();
        for (o, a) in out.iter_mut().zip(jacobian_to_affine(&pts)) {
            *o = a.map_or(G1Affine::identity(), |(x, y)| {
                G1Affine::from_raw_unchecked(x, y, false)
            });
        }
    }
}

impl FixedBaseGroup for G2Projective {
    fn add_affine(&mut self, p: &G2Affine) {
        *self += p;
    }
    fn to_affine_batch(p: &[Self], out: &mut [G2Affine]) {
        let pts: Vec<(Fp2, Fp2, Fp2)> = p.iter().map(|q| (q.x(), q.y(), q.z())).collect();
        for (o, a) in out.iter_mut().zip(jacobian_to_affine(&pts)) {
            *o = a.map_or(G2Affine::identity(), |(x, y)| {
                G2Affine::from_raw_unchecked(x, y, false)
            });
        }
    }
}

/// The window table of one base.
pub struct FixedBase<G: FixedBaseGroup>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    /// 32 windows × 256 entries; entry 0 of each window is unused (the identity).
    table: Vec<G::AffineRepr>,
}

impl<G: FixedBaseGroup> FixedBase<G>
where
    G::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    pub fn new(base: G) -> Self {
        let mut proj = vec![G::identity(); 32 * 256];
        let mut w = base;
        for j in 0..32 {
            let row = &mut proj[j * 256..(j + 1) * 256];
            for d in 1..256 {
                row[d] = row[d - 1] + w;
            }
            for _ in 0..8 {
                w = w.double();
            }
        }
        let mut table = vec![G::AffineRepr::identity(); 32 * 256];
        G::to_affine_batch(&proj, &mut table);
        FixedBase { table }
    }

    /// The table: 32 windows × 256 affine points, entry `j·256 + d` = `d · 256^j · g`.
    pub fn table(&self) -> &[G::AffineRepr] {
        &self.table
    }

    pub fn mul(&self, k: &Scalar) -> G {
        let bytes = k.to_bytes_le();
        let mut acc = G::identity();
        for (j, &d) in bytes.iter().enumerate() {
            if d != 0 {
                acc.add_affine(&self.table[j * 256 + d as usize]);
            }
        }
        acc
    }

    /// `k · g` for every `k`, in parallel, as affine points (identity for `k = 0`).
    pub fn mul_all(&self, ks: &[Scalar]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); ks.len()];
        out.par_chunks_mut(1024)
            .zip(ks.par_chunks(1024))
            .for_each(|(o, k)| {
                let proj: Vec<G> = k.iter().map(|k| self.mul(k)).collect();
                G::to_affine_batch(&proj, o);
            });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn matches_plain_multiplication() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let g1 = G1Projective::random(&mut rng);
        let g2 = G2Projective::random(&mut rng);
        let t1 = FixedBase::new(g1);
        let t2 = FixedBase::new(g2);
        let mut ks: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
        ks.extend([
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(255u64),
            Scalar::from(256u64),
            Scalar::ZERO,
        ]);
        // Zeros inside a batch (the identity, Z = 0) must not disturb their neighbours.
        ks.swap(3, 50);
        let a1 = t1.mul_all(&ks);
        let a2 = t2.mul_all(&ks);
        for (i, k) in ks.iter().enumerate() {
            assert_eq!(a1[i], (g1 * k).to_affine());
            assert_eq!(a2[i], (g2 * k).to_affine());
        }
    }
}
