//! Host-side point formats: XYZZ results from the device to blstrs projective points, and the
//! curve parameters (sizes, kernel names) shared by the MSM and batch-addition wrappers.

use blstrs::{Fp, Fp2, G1Projective, G2Projective};
use ff::Field;
use group::Group;

/// G1 or G2: sizes of the blst affine point (input) and of the device's XYZZ accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    G1,
    G2,
}

impl Curve {
    pub fn affine_bytes(self) -> usize {
        match self {
            Curve::G1 => 96,
            Curve::G2 => 192,
        }
    }
    pub fn xyzz_bytes(self) -> usize {
        2 * self.affine_bytes()
    }
    /// The kernel name for this curve: `base` + `_g1` / `_g2`.
    pub fn kernel(self, base: &str) -> String {
        match self {
            Curve::G1 => format!("{base}_g1"),
            Curve::G2 => format!("{base}_g2"),
        }
    }
}

fn fp(b: &[u8]) -> Fp {
    let mut l = [0u64; 6];
    for (i, limb) in l.iter_mut().enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8 * i..8 * i + 8]);
        *limb = u64::from_le_bytes(w);
    }
    Fp::from_raw_unchecked(l)
}

fn fp2(b: &[u8]) -> Fp2 {
    Fp2::new(fp(&b[..48]), fp(&b[48..96]))
}

/// (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ as Jacobian (X·ZZ·ZZZ², Y·ZZ³·ZZZ², ZZ·ZZZ):
/// no inversion needed, and ZZ = 0 (infinity) gives Z = 0.
fn jacobian<F: Field>(x: F, y: F, zz: F, zzz: F) -> Option<(F, F, F)> {
    if bool::from(zz.is_zero()) {
        return None;
    }
    let zzz2 = zzz.square();
    let z = zz * zzz;
    let x = x * zz * zzz2;
    let y = y * zz.square() * zz * zzz2;
    Some((x, y, z))
}

/// A G1 point from the device's 192-byte XYZZ form.
pub fn g1_from_xyzz(b: &[u8]) -> G1Projective {
    match jacobian(
        fp(&b[0..48]),
        fp(&b[48..96]),
        fp(&b[96..144]),
        fp(&b[144..192]),
    ) {
        None => G1Projective::identity(),
        Some((x, y, z)) => G1Projective::from_raw_unchecked(x, y, z),
    }
}

/// A G2 point from the device's 384-byte XYZZ form.
pub fn g2_from_xyzz(b: &[u8]) -> G2Projective {
    match jacobian(
        fp2(&b[0..96]),
        fp2(&b[96..192]),
        fp2(&b[192..288]),
        fp2(&b[288..384]),
    ) {
        None => G2Projective::identity(),
        Some((x, y, z)) => G2Projective::from_raw_unchecked(x, y, z),
    }
}
