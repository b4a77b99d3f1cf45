//! How many device bytes a partition reserves, per tier.
//!
//! - `Full`: a, b, c and every MSM's scalars on the device at once, plus the bases unless the SRS
//!   is resident.
//! - `Chunked`: the small-memory tier of the plain `GpuBackend` (and the CPU) for partitions
//!   larger than the whole budget: a, b, c staged in halves (two of the three polynomials' worth
//!   at once), bases streamed through two double-buffered chunks of `chunk` points.
//! - `Streamed`: `PipelinedGpu`'s tier for cards that hold neither the SRS nor a whole partition
//!   beside it (16–32 GiB at 32 GiB PoRep): the steps one after another, each MSM's bases
//!   streamed in chunks, or read where they are resident; its bytes are the backend's own plan
//!   (`cuzk_engine::gpu::stream_plan`).
//!
//! [`GpuPlan::of`] decides, from a GPU's whole budget, what stays resident and which tier its
//! partitions take.

use cuzk_engine::gpu::stream_plan::{PartDims, RecordingOnGpu, StreamTier};
use cuzk_srs::Srs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Full,
    Chunked { chunk: usize },
    Streamed(StreamTier),
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
    /// The partition's recording as the GPU would hold it (the streamed tier may keep it
    /// resident beside the bases); `None`: no recording, or not known here.
    pub recording: Option<RecordingOnGpu>,
}

impl Dims {
    pub fn of(srs: &Srs) -> Dims {
        Dims {
            n: srs.domain_size() as u64,
            aux: srs.l().len() as u64,
            a: srs.a().len() as u64,
            b: srs.b_g1().len() as u64,
            recording: None,
        }
    }
    /// The same dims for a partition with this recording.
    pub fn with_recording(self, recording: Option<RecordingOnGpu>) -> Dims {
        Dims { recording, ..self }
    }
    fn scalars(&self) -> u64 {
        (self.n + self.aux + self.a + self.b) * FR
    }
    /// Bytes of the SRS's proving bases.
    pub fn bases(&self) -> u64 {
        (self.n.saturating_sub(1) + self.aux + self.a + self.b) * G1 + self.b * G2
    }
    /// Device scratch of the largest MSM (sorted point indices, bucket counts and offsets, bucket
    /// and partial sums, as the CUDA backend plans them).
    pub fn msm_scratch(&self) -> u64 {
        let g1 = self
            .n
            .saturating_sub(1)
            .max(self.aux)
            .max(self.a)
            .max(self.b);
        msm_scratch(g1, self.b)
    }

    /// What a resident SRS holds on each GPU: its bases, and per compute worker (they run
    /// concurrently) the largest MSM's scratch plus 256 MiB for the folds, batch additions and
    /// window sums around it.
    pub fn resident(&self, workers: usize) -> u64 {
        self.bases() + workers.max(1) as u64 * (self.msm_scratch() + (256 << 20))
    }

    /// Host bytes of one synthesized, prepared partition (full synthesis: `a, b, c` and the
    /// assignment, then the MSM scalars beside them).
    pub fn host(&self) -> u64 {
        3 * self.n * FR + 2 * self.scalars()
    }
    /// Host bytes of one partition synthesized witness-only from a held recording, at its peak
    /// in `prepare`: the witness (inputs and aux), the three MSM scalar splits built from it at
    /// their exact sizes (`l`: aux; `a`, `b`: the variables dense in A and B, inputs included),
    /// the 0/1 masks, and the A and B density bitmaps of the witness; `a, b, c` are left to the
    /// backend. `tests/host_size.rs` measures the real peak against it.
    pub fn host_recorded(&self) -> u64 {
        let splits = (self.aux + self.a + self.b) * FR;
        let masks = (self.aux + self.a + self.b).div_ceil(8);
        self.host_witness() + splits + masks
    }
    /// Host bytes of one partition synthesized witness-only whose MSM scalar splits are left to
    /// the device (`ProveOptions::splits_on_device`): the witness and the A and B density
    /// bitmaps, and synthesis's own temporaries beside them (the circuit's values, the parallel
    /// pieces; measured at 2.4 % of the witness at 2 KiB, counted as 1/16 of it). A streamed
    /// partition's packed witness (`packed_witness.rs`, made after synthesis, at most 1/16 of
    /// the witness: `MAX_SHARE_DEN`) lies within the same 1/16.
    /// `tests/host_size.rs` measures the real peak against it.
    pub fn host_witness(&self) -> u64 {
        let densities = (2 * self.aux + self.a).div_ceil(8);
        self.aux * FR + densities + self.aux * FR / 16
    }
    /// Host bytes of one partition synthesized witness-only whose products are computed on the
    /// synthesis thread (`ProveOptions::products_on_host`, the streamed tier with its products on
    /// the host), at its peak: the witness, `a, b, c` (a domain each), and the `a` and `b`
    /// queries gathered beside them with the one-bitmaps (the aux becomes `l`'s tail in place).
    pub fn host_products(&self) -> u64 {
        let queries = (self.a + self.b) * FR + (self.aux + self.a + self.b).div_ceil(8);
        self.host_witness() + 3 * self.n * FR + queries
    }
    /// The same counts as the engine's streamed plan takes them.
    pub fn part(&self) -> PartDims {
        PartDims {
            n: self.n,
            aux: self.aux,
            a: self.a,
            b: self.b,
            recording: self.recording,
        }
    }

