//! The streamed tier's plan: what a partition holds on the device at each of its steps when the
//! card's budget holds neither the SRS nor a whole partition (16–32 GiB cards at 32 GiB PoRep).
//!
//! The steps run one after another on the GPU's kernel stream, each with its own buffers, freed
//! before the next takes its own:
//!
//! 0. `products` (where it fits, `device_products`): the witness uploaded, and `a`, `b`, `c`
//!    computed from it on the device with the recording's matrices streamed in row pieces
//!    through two piece buffers, one at a time around the H step so that two of them live at
//!    once (`streamed_products.rs`); the witness is freed after (else `a, b, c` are computed on
//!    the host and uploaded one at a time);
//! 1. `h`: `a`, `b`, `c` (or `a`, `c` and H's own buffer) and the domain's tables; the H step
//!    leaves H's coefficients in a buffer, and the others are freed;
//! 2. `msm_h`: H's coefficients and the `h` bases streamed in chunks (two chunk buffers: the copy
//!    stream fills one while the kernels read the other);
//! 3. `l`, `a`, `b_g1`, `b_g2`: each query's tail scalars and one-bitmap (uploaded just before
//!    its MSM, freed after), its bases streamed the same way; `b`'s scalars serve `b_g1` and
//!    `b_g2`. Where the query is gathered (`streamed_gather.rs`), only its nonzero tail scalars
//!    and a chunk's worth of set bits are uploaded, and two chunk buffers of its nonzero points'
//!    bases: within the bytes planned here.
//!
//! Where the recording's matrices fit beside everything else (`resident_recording`: an 80 GB card
//! beside the resident bases, or a 32 GiB one with the bases streamed, at 32 GiB PoRep), the
//! products come from the resident matrices, the witness stays through the H-MSM, and the three
//! queries' scalars are built from it on the device (`splits`), then freed one by one after their
//! MSMs: of the partition's own data only the witness crosses PCIe.
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
/// The smallest chunk of streamed bases beside a resident recording.
pub const MIN_RECORDING_CHUNK: u64 = 1 << 23;
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
    /// The partition's recording on this GPU, where it has one the plan may keep resident.
    pub recording: Option<RecordingOnGpu>,
}

/// A recording's matrices as a GPU would hold them resident (`spmv::DeviceRecording`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordingOnGpu {
    /// Device bytes of its matrices, table and query gathers (`Recording::device_bytes`).
    pub bytes: u64,
    /// Already resident on this GPU (held outside every reservation, as others' memory):
    /// a partition that uploads it reserves its bytes as well.
    pub resident: bool,
}

impl PartDims {
    /// Device bytes a partition that keeps the recording resident must reserve for it: its
    /// bytes if it is the one to upload them, else none.
    fn recording_upload(&self) -> u64 {
        match self.recording {
            Some(r) if !r.resident => r.bytes,
            _ => 0,
        }
    }
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
    /// The recording's matrices are kept resident on the device: `a, b, c` and the queries'
    /// scalars are computed there from the uploaded witness, the only data of the partition
    /// that crosses PCIe (beside the bases, where they are streamed).
    pub resident_recording: bool,
    /// The host bases are page-locked (registered by the caller's HostPinner): chunks are copied
    /// straight from them, not through the backend's copy ring. Set by the pipeline, never by the
    /// plan.
    pub pinned_bases: bool,
    /// The recording's host image is page-locked (registered by the caller's HostPinner): the
    /// streamed matrix pieces are copied straight from it, not through the copy ring. Set by the
    /// pipeline, never by the plan.
    pub pinned_recording: bool,
    /// Chunk slots of the H-MSM with the queries beside it (`streamed_overlap.rs`): the four
    /// queries' MSMs run in `chunk`-point pieces between the H-MSM's, through this many device
    /// slots of `chunk` bases and scalars, so that their bases cross PCIe while the H-MSM's
    /// kernels run. 0: the steps one after another. Used where the bases stream straight
    /// (`pinned_bases`) and each query's tail packs within [`OVERLAP_TAIL_DEN`]; else the steps
    /// run one after another within the same bytes.
    pub overlap_slots: u64,
}

