//! Per-stage times of a proof, under the stage names the pipeline and the waterfall use.

use std::time::Instant;

/// Milliseconds spent in each stage (summed over the partitions of a batch).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Circuit synthesis (all partitions, in parallel).
    pub synth_ms: f64,
    /// Shape and satisfiability checks, scalar vectors, the 0/1 split.
    pub prepare_ms: f64,
    /// H (iFFT, coset FFT, division, coset iFFT) and the H-MSM.
    pub ntt_msm_h_ms: f64,
    /// Sums of bases whose scalar is one (L, A, B_G1).
    pub batch_add_ms: f64,
    /// Pippenger over the remaining scalars (L, A, B_G1).
    pub tail_msm_ms: f64,
    /// The B query over G2 (tail and batch addition).
    pub b_g2_msm_ms: f64,
    pub assemble_ms: f64,
    pub verify_ms: f64,
    pub total_ms: f64,
    /// The heavy steps as they ran: (stage, start, end), for the pipeline's timeline.
    pub events: Vec<(&'static str, Instant, Instant)>,
}

impl Timings {
    /// Records a heavy step that ran from `start` until now: its event for the timeline, and its
    /// time under the stage's total (`ntt_msm_h` or its halves `ntt_h`, `msm_h`; `tail_msm`,
    /// `batch_add`, `b_g2_msm`; other names, such as `dtoh`, are events only).
    pub fn step(&mut self, stage: &'static str, start: Instant) {
        self.span(stage, start, Instant::now());
    }

    /// Records a heavy step that ran from `start` to `end` (e.g. as a device's events timed it).
    pub fn span(&mut self, stage: &'static str, start: Instant, end: Instant) {
        let ms = end.saturating_duration_since(start).as_secs_f64() * 1e3;
        match stage {
            // A backend may time H and its MSM apart (`ntt_h`, `msm_h`); the total is the same.
            "ntt_msm_h" | "ntt_h" | "msm_h" => self.ntt_msm_h_ms += ms,
            "tail_msm" => self.tail_msm_ms += ms,
            "batch_add" => self.batch_add_ms += ms,
            "b_g2_msm" => self.b_g2_msm_ms += ms,
            _ => {}
        }
        self.events.push((stage, start, end));
    }

    /// `name=value` pairs, one line.
    pub fn line(&self) -> String {
        format!(
            "synth_ms={:.1} prepare_ms={:.1} ntt_msm_h_ms={:.1} batch_add_ms={:.1} tail_msm_ms={:.1} b_g2_msm_ms={:.1} assemble_ms={:.1} verify_ms={:.1} total_ms={:.1}",
            self.synth_ms,
            self.prepare_ms,
            self.ntt_msm_h_ms,
            self.batch_add_ms,
            self.tail_msm_ms,
            self.b_g2_msm_ms,
            self.assemble_ms,
            self.verify_ms,
            self.total_ms
        )
    }
}