    /// Host bytes of one partition that takes the streamed tier, at its peak: its witness
    /// (`host_witness`) and, while it computes, one of `a, b, c` (built and uploaded one at a
    /// time where the products run on the host) or the queries' scalars beside the witness (its
    /// aux becomes `l`'s tail in place; `a` and `b` are gathered beside it, with the
    /// one-bitmaps).
    pub fn host_streamed(&self) -> u64 {
        let product = self.n * FR;
        let queries = (self.a + self.b) * FR + (self.aux + self.a + self.b).div_ceil(8);
        self.host_witness() + product.max(queries)
    }

    pub fn device(&self, tier: Tier, srs_resident: bool) -> u64 {
        match tier {
            Tier::Streamed(t) => t.peak(&self.part()),
            Tier::Full => {
                3 * self.n * FR
                    + self.scalars()
                    + if srs_resident {
                        0
                    } else {
                        self.bases() + self.msm_scratch()
                    }
            }
            Tier::Chunked { chunk } => {
                let c = chunk as u64;
                2 * self.n * FR
                    + self.scalars()
                    + if srs_resident {
                        0
                    } else {
                        2 * c * G2 + msm_scratch(c, c)
                    }
            }
        }
    }
}

/// Device scratch of the CUDA backend's largest MSM over `g1` G1 points or `g2` G2 points, as
/// the backend plans it.
pub use cuzk_engine::gpu::stream_plan::msm_scratch;

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
    let most = d.n.max(d.aux) as usize;
    let chunk = if srs_resident {
        most
    } else {
        // The largest chunk whose double buffer and MSM scratch fit (both grow with the chunk).
        let fits = |c: usize| d.device(Tier::Chunked { chunk: c }, false) <= capacity;
        let (mut lo, mut hi) = (0usize, most.max(1));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        lo
    };
    if chunk < 256.min(d.n as usize) || d.device(Tier::Chunked { chunk }, srs_resident) > capacity {
        return None;
    }
    let tier = Tier::Chunked { chunk };
    Some((tier, d.device(tier, srs_resident)))
}

/// How a GPU (`PipelinedGpu`) holds an SRS under its whole budget, and the tier its
/// partitions take. Chosen once per (SRS, budget), the first that fits:
/// 1. `Resident`: the bases and one MSM's scratch per worker resident, partitions whole
///    (`Tier::Full`) beside them — a large card;
/// 2. `ResidentBases`: the bases resident without the scratch, partitions streamed one at a time
///    over them (the scratch is counted in each step) — an 80 GB card at 32 GiB PoRep;
/// 3. `Streamed`: nothing resident, partitions streamed with their bases — 16–32 GiB cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuPlan {
    Resident,
    ResidentBases(StreamTier),
    Streamed(StreamTier),
}

impl GpuPlan {
    /// The plan under `capacity` bytes with `workers` compute workers on the GPU; `None` when
    /// not even the streamed tier's smallest chunk fits.
    pub fn of(d: &Dims, capacity: u64, workers: usize) -> Option<GpuPlan> {
        let resident = d.resident(workers);
        if resident <= capacity && d.device(Tier::Full, true) <= capacity - resident {
            return Some(GpuPlan::Resident);
        }
        let bases = d.bases();
        if bases <= capacity {
            if let Some((t, _)) = StreamTier::plan(&d.part(), capacity - bases, true) {
                return Some(GpuPlan::ResidentBases(t));
            }
        }
        StreamTier::plan(&d.part(), capacity, false).map(|(t, _)| GpuPlan::Streamed(t))
    }

    /// Device bytes the SRS holds resident under this plan.
    pub fn resident_bytes(&self, d: &Dims, workers: usize) -> u64 {
        match self {
            GpuPlan::Resident => d.resident(workers),
            GpuPlan::ResidentBases(_) => d.bases(),
            GpuPlan::Streamed(_) => 0,
        }
    }

    /// Whether the bases stay on the device.
    pub fn keeps_bases(&self) -> bool {
        !matches!(self, GpuPlan::Streamed(_))
    }

