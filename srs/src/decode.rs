//! Parallel decoding of point sections into the in-memory blst/blstrs layout. A failure reports
//! the lowest-indexed bad point, so the error is the same however the work was split.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::layout::Section;
use crate::point::SrsPoint;
use crate::{PointProblem, SrsError};

/// Proving-section points decoded by this process so far (the verifying key, decoded on every
/// open, is not counted). Tests use it to prove that a cache open decoded nothing.
static DECODED_POINTS: AtomicU64 = AtomicU64::new(0);

pub fn decoded_section_points_total() -> u64 {
    DECODED_POINTS.load(Ordering::Relaxed)
}

const CHUNK: usize = 1 << 14;

/// Decodes `section` of `file` into `out` (`out.len() == section.count`). On failure reports the
/// lowest-indexed bad point, so the error is the same however the work was split.
pub fn decode_section<P: SrsPoint>(
    path: &Path,
    file: &[u8],
    section: &Section,
    out: &mut [P],
    subgroup: bool,
) -> Result<(), SrsError> {
    debug_assert_eq!(out.len() as u64, section.count);
    let enc = P::ENCODED;
    let base = section.offset as usize;
    let first_bad = out
        .par_chunks_mut(CHUNK)
        .enumerate()
        .filter_map(|(chunk, points)| {
            for (k, slot) in points.iter_mut().enumerate() {
                let index = chunk * CHUNK + k;
                let at = base + index * enc;
                match P::decode(&file[at..at + enc], subgroup) {
                    Ok(p) if p.is_identity_point() => return Some((index, PointProblem::Infinity)),
                    Ok(p) => *slot = p,
                    Err(problem) => return Some((index, problem)),
                }
            }
            None
        })
        .min_by_key(|(index, _)| *index);
    DECODED_POINTS.fetch_add(section.count, Ordering::Relaxed);
    match first_bad {
        None => Ok(()),
        Some((index, problem)) => Err(SrsError::BadPoint {
            path: path.into(),
            section: section.name,
            index: index as u64,
            offset: (base + index * enc) as u64,
            problem,
        }),
    }
}

/// Decodes one point at `section.offset + index * size` (verifying-key points, `ic`).
pub fn decode_one<P: SrsPoint>(
    path: &Path,
    file: &[u8],
    section: &Section,
    index: u64,
    subgroup: bool,
    allow_identity: bool,
) -> Result<P, SrsError> {
    let at = section.offset + index * P::ENCODED as u64;
    let bad = |problem| SrsError::BadPoint {
        path: path.into(),
        section: section.name,
        index,
        offset: at,
        problem,
    };
    let p = P::decode(&file[at as usize..at as usize + P::ENCODED], subgroup).map_err(bad)?;
    if p.is_identity_point() && !allow_identity {
        return Err(bad(PointProblem::Infinity));
    }
    Ok(p)
}
