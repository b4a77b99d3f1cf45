//! The streamed tier's plan: what a partition holds on the device at each of its steps when the
//! card's budget holds neither the SRS nor a whole partition (16–32 GiB cards at 32 GiB PoRep).
//!
//! The steps run one after another on the GPU's kernel stream, each with its own buffers, freed
//! before the next takes its own:
//!
//! 0. `products` (where it fits, `device_products`): the witness uploaded, and `a`, `b`, `c`
//!    computed from it on the device with the recording's matrices streamed in row pieces
//!    through two piece buffers; the witness is freed after (else `a, b, c` are computed on
//!    the host and uploaded one at a time);
//! 1. `h`: `a`, `b`, `c` and the domain's tables; the H step leaves H's coefficients in `b`,
//!    and `a`, `c` are freed;
//! 2. `msm_h`: H's coefficients and the `h` bases streamed in chunks (two chunk buffers: the copy
//!    stream fills one while the kernels read the other);
//! 3. `l`, `a`, `b_g1`, `b_g2`: each query's tail scalars and one-bitmap (uploaded just before
//!    its MSM, freed after), its bases streamed the same way; `b`'s scalars serve `b_g1` and
//!    `b_g2`.
//!
//! Every figure here is computed, never measured by allocating: the dispatcher reserves
//! [`StreamTier::peak`] before the partition starts, and `tests` check the plan at 2^27 sizes.

use super::msm::MsmPlan;
use super::points::Curve;

const FR: u64 = 32;
const G1: u64 = 96;
const G2: u64 = 192;
/// Beside each step's buffers: window sums, batch-addition partials and folds (a G2 batch
/// addition's partials are ~26 MB on a 132-SM card), and the allocator's rounding (2 MiB a buffer).
/// Small domains need less (`slack`).
pub const SLACK: u64 = 64 << 20;

/// [`SLACK`], or less for a small domain of `n`: its partials and sums scale with it.
pub fn slack(n: u64) -> u64 {
    SLACK.min((4 << 20) + 64 * n)
}
/// The smallest chunk of bases streamed (points).
pub const MIN_CHUNK: u64 = 1 << 16;
/// Entries (u64) per streamed piece of a recorded matrix, and rows per piece at most.
pub const PIECE_ENTRIES: u64 = 16 << 20;
pub const PIECE_ROWS: u64 = 16 << 20;

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
    /// `a, b, c` are computed on the device from the uploaded witness, the recording's matrices
    /// streamed in row pieces (`products`); else on the host.
    pub device_products: bool,
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