    /// The tier of a partition when `room` bytes are free beside the resident part now: the
    /// plan's own, or the streamed tier with smaller chunks while others hold memory; `None`:
    /// wait.
    pub fn tier(&self, d: &Dims, room: u64) -> Option<(Tier, u64)> {
        match self {
            GpuPlan::Resident => {
                let full = d.device(Tier::Full, true);
                (full <= room).then_some((Tier::Full, full))
            }
            GpuPlan::ResidentBases(_) => {
                StreamTier::plan(&d.part(), room, true).map(|(t, bytes)| (Tier::Streamed(t), bytes))
            }
            GpuPlan::Streamed(_) => StreamTier::plan(&d.part(), room, false)
                .map(|(t, bytes)| (Tier::Streamed(t), bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 GiB PoRep partition's counts (the dense A and B counts of cuzk's seeded setup).
    const PORE_32G: Dims = Dims {
        n: 1 << 27,
        aux: 130_169_893,
        a: 129_300_000,
        b: 33_200_000,
        recording: None,
    };
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_32_gib_porep_streams_on_16_24_and_32_gib_budgets_and_keeps_its_bases_on_an_80_gb_card() {
        for budget in [16 * GIB, 24 * GIB, 32 * GIB] {
            let cap = budget - (512 << 20);
            let plan = GpuPlan::of(&PORE_32G, cap, 1).expect("a plan");
            let GpuPlan::Streamed(t) = plan else {
                panic!("{budget}: {plan:?}")
            };
            let (tier, bytes) = plan.tier(&PORE_32G, cap).expect("a tier");
            assert_eq!(tier, Tier::Streamed(t));
            assert!(bytes <= cap, "{budget}: {bytes} > {cap}");
            assert_eq!(plan.resident_bytes(&PORE_32G, 1), 0);
        }
        // An H100 80GB: ~78 GiB usable.
        let cap = 78 * GIB;
        let plan = GpuPlan::of(&PORE_32G, cap, 1).unwrap();
        assert!(matches!(plan, GpuPlan::ResidentBases(_)), "{plan:?}");
        let resident = plan.resident_bytes(&PORE_32G, 1);
        let (_, bytes) = plan.tier(&PORE_32G, cap - resident).unwrap();
        assert!(resident + bytes <= cap);
        // An H200: ~139 GiB, everything resident.
        assert_eq!(
            GpuPlan::of(&PORE_32G, 139 * GIB, 1),
            Some(GpuPlan::Resident)
        );
        // Below the H step's a, b, c: nothing fits.
        assert_eq!(GpuPlan::of(&PORE_32G, 12 * GIB, 1), None);
    }

    #[test]
    fn on_an_80_gb_card_a_recorded_partition_keeps_its_matrices_beside_the_bases() {
        let cap = 78 * GIB;
        let rec = RecordingOnGpu {
            bytes: 9_560_000_000,
            resident: false,
        };
        let first = PORE_32G.with_recording(Some(rec));
        let plan = GpuPlan::of(&first, cap, 1).unwrap();
        assert!(matches!(plan, GpuPlan::ResidentBases(_)), "{plan:?}");
        let resident = plan.resident_bytes(&first, 1);
        let (Tier::Streamed(t), bytes) = plan.tier(&first, cap - resident).unwrap() else {
            panic!("a streamed tier")
        };
        assert!(t.resident_recording && t.resident_bases);
        assert!(resident + bytes <= cap);
        // Once resident, the recording is others' memory to the budget: the next partition
        // reserves only its own steps, and fits what the recording leaves.
        let next = PORE_32G.with_recording(Some(RecordingOnGpu {
            resident: true,
            ..rec
        }));
        let (Tier::Streamed(t2), bytes2) = plan.tier(&next, cap - resident - rec.bytes).unwrap()
        else {
            panic!("a streamed tier")
        };
        assert!(t2.resident_recording);
        assert_eq!(bytes2 + rec.bytes, bytes);
        // Cards that stream their bases hold it from 32 GiB on: below, the witness and a, b, c
        // do not fit beside it.
        for (gib, holds) in [(16, false), (24, false), (32, true)] {
            let p = GpuPlan::of(&first, gib * GIB, 1).unwrap();
            let (Tier::Streamed(t), bytes) = p.tier(&first, gib * GIB).unwrap() else {
                panic!("{gib} GiB: a streamed tier")
            };
            assert!(!t.resident_bases && bytes <= gib * GIB, "{gib} GiB");
            assert_eq!(t.resident_recording, holds, "{gib} GiB");
        }
    }

    #[test]
    fn while_others_hold_memory_a_streamed_partition_takes_smaller_chunks_or_waits() {
        let cap = 32 * GIB;
        let plan = GpuPlan::of(&PORE_32G, cap, 1).unwrap();
        let (Tier::Streamed(whole), _) = plan.tier(&PORE_32G, cap).unwrap() else {
            panic!()
        };
        let (Tier::Streamed(less), bytes) = plan.tier(&PORE_32G, 16 * GIB).unwrap() else {
            panic!()
        };
        assert!(less.chunk < whole.chunk && bytes <= 16 * GIB);
        assert_eq!(plan.tier(&PORE_32G, 10 * GIB), None);
    }

    #[test]
    fn tiers() {
        let d = Dims {
            n: 1 << 16,
            aux: 1 << 17,
            a: 1 << 16,
            b: 1 << 16,
            recording: None,
        };
        let full = d.device(Tier::Full, false);
        assert_eq!(choose(&d, full, false), Some((Tier::Full, full)));
        let (tier, bytes) = choose(&d, full / 2, false).unwrap();
        assert!(matches!(tier, Tier::Chunked { chunk } if chunk >= 256));
        assert!(bytes <= full / 2);
        assert_eq!(choose(&d, 1000, false), None);
        assert!(d.device(Tier::Full, true) < full);
    }
}