/// Chunk slots of the overlapped step ([`StreamTier::overlap_slots`]). Each H-MSM chunk's kernels
/// run while the slots behind it fill: the queries' chunks per H-MSM chunk are
/// `(aux + a + 3 b) / n` (a G2 chunk has half the points), about 5 at 32 GiB PoRep, and two more
/// slots keep the next H-MSM chunk's copy ahead of its kernels.
pub const OVERLAP_SLOTS: u64 = 8;
/// The smallest chunk of the overlapped step: below it the H-MSM's pieces lose more to their
/// window sums than the overlap saves.
pub const MIN_OVERLAP_CHUNK: u64 = 1 << 21;
/// A query's tail joins the overlapped step only where at most 1 in this many of its scalars is
/// neither zero nor one (a PoRep tail's are ~1 %): its packed tail stays on the device whole,
/// planned at this bound.
pub const OVERLAP_TAIL_DEN: u64 = 32;

/// Device bytes of a query of `points` kept packed for the overlapped step: its nonzero bitmap,
/// word ranks and one-bitmap (20 bytes a 64-point word) and its tail values at the bound.
pub fn packed_query_bytes(points: u64) -> u64 {
    points.div_ceil(64) * 20 + points.div_ceil(OVERLAP_TAIL_DEN) * FR
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
    /// Whether the device uploads the partition's witness (its products on the device, or the
    /// recording resident): what `prepare` packs (`packed_witness.rs`).
    pub fn uploads_witness(&self) -> bool {
        self.device_products || self.resident_recording
    }

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
        let witness = (d.aux + 4096) * FR;
        if self.resident_recording {
            // The witness stays until the queries' scalars are built from it; they are freed
            // one by one after their MSMs (`b`'s after `b_g2`). The recording's upload, if this
            // partition makes it, stays beside every step.
            let up = d.recording_upload();
            let queries = [query(d.aux), query(d.a), query(d.b)];
            let phase = |name, bytes: u64| Phase {
                name,
                bytes: dom + bytes + slack + up,
            };
            return vec![
                phase("products", witness + 3 * d.n * FR),
                phase("h", witness + 3 * d.n * FR),
                phase(
                    "msm_h",
                    witness + d.n * FR + streamed(d.n - 1, self.chunk, Curve::G1),
                ),
                phase("splits", witness + queries.iter().sum::<u64>()),
                phase(
                    "l",
                    queries.iter().sum::<u64>() + streamed(d.aux, self.chunk, Curve::G1),
                ),
                phase(
                    "a",
                    queries[1] + queries[2] + streamed(d.a, self.chunk, Curve::G1),
                ),
                phase("b_g1", queries[2] + streamed(d.b, self.chunk, Curve::G1)),
                phase("b_g2", queries[2] + streamed(d.b, self.chunk_g2, Curve::G2)),
            ];
        }
        let mut phases = Vec::with_capacity(8);
        if self.device_products {
            // The witness (inputs are few: counted with the aux as a page), two of a, b, c at
            // once (`streamed_products.rs` makes them one at a time around the H step), two
            // pieces of a matrix (row pointers and entries), and one piece's rows of c where the
            // rows are checked.
            let pieces = 2 * 8 * (PIECE_ENTRIES + PIECE_ROWS + 1);
            let checked = PIECE_ROWS * FR;
            phases.push(Phase {
                name: "products",
                bytes: dom + witness + 2 * d.n * FR + pieces + checked + slack,
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
        ]);
        if self.overlap_slots > 0 && !self.resident_bases {
            // The H-MSM's scalars, the three queries packed (`b`'s serve b_g1 and b_g2), the
            // slots (a chunk of G1 bases, or half a chunk of G2, and a chunk of scalars each),
            // a chunk's zero words for the unpacking, and one chunk's MSM scratch at a time.
            let c = self.chunk.min(d.n.max(d.aux).max(d.a).max(d.b).max(1));
            let packed: u64 = [d.aux, d.a, d.b].map(packed_query_bytes).iter().sum();
            let slots = self.overlap_slots * c * (G1 + FR);
            let scratch = MsmPlan::new(c, Curve::G1)
                .scratch_bytes()
                .max(MsmPlan::new(c / 2, Curve::G2).scratch_bytes());
            phases.push(Phase {
                name: "msm_h_with_queries",
                bytes: dom + d.n * FR + packed + slots + c.div_ceil(64) * 8 + scratch + slack,
            });
        }
        phases.extend([
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

    /// The streamed tier under `budget` bytes: the recording resident where the partition has
    /// one and it fits (with streamed bases, only with chunks of at least
    /// [`MIN_RECORDING_CHUNK`]: smaller ones cost more than the matrices' PCIe time they save),
    /// else the products on the device, else on the host; resident bases have the one plan (its
    /// peak is the H step or a query's scalars), streamed ones the largest power-of-two chunk
    /// (≥ [`MIN_CHUNK`]) that fits. `None` if even the smallest does not.
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
        // The recording resident where it fits, else the products on the device where they fit
        // (the host's take seconds a partition at 32 GiB), with the largest chunk that fits
        // beside them.
        let modes = [(true, true), (false, true), (false, false)];
        for (resident_recording, device_products) in modes {
            if resident_recording && d.recording.is_none() {
                continue;
            }
            // With streamed bases and the queries' scalars from the host, the overlapped step
            // first (its slots take the largest chunk that fits), then the steps one after
            // another.
            let overlaps: &[u64] = if resident_bases || resident_recording {
                &[0]
            } else {
                &[OVERLAP_SLOTS, 0]
            };
            for &overlap_slots in overlaps {
                for &chunk in &chunks {
                    if resident_recording && !resident_bases && chunk < MIN_RECORDING_CHUNK {
                        break;
                    }
                    if overlap_slots > 0 && chunk < MIN_OVERLAP_CHUNK {
                        break;
                    }
                    let t = StreamTier {
                        chunk,
                        chunk_g2: if resident_bases {
                            most
                        } else {
                            (chunk / 2).max(64)
                        },
                        resident_bases,
                        device_products,
                        resident_recording,
                        pinned_bases: false,
                        pinned_recording: false,
                        overlap_slots,
                    };
                    let peak = t.peak(d);
                    if peak <= budget {
                        return Some((t, peak));
                    }
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
        recording: None,
    };
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_32_gib_partition_fits_a_16_gib_card_with_its_products_on_the_device() {
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
            t.device_products,
            "the witness and two of a, b, c fit 16 GiB together"
        );
        assert_eq!(
            names,
            [
                "products",
                "h",
                "msm_h",
                "msm_h_with_queries",
                "l",
                "a",
                "b_g1",
                "b_g2"
            ]
        );
        // The queries' MSMs run beside the H-MSM through eight slots of 2^23 points: the H-MSM's
        // scalars, the slots, the three queries packed at their bound, a chunk's zero words and
        // one chunk's MSM scratch.
        assert_eq!((t.overlap_slots, t.chunk), (OVERLAP_SLOTS, 1 << 23));
        let c = t.chunk;
        let scratch = MsmPlan::new(c, Curve::G1)
            .scratch_bytes()
            .max(MsmPlan::new(c / 2, Curve::G2).scratch_bytes());
        assert_eq!(
            phases[3].bytes,
            domain_bytes(1 << 27)
                + 4 * GIB
                + 3 * packed_query_bytes(PORE_32G.aux)
                + OVERLAP_SLOTS * c * 128
                + c / 8
                + scratch
                + SLACK
        );
        // The packed bound: 20 bytes a word of bitmaps and ranks, a 32nd of the tail's scalars.
        assert_eq!(
            packed_query_bytes(PORE_32G.aux),
            PORE_32G.aux.div_ceil(64) * 20 + PORE_32G.aux.div_ceil(32) * 32
        );
        // The products: the domain, the witness, two of a, b, c (8 GiB), the pieces and one
        // checked piece of c.
        let witness = (PORE_32G.aux + 4096) * 32;
        let pieces = 2 * 8 * (PIECE_ENTRIES + PIECE_ROWS + 1) + PIECE_ROWS * 32;
        assert_eq!(
            phases[0].bytes,
            domain_bytes(1 << 27) + witness + 8 * GIB + pieces + SLACK
        );
        // The seed's shape at the H step: three domains (12 GiB) and the domain's tables.
        assert_eq!(phases[1].bytes, domain_bytes(1 << 27) + 12 * GIB + SLACK);
        assert!(phases[1].bytes < 15 * GIB);
        for p in &phases {
            assert!(p.bytes <= budget, "{} needs {} bytes", p.name, p.bytes);
        }
        // Below that, a, b, c come from the host.
        let (t, _) = StreamTier::plan(&PORE_32G, phases[0].bytes - 1, false).unwrap();
        assert!(!t.device_products);
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
        let small = StreamTier::plan(&PORE_32G, 16 * GIB, false).unwrap().0;
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
    fn on_an_80_gb_card_the_recording_stays_beside_the_resident_bases_and_only_the_witness_moves() {
        // An H100 80GB (~78 GiB usable) holds the 32 GiB PoRep bases (45,179 MiB measured):
        // what is left must hold the recording (9.56 GB) and the partition's steps. The
        // production circuit's dense A and B counts (B is a quarter of the aux).
        let bases = 45_179u64 << 20;
        let budget = 78 * GIB - bases;
        let rec = RecordingOnGpu {
            bytes: 9_560_000_000,
            resident: false,
        };
        let porep = PartDims {
            a: 129_300_000,
            b: 33_200_000,
            ..PORE_32G
        };
        let first = PartDims {
            recording: Some(rec),
            ..porep
        };
        let (t, peak) = StreamTier::plan(&first, budget, true).expect("fits beside the bases");
        assert!(t.resident_recording && t.device_products && t.resident_bases);
        assert!(peak <= budget);
        let names: Vec<_> = t.phases(&first).iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            ["products", "h", "msm_h", "splits", "l", "a", "b_g1", "b_g2"]
        );
        // The first partition reserves the recording's upload; once resident, the next ones
        // reserve only their own steps, whose peak is the products (witness and a, b, c).
        let next = PartDims {
            recording: Some(RecordingOnGpu {
                resident: true,
                ..rec
            }),
            ..porep
        };
        let (t2, peak2) = StreamTier::plan(&next, budget, true).unwrap();
        assert!(t2.resident_recording);
        assert_eq!(peak, peak2 + rec.bytes);
        // The products hold the witness and a, b, c; the peak is an MSM's scratch beside the
        // scalars (the H-MSM's, or `l`'s with the three queries' scalars).
        let phases = t2.phases(&next);
        assert_eq!(phases[0].name, "products");
        assert_eq!(
            phases[0].bytes,
            domain_bytes(1 << 27) + (PORE_32G.aux + 4096) * 32 + 3 * (1u64 << 27) * 32 + SLACK
        );
        assert_eq!(peak2, phases.iter().map(|p| p.bytes).max().unwrap());
        // Where the recording does not fit beside the bases, the matrices stream as before.
        let streamed = StreamTier::plan(&porep, budget, true).unwrap().1;
        let (t3, _) = StreamTier::plan(&first, streamed, true).unwrap();
        assert!(!t3.resident_recording && t3.device_products);
        // Without a recording (full synthesis) it is never chosen.
        assert!(
            !StreamTier::plan(&porep, budget, true)
                .unwrap()
                .0
                .resident_recording
        );
    }

    #[test]
    fn a_32_gib_card_keeps_the_recording_resident_while_its_bases_stream_and_smaller_cards_do_not()
    {
        // The budget a 32 GiB card admits (less the engine's 512 MiB reserve).
        let rec = RecordingOnGpu {
            bytes: 9_560_000_000,
            resident: false,
        };
        let porep = PartDims {
            a: 129_300_000,
            b: 33_200_000,
            recording: Some(rec),
            ..PORE_32G
        };
        let budget = 32 * GIB - (512 << 20);
        let (t, peak) = StreamTier::plan(&porep, budget, false).expect("fits 32 GiB");
        assert!(t.resident_recording && t.device_products && !t.resident_bases);
        assert!(peak <= budget && t.chunk >= MIN_RECORDING_CHUNK);
        // Every step holds the recording's upload (this partition makes it) and the bases'
        // two chunk buffers where it streams them.
        let phases = t.phases(&porep);
        assert!(phases.iter().all(|p| p.bytes > rec.bytes));
        let msm_h = phases.iter().find(|p| p.name == "msm_h").unwrap();
        assert!(msm_h.bytes >= rec.bytes + 2 * t.chunk * 96 + (1u64 << 27) * 32);
        // Once resident, the next partitions reserve their steps only, with the same chunk.
        let next = PartDims {
            recording: Some(RecordingOnGpu {
                resident: true,
                ..rec
            }),
            ..porep
        };
        let (t2, peak2) = StreamTier::plan(&next, budget - rec.bytes, false).unwrap();
        assert!(t2.resident_recording);
        assert_eq!((t2.chunk, peak2 + rec.bytes), (t.chunk, peak));
        // 24 and 16 GiB cards stream the matrices: the witness and a, b, c beside the
        // recording's 9.56 GB do not fit them.
        for gib in [16, 24] {
            let (t, peak) = StreamTier::plan(&porep, gib * GIB - (512 << 20), false).unwrap();
            assert!(!t.resident_recording && t.device_products, "{gib} GiB");
            assert!(peak <= gib * GIB - (512 << 20));
        }
    }

    #[test]
    fn the_domain_tables_are_half_a_domain_of_twiddles_and_two_small_tables() {
        let b = domain_bytes(1 << 27);
        assert!(((1u64 << 26) * 32..(1u64 << 26) * 32 + (64 << 20)).contains(&b));
    }
}
