//! Encoding and decoding of one curve point, G1 or G2, in the zcash/blst uncompressed form, and the
//! byte-level view of blstrs points (`repr(transparent)` over blst: Montgomery limbs, identity = 0).

use blst::{
    blst_p1_affine, blst_p1_affine_in_g1, blst_p1_deserialize, blst_p2_affine,
    blst_p2_affine_in_g2, blst_p2_deserialize, BLST_ERROR,
};
use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use crate::PointProblem;

const _: () =
    assert!(std::mem::size_of::<G1Affine>() == 96 && std::mem::align_of::<G1Affine>() == 8);
const _: () =
    assert!(std::mem::size_of::<G2Affine>() == 192 && std::mem::align_of::<G2Affine>() == 8);
const _: () = assert!(std::mem::size_of::<blst_p1_affine>() == 96);
const _: () = assert!(std::mem::size_of::<blst_p2_affine>() == 192);

/// A point type that a parameter file holds.
pub trait SrsPoint: Copy + Send + Sync + 'static {
    /// Bytes of the uncompressed encoding (and, as it happens, of the in-memory form).
    const ENCODED: usize;
    /// Decodes an uncompressed encoding; `subgroup` adds the prime-order subgroup check.
    fn decode(bytes: &[u8], subgroup: bool) -> Result<Self, PointProblem>;
    /// Writes the uncompressed encoding into `out` (`ENCODED` bytes).
    fn encode_into(&self, out: &mut [u8]);
    fn is_identity_point(&self) -> bool;
}

fn problem(err: BLST_ERROR) -> PointProblem {
    match err {
        BLST_ERROR::BLST_POINT_NOT_ON_CURVE => PointProblem::NotOnCurve,
        BLST_ERROR::BLST_POINT_NOT_IN_GROUP => PointProblem::NotInSubgroup,
        _ => PointProblem::BadEncoding,
    }
}

impl SrsPoint for G1Affine {
    const ENCODED: usize = 96;

    fn decode(bytes: &[u8], subgroup: bool) -> Result<Self, PointProblem> {
        if bytes[0] & 0x80 != 0 {
            return Err(PointProblem::CompressedFlag);
        }
        let mut raw = blst_p1_affine::default();
        // SAFETY: `bytes` holds at least 96 bytes (callers slice exactly ENCODED bytes).
        let err = unsafe { blst_p1_deserialize(&mut raw, bytes.as_ptr()) };
        if err != BLST_ERROR::BLST_SUCCESS {
            return Err(problem(err));
        }
        if subgroup && !unsafe { blst_p1_affine_in_g1(&raw) } {
            return Err(PointProblem::NotInSubgroup);
        }
        // SAFETY: G1Affine is repr(transparent) over blst_p1_affine.
        Ok(unsafe { std::mem::transmute::<blst_p1_affine, G1Affine>(raw) })
    }

    fn encode_into(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }

    fn is_identity_point(&self) -> bool {
        bool::from(self.is_identity())
    }
}

impl SrsPoint for G2Affine {
    const ENCODED: usize = 192;

    fn decode(bytes: &[u8], subgroup: bool) -> Result<Self, PointProblem> {
        if bytes[0] & 0x80 != 0 {
            return Err(PointProblem::CompressedFlag);
        }
        let mut raw = blst_p2_affine::default();
        // SAFETY: `bytes` holds at least 192 bytes.
        let err = unsafe { blst_p2_deserialize(&mut raw, bytes.as_ptr()) };
        if err != BLST_ERROR::BLST_SUCCESS {
            return Err(problem(err));
        }
        if subgroup && !unsafe { blst_p2_affine_in_g2(&raw) } {
            return Err(PointProblem::NotInSubgroup);
        }
        // SAFETY: G2Affine is repr(transparent) over blst_p2_affine.
        Ok(unsafe { std::mem::transmute::<blst_p2_affine, G2Affine>(raw) })
    }

    fn encode_into(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }

    fn is_identity_point(&self) -> bool {
        bool::from(self.is_identity())
    }
}

/// Reinterprets 8-byte-aligned bytes as in-memory points (Montgomery form, blst layout).
///
/// Returns `None` when the length is not a multiple of the point size or the alignment is off.
/// Safety of the result: every bit pattern is a structurally valid blst affine point; whether it is
/// on the curve is the caller's contract (the decode cache only ever holds decoded points).
pub fn cast_points<P: SrsPoint>(bytes: &[u8]) -> Option<&[P]> {
    let size = std::mem::size_of::<P>();
    if !bytes.len().is_multiple_of(size)
        || !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<P>())
    {
        return None;
    }
    // SAFETY: length and alignment checked; P is plain old data (arrays of u64 limbs).
    Some(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const P, bytes.len() / size) })
}

/// Mutable variant of [`cast_points`].
pub fn cast_points_mut<P: SrsPoint>(bytes: &mut [u8]) -> Option<&mut [P]> {
    let size = std::mem::size_of::<P>();
    if !bytes.len().is_multiple_of(size)
        || !(bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<P>())
    {
        return None;
    }
    // SAFETY: as above; the exclusive borrow of `bytes` moves to the result.
    Some(unsafe {
        std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut P, bytes.len() / size)
    })
}

/// The in-memory bytes of points (for writing the decode cache).
pub fn point_bytes<P: SrsPoint>(points: &[P]) -> &[u8] {
    // SAFETY: P is plain old data without padding.
    unsafe {
        std::slice::from_raw_parts(points.as_ptr() as *const u8, std::mem::size_of_val(points))
    }
}
