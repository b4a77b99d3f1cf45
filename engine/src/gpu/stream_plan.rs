//! The streamed tier's plan: what a partition holds on the device at each of its steps when the
//! card's budget holds neither the SRS nor a whole partition (16–32 GiB cards at 32 GiB PoRep).
//!
//! The steps run one after another on the GPU's kernel stream, each with its own buffers, freed
//! before the next takes its own:
//!
//! 1. `h`: `a`, `b`, `c` (computed on the host from the recording, uploaded one at a time) and
//!    the domain's tables; the H step leaves H's coefficients in `b`, and `a`, `c` are freed;
//! 2. `msm_h`: H's coefficients and the `h` bases streamed in chunks (two chunk buffers: the copy
//!    stream fills one while the kernels read the other);
//! 3. `l`, `a`, `b_g1`, `b_g2`: each query's tail scalars and one-bitmap (uploaded just before
//!    its MSM, freed after), its bases streamed the same way; `b`'s scalars serve `b_g1` and
//!    `b_g2`.
//!
//! Every figure here is computed, never measured by allocating: the dispatcher reserves
//! [`StreamPlan::peak`] before the partition starts, and `tests` check the plan at 2^27 sizes.

use super::msm::MsmPlan;
use super::points::Curve;

const FR: u64 = 32;
const G1: u64 = 96;
const G2: u64 = 192;
/// Beside each step's buffers: window sums, batch-addition partials and folds, and the
/// allocator's rounding.
pub const SLACK: u64 = 256 << 20;
/// The smallest chunk of bases streamed (points).
pub const MIN_CHUNK: u64 = 1 << 16;

/// Counts that size a partition: domain `n`, aux variables, dense A and dense B entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartDims {
    pub n: u64,
    pub aux: u64,
    pub a: u64,
    pub b: u64,
}

/// One step of the streamed tier and the device bytes live while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub bytes: u64,
}

/// How a partition runs in the streamed tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTier {
    /// G1 bases per streamed chunk (a multiple of 64, so a chunk's one-bitmap starts on a word).
    pub chunk: u64,
    /// G2 bases per streamed chunk (half of `chunk`: the same bytes).
    pub chunk_g2: u64,
    /// The bases are resident on the device (reserved with them, their MSM scratch too): nothing
    /// is streamed but the partition's own data.
    pub resident_bases: bool,
    /// The host bases are page-locked (registered by the caller's HostPinner): chunks are copied
    /// straight from them, not through the backend's copy ring. Set by the pipeline, never by the
    /// plan.
    pub pinned_bases: bool,
}

/// The device bytes of one NTT domain's tables (twiddles `n/2`, the two coset power tables).
pub fn domain_bytes(n: u64) -> u64 {
    let log_n = n.max(2).ilog2();
    let lo_bits = super::h::LO_BITS.min(log_n);
    let tables = 2 * ((1u64 << lo_bits) + (1u64 << (log_n - lo_bits))) * FR;
    (n / 2).max(1) * FR + tables + FR
}

impl StreamTier {
    /// The steps in order with their live device bytes.
    pub fn phases(&self, d: &PartDims) -> Vec<Phase> {
        let dom = domain_bytes(d.n);
        let streamed = |points: u64, chunk: u64, curve: Curve| -> u64 {
            let affine = match curve {
                Curve::G1 => G1,
                Curve::G2 => G2,
            };
            if self.resident_bases {
                // The bases and the largest MSM's scratch are held by the resident reservation.
                0
            } else {
                let c = chunk.min(points.max(1));
                2 * c * affine + MsmPlan::new(c, curve).scratch_bytes()
            }
        };
        let query = |points: u64| points * FR + points.div_ceil(64) * 8;
        vec![
            Phase {
                name: "h",
                bytes: dom + 3 * d.n * FR + SLACK,
            },
            Phase {
                name: "msm_h",
                bytes: dom + d.n * FR + streamed(d.n - 1, self.chunk, Curve::G1) + SLACK,
            },
            Phase {
                name: "l",
                bytes: dom + query(d.aux) + streamed(d.aux, self.chunk, Curve::G1) + SLACK,
            },
            Phase {
                name: "a",
                bytes: dom + query(d.a) + streamed(d.a, self.chunk, Curve::G1) + SLACK,
            },
            Phase {
                name: "b_g1",
                bytes: dom + query(d.b) + streamed(d.b, self.chunk, Curve::G1) + SLACK,
            },
            Phase {
                name: "b_g2",
                bytes: dom + query(d.b) + streamed(d.b, self.chunk_g2, Curve::G2) + SLACK,
            },
        ]
    }

