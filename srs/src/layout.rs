//! The layout of a Filecoin `.params` file, validated before anything is decoded.
//!
//! ```text
//! alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2
//! u32 n_ic | ic[n_ic] | u32 n_h | h[n_h] | u32 n_l | l[n_l]
//! u32 n_a | a[n_a] | u32 n_b1 | b_g1[n_b1] | u32 n_b2 | b_g2[n_b2]
//! ```
//! Counts are big-endian `u32`; G1 points are 96 bytes, G2 points 192 bytes, uncompressed.
//! [`Layout::parse`] walks the counts and checks that every section fits, `n_b1 == n_b2`,
//! `n_h + 1` is a power of two and nothing trails; no point is touched before it passes.

use std::path::Path;

use crate::SrsError;

pub const G1_BYTES: u64 = 96;
pub const G2_BYTES: u64 = 192;

/// One point section of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub name: &'static str,
    /// Byte offset of the first point.
    pub offset: u64,
    pub count: u64,
    /// Bytes per encoded point (96 or 192).
    pub point_bytes: u64,
}

impl Section {
    pub fn end(&self) -> u64 {
        self.offset + self.count * self.point_bytes
    }
    pub fn byte_len(&self) -> u64 {
        self.count * self.point_bytes
    }
}

/// Where everything is in a parameter file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub file_len: u64,
    /// The six verifying-key points, in file order.
    pub vk_points: [Section; 6],
    pub ic: Section,
    pub h: Section,
    pub l: Section,
    pub a: Section,
    pub b_g1: Section,
    pub b_g2: Section,
}

impl Layout {
    /// Bytes `[0, vk_end)` hold the verifying key (including `ic`).
    pub fn vk_end(&self) -> u64 {
        self.ic.end()
    }

    /// The five proving sections in file order.
    pub fn proving_sections(&self) -> [Section; 5] {
        [self.h, self.l, self.a, self.b_g1, self.b_g2]
    }

    /// Walks the file's counts and checks that every section fits, that `n_b1 == n_b2`, that
    /// `n_h + 1` is a power of two, and that nothing trails the last section.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Layout, SrsError> {
        let file_len = bytes.len() as u64;
        let mut pos = 0u64;
        let fixed =
            |name: &'static str, point_bytes: u64, pos: &mut u64| -> Result<Section, SrsError> {
                let s = Section {
                    name,
                    offset: *pos,
                    count: 1,
                    point_bytes,
                };
                if s.end() > file_len {
                    return Err(SrsError::Truncated {
                        path: path.into(),
                        section: name,
                        needed: s.end(),
                        file_len,
                    });
                }
                *pos = s.end();
                Ok(s)
            };
        let vk_points = [
            fixed("alpha_g1", G1_BYTES, &mut pos)?,
            fixed("beta_g1", G1_BYTES, &mut pos)?,
            fixed("beta_g2", G2_BYTES, &mut pos)?,
            fixed("gamma_g2", G2_BYTES, &mut pos)?,
            fixed("delta_g1", G1_BYTES, &mut pos)?,
            fixed("delta_g2", G2_BYTES, &mut pos)?,
        ];
        let mut counted = |name: &'static str, point_bytes: u64| -> Result<Section, SrsError> {
            let count_at = pos;
            if count_at + 4 > file_len {
                return Err(SrsError::Truncated {
                    path: path.into(),
                    section: name,
                    needed: count_at + 4,
                    file_len,
                });
            }
            let c = &bytes[count_at as usize..count_at as usize + 4];
            let count = u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64;
            let s = Section {
                name,
                offset: count_at + 4,
                count,
                point_bytes,
            };
            if s.end() > file_len {
                return Err(SrsError::CountPastEnd {
                    path: path.into(),
                    section: name,
                    offset: count_at,
                    count,
                    file_len,
                });
            }
            pos = s.end();
            Ok(s)
        };
        let ic = counted("ic", G1_BYTES)?;
        let h = counted("h", G1_BYTES)?;
        let l = counted("l", G1_BYTES)?;
        let a = counted("a", G1_BYTES)?;
        let b_g1 = counted("b_g1", G1_BYTES)?;
        let b_g2 = counted("b_g2", G2_BYTES)?;
        if pos != file_len {
            return Err(SrsError::TrailingBytes {
                path: path.into(),
                offset: pos,
                extra: file_len - pos,
            });
        }
        if ic.count == 0 {
            return Err(SrsError::Inconsistent {
                path: path.into(),
                what: format!(
                    "section `ic` at offset {} is empty; it holds at least the `one` input",
                    ic.offset - 4
                ),
            });
        }
        if b_g1.count != b_g2.count {
            return Err(SrsError::Inconsistent {
                path: path.into(),
                what: format!(
                    "n_b1 = {} (offset {}) differs from n_b2 = {} (offset {})",
                    b_g1.count,
                    b_g1.offset - 4,
                    b_g2.count,
                    b_g2.offset - 4
                ),
            });
        }
        if !(h.count + 1).is_power_of_two() {
            return Err(SrsError::Inconsistent {
                path: path.into(),
                what: format!(
                    "n_h = {} (offset {}): n_h + 1 must be a power of two (the domain size)",
                    h.count,
                    h.offset - 4
                ),
            });
        }
        Ok(Layout {
            file_len,
            vk_points,
            ic,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// The domain size `n` these parameters serve (`n_h + 1`).
    pub fn domain_size(&self) -> u64 {
        self.h.count + 1
    }
}
