//! How many device bytes a partition reserves, per tier.
//!
//! - `Full`: a, b, c and every MSM's scalars on the device at once, plus the bases unless the SRS
//!   is resident.
//! - `Chunked`: the small-memory tier for partitions larger than the whole budget: a, b, c staged
//!   in halves (two of the three polynomials' worth at once), bases streamed through two
//!   double-buffered chunks of `chunk` points.

use cuzk_srs::Srs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Full,
    Chunked { chunk: usize },
}

const FR: u64 = 32;
const G1: u64 = 96;
const G2: u64 = 192;

/// Counts that size a partition.
#[derive(Debug, Clone, Copy)]
pub struct Dims {
    pub n: u64,
    pub aux: u64,
    pub a: u64,
    pub b: u64,
}

impl Dims {
    pub fn of(srs: &Srs) -> Dims {
        Dims { n: srs.domain_size() as u64, aux: srs.l().len() as u64, a: srs.a().len() as u64, b: srs.b_g1().len() as u64 }
    }
    fn scalars(&self) -> u64 {
        (self.n + self.aux + self.a + self.b) * FR
    }
    /// Bytes of the SRS's proving bases.
    pub fn bases(&self) -> u64 {
        (self.n.saturating_sub(1) + self.aux + self.a + self.b) * G1 + self.b * G2
    }
    /// Device scratch of the largest MSM (signed digits and their sorted indices, 4 bytes per
    /// point per 16-bit window, plus bucket sums). Compute is serialised per GPU, so a GPU needs
    /// this once, not per partition.
    pub fn msm_scratch(&self) -> u64 {
        let n = self.n.max(self.aux).max(self.a).max(self.b);
        2 * n * 16 * 4 + (256 << 20)
    }

    /// What a resident SRS holds on each GPU: its bases and one MSM's scratch.
    pub fn resident(&self) -> u64 {
        self.bases() + self.msm_scratch()
    }

    /// Host bytes of one synthesized, prepared partition.
    pub fn host(&self) -> u64 {
        3 * self.n * FR + 2 * self.scalars()
    }
    pub fn device(&self, tier: Tier, srs_resident: bool) -> u64 {
        match tier {
            Tier::Full => 3 * self.n * FR + self.scalars() + if srs_resident { 0 } else { self.bases() },
            Tier::Chunked { chunk } => 2 * self.n * FR + self.scalars() + if srs_resident { 0 } else { 2 * chunk as u64 * G2 },
        }
    }
}

/// The tier a partition takes under a budget of `capacity` bytes: `Full` if it could ever fit,
/// else `Chunked` with the largest chunk (≥ 256 points) that fits; `None` if nothing fits.
pub fn choose(d: &Dims, capacity: u64, srs_resident: bool) -> Option<(Tier, u64)> {
    let full = d.device(Tier::Full, srs_resident);
    if full <= capacity {
        return Some((Tier::Full, full));
    }
    let base = d.device(Tier::Chunked { chunk: 0 }, srs_resident);
    if base >= capacity {
        return None;
    }
    let chunk = if srs_resident { d.n.max(d.aux) as usize } else { ((capacity - base) / (2 * G2)) as usize };
    if chunk < 256.min(d.n as usize) {
        return None;
    }
    let tier = Tier::Chunked { chunk };
    Some((tier, d.device(tier, srs_resident)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers() {
        let d = Dims { n: 1 << 16, aux: 1 << 17, a: 1 << 16, b: 1 << 16 };
        let full = d.device(Tier::Full, false);
        assert_eq!(choose(&d, full, false), Some((Tier::Full, full)));
        let (tier, bytes) = choose(&d, full / 2, false).unwrap();
        assert!(matches!(tier, Tier::Chunked { chunk } if chunk >= 256));
        assert!(bytes <= full / 2);
        assert_eq!(choose(&d, 1000, false), None);
        assert!(d.device(Tier::Full, true) < full);
    }
}