/// Device scratch of the CUDA backend's largest MSM over `g1` G1 points or `g2` G2 points (the
/// pipeline's budgets ask the backend for it rather than planning MSMs themselves).
pub fn msm_scratch(g1: u64, g2: u64) -> u64 {
    MsmPlan::new(g1, Curve::G1)
        .scratch_bytes()
        .max(MsmPlan::new(g2, Curve::G2).scratch_bytes())
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
                // The bases are held by the resident reservation; the MSM runs over all of them
                // at once, with its whole scratch.
                MsmPlan::new(points.max(1), curve).scratch_bytes()
            } else {
                let c = chunk.min(points.max(1));
                2 * c * affine + MsmPlan::new(c, curve).scratch_bytes()
            }
        };
        let query = |points: u64| points * FR + points.div_ceil(64) * 8;
        let slack = slack(d.n);
        let mut phases = Vec::with_capacity(7);
        if self.device_products {
            // The witness (inputs are few: counted with the aux as a page), a, b, c, and two
            // pieces of a matrix (row pointers and entries).
            let witness = (d.aux + 4096) * FR;
            let pieces = 2 * 8 * (PIECE_ENTRIES + PIECE_ROWS + 1);
            phases.push(Phase {
                name: "products",
                bytes: dom + witness + 3 * d.n * FR + pieces + slack,
            });
        }
        phases.extend([
            Phase {
                name: "h",
                bytes: dom + 3 * d.n * FR + slack,
            },
            Phase {
                name: "msm_h",
                bytes: dom + d.n * FR + streamed(d.n - 1, self.chunk, Curve::G1) + slack,
            },
            Phase {
                name: "l",
                bytes: dom + query(d.aux) + streamed(d.aux, self.chunk, Curve::G1) + slack,
            },
            Phase {
                name: "a",
                bytes: dom + query(d.a) + streamed(d.a, self.chunk, Curve::G1) + slack,
            },
            Phase {
                name: "b_g1",
                bytes: dom + query(d.b) + streamed(d.b, self.chunk, Curve::G1) + slack,
            },
            Phase {
                name: "b_g2",
                bytes: dom + query(d.b) + streamed(d.b, self.chunk_g2, Curve::G2) + slack,
            },
        ]);
        phases
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
        // Resident bases are read whole: one candidate. Streamed: the largest power-of-two
        // chunk that fits, down to MIN_CHUNK.
        let chunks: Vec<u64> = if resident_bases {
            vec![most]
        } else {
            std::iter::successors(Some(most.max(MIN_CHUNK)), |c| Some(c / 2))
                .take_while(|&c| c >= MIN_CHUNK)
                .collect()
        };
        // The products on the device where they fit (the host's take seconds a partition at
        // 32 GiB), with the largest chunk that fits beside them.
        for device_products in [true, false] {
            for &chunk in &chunks {
                let t = StreamTier {
                    chunk,
                    chunk_g2: if resident_bases {
                        most
                    } else {
                        (chunk / 2).max(64)
                    },
                    resident_bases,
                    device_products,
                    pinned_bases: false,
                };
                let peak = t.peak(d);
                if peak <= budget {
                    return Some((t, peak));
                }
            }
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
        assert!(
            !t.device_products,
            "a, b, c and the witness do not fit 16 GiB together"
        );
        assert_eq!(names, ["h", "msm_h", "l", "a", "b_g1", "b_g2"]);
        // The seed's shape: a, b, c (12 GiB) and the domain (2 GiB of twiddles) at the H step.
        assert_eq!(phases[0].bytes, domain_bytes(1 << 27) + 12 * GIB + SLACK);
        assert!(phases[0].bytes < 15 * GIB);
        for p in &phases {
            assert!(p.bytes <= budget, "{} needs {} bytes", p.name, p.bytes);
        }
    }

    #[test]
    fn from_24_gib_the_products_run_on_the_device_with_the_matrices_streamed() {
        for gib in [24, 32] {
            let (t, peak) = StreamTier::plan(&PORE_32G, gib * GIB, false).unwrap();
            assert!(t.device_products, "{gib} GiB");
            assert!(peak <= gib * GIB);
            assert_eq!(t.phases(&PORE_32G)[0].name, "products");
        }
    }

    #[test]
    fn a_larger_budget_streams_larger_chunks_and_a_smaller_one_is_refused() {
        let small = StreamTier::plan(&PORE_32G, 24 * GIB, false).unwrap().0;
        let large = StreamTier::plan(&PORE_32G, 40 * GIB, false).unwrap().0;
        assert!(small.device_products && large.device_products);
        assert!(large.chunk > small.chunk);
        // Below the H step's a, b, c and tables nothing fits.
        assert_eq!(StreamTier::plan(&PORE_32G, 12 * GIB, false), None);
    }

    #[test]
    fn resident_bases_leave_the_partition_its_data_and_one_whole_msms_scratch() {
        let (t, peak) = StreamTier::plan(&PORE_32G, 24 * GIB, true).unwrap();
        assert!(t.resident_bases);
        let phases = t.phases(&PORE_32G);
        let h_msm = MsmPlan::new((1 << 27) - 1, Curve::G1).scratch_bytes();
        assert!(t.device_products);
        assert_eq!(phases[2].name, "msm_h");
        assert_eq!(
            phases[2].bytes,
            domain_bytes(1 << 27) + (1u64 << 27) * 32 + h_msm + SLACK
        );
        assert_eq!(peak, phases.iter().map(|p| p.bytes).max().unwrap());
        assert!(StreamTier::plan(&PORE_32G, 12 * GIB, true).is_none());
    }

    #[test]
    fn the_domain_tables_are_half_a_domain_of_twiddles_and_two_small_tables() {
        let b = domain_bytes(1 << 27);
        assert!(((1u64 << 26) * 32..(1u64 << 26) * 32 + (64 << 20)).contains(&b));
    }
}
