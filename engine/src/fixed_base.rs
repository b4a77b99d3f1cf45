//! Fixed-base multiplication in batches: `k_i · g` for many scalars `k_i` and one base `g`, by
//! byte windows over a precomputed table (`T[j][d] = d · 256^j · g`), so each product costs 32
//! mixed additions; results are normalised to affine in one batch per chunk.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

/// The group operations the table needs, for G1 and G2 alike.
pub trait FixedBaseGroup: Group<Scalar = Scalar> + Curve + Send + Sync
where
    Self::AffineRepr: PrimeCurveAffine + Send + Sync + Copy,
{
    fn add_affine(&mut self, p: &Self::AffineRepr);
}

impl FixedBaseGroup for G1Projective {
    fn add_affine(&mut self, p: &G1Affine) {
        *self += p;
    }
}

impl FixedBaseGroup for G2Projective {
    fn add_affine(&mut self, p: &G2Affine) {
        *self += p;
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
        G::batch_normalize(&proj, &mut table);
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
                G::batch_normalize(&proj, o);
            });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
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
        ]);
        let a1 = t1.mul_all(&ks);
        let a2 = t2.mul_all(&ks);
        for (i, k) in ks.iter().enumerate() {
            assert_eq!(a1[i], (g1 * k).to_affine());
            assert_eq!(a2[i], (g2 * k).to_affine());
        }
    }
}