    /// The most device bytes live at once: what the partition reserves.
    pub fn peak(&self, d: &PartDims) -> u64 {
        self.phases(d).iter().map(|p| p.bytes).max().unwrap_or(0)
    }

    /// The streamed tier under `budget` bytes: with resident bases, the one plan (its peak is the
    /// H step or a query's scalars); else the largest power-of-two chunk (≥ [`MIN_CHUNK`]) that
    /// fits. `None` if even the smallest does not.
    pub fn plan(d: &PartDims, budget: u64, resident_bases: bool) -> Option<(StreamTier, u64)> {
        let most = d.n.max(d.aux).max(d.a).max(d.b).next_power_of_two();
        if resident_bases {
            let t = StreamTier {
                chunk: most,
                chunk_g2: most,
                resident_bases,
                pinned_bases: false,
            };
            let peak = t.peak(d);
            return (peak <= budget).then_some((t, peak));
        }
        let mut chunk = most.max(MIN_CHUNK);
        while chunk >= MIN_CHUNK {
            let t = StreamTier {
                chunk,
                chunk_g2: (chunk / 2).max(64),
                resident_bases,
                pinned_bases: false,
            };
            let peak = t.peak(d);
            if peak <= budget {
                return Some((t, peak));
            }
            chunk /= 2;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 GiB PoRep partition: 2^27 domain, 130,169,893 aux; the dense A and B counts of the
    /// production circuit are below the aux count (taken at the aux count here, the worst case).
    const PORE_32G: PartDims = PartDims {
        n: 1 << 27,
        aux: 130_169_893,
        a: 130_169_893,
        b: 130_169_893,
    };
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_32_gib_partition_fits_a_16_gib_card_with_the_h_step_as_its_peak() {
        let budget = 16 * GIB - (512 << 20);
        let (t, peak) = StreamTier::plan(&PORE_32G, budget, false).expect("fits 16 GiB");
        assert!(peak <= budget);
        assert!(
            t.chunk >= 1 << 22,
            "chunks of {} points are too small",
            t.chunk
        );
        assert_eq!(t.chunk % 64, 0);
        let phases = t.phases(&PORE_32G);
        let names: Vec<_> = phases.iter().map(|p| p.name).collect();
        assert_eq!(names, ["h", "msm_h", "l", "a", "b_g1", "b_g2"]);
        // The seed's shape: a, b, c (12 GiB) and the domain (2 GiB of twiddles) at the H step.
        assert_eq!(phases[0].bytes, domain_bytes(1 << 27) + 12 * GIB + SLACK);
        assert!(phases[0].bytes < 15 * GIB);
        for p in &phases {
            assert!(p.bytes <= budget, "{} needs {} bytes", p.name, p.bytes);
        }
    }

    #[test]
    fn a_larger_budget_streams_larger_chunks_and_a_smaller_one_is_refused() {
        let small = StreamTier::plan(&PORE_32G, 16 * GIB, false).unwrap().0;
        let large = StreamTier::plan(&PORE_32G, 32 * GIB, false).unwrap().0;
        assert!(large.chunk > small.chunk);
        // Below the H step's a, b, c and tables nothing fits.
        assert_eq!(StreamTier::plan(&PORE_32G, 12 * GIB, false), None);
    }

    #[test]
    fn resident_bases_leave_the_partition_its_own_data_only() {
        let (t, peak) = StreamTier::plan(&PORE_32G, 16 * GIB, true).unwrap();
        assert!(t.resident_bases);
        assert_eq!(peak, t.phases(&PORE_32G)[0].bytes, "the H step is the peak");
    }

    #[test]
    fn the_domain_tables_are_half_a_domain_of_twiddles_and_two_small_tables() {
        let b = domain_bytes(1 << 27);
        assert!(((1u64 << 26) * 32..(1u64 << 26) * 32 + (64 << 20)).contains(&b));
    }
}
