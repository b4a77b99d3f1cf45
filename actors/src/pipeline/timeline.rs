//! The timeline: a span for every stage of every partition, exported as JSON and drawn as a
//! self-contained SVG waterfall; stage totals under the pipeline's names; each span's duration
//! in a Prometheus histogram by stage, which the daemon's metrics read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use serde::Serialize;

use crate::pipeline::work::PartKey;

/// Prometheus label pairs.
pub type Labels = Vec<(String, String)>;
/// Histograms of seconds by label (the timeline's stages; the daemon's job durations).
pub type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// Seconds, 1 ms to ~15 min.
fn seconds_buckets() -> Histogram {
    Histogram::new([
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
        300.0, 900.0,
    ])
}

/// An empty [`HistogramFamily`] over the seconds buckets.
pub fn histogram_family() -> HistogramFamily {
    Family::new_with_constructor(seconds_buckets as fn() -> Histogram)
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Span {
    pub job: u64,
    pub partition: usize,
    pub stage: &'static str,
    pub gpu: Option<usize>,
    pub worker: Option<usize>,
    /// Microseconds since the timeline's origin.
    pub start_us: u64,
    pub end_us: u64,
    pub bytes: u64,
}

/// Shared span log (cheap to clone), keeping the most recent spans (`MAX_SPANS` by default,
/// `engine.timeline_spans`) so a daemon that runs for months does not grow without end.
#[derive(Clone)]
pub struct Timeline {
    origin: Instant,
    spans: Arc<Mutex<VecDeque<Span>>>,
    keep: usize,
    /// Every span's duration by stage, for Prometheus (never trimmed: a histogram is bounded).
    stages: HistogramFamily,
}

/// About 25 MB of spans: hours of a busy GPU.
pub const MAX_SPANS: usize = 1 << 18;

impl Default for Timeline {
    fn default() -> Self {
        Timeline::keeping(MAX_SPANS)
    }
}

/// Where a span ran.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lane {
    pub gpu: Option<usize>,
    pub worker: Option<usize>,
}

impl Timeline {
    /// A timeline that keeps the `keep` most recent spans (at least one).
    pub fn keeping(keep: usize) -> Self {
        Timeline {
            origin: Instant::now(),
            spans: Arc::default(),
            keep: keep.max(1),
            stages: histogram_family(),
        }
    }

    pub fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_micros() as u64
    }

    pub fn record(
        &self,
        key: PartKey,
        stage: &'static str,
        lane: Lane,
        start: Instant,
        end: Instant,
        bytes: u64,
    ) {
        self.stages
            .get_or_create(&vec![("stage".to_string(), stage.to_string())])
            .observe(end.saturating_duration_since(start).as_secs_f64());
        let span = Span {
            job: key.job,
            partition: key.partition,
            stage,
            gpu: lane.gpu,
            worker: lane.worker,
            start_us: self.us(start),
            end_us: self.us(end),
            bytes,
        };
        if let Ok(mut v) = self.spans.lock() {
            while v.len() >= self.keep {
                v.pop_front();
            }
            v.push_back(span);
        }
    }

    /// Span durations by stage (seconds), as Prometheus histograms.
    pub fn stage_histograms(&self) -> &HistogramFamily {
        &self.stages
    }

    /// The spans that match `keep`, copied under the lock (cheaper than all of them).
    pub fn spans_where(&self, keep: impl Fn(&Span) -> bool) -> Vec<Span> {
        self.spans
            .lock()
            .map(|v| v.iter().filter(|s| keep(s)).cloned().collect())
            .unwrap_or_default()
    }

    pub fn spans(&self) -> Vec<Span> {
        self.spans
            .lock()
            .map(|v| v.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn clear(&self) {
        if let Ok(mut v) = self.spans.lock() {
            v.clear();
        }
    }
}

/// Stage totals in milliseconds, under the familiar names.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct StageTotals {
    pub synth_ms: f64,
    pub queue_ms: f64,
    pub pin_ms: f64,
    pub upload_ms: f64,
    pub mutex_wait_ms: f64,
    pub ntt_msm_h_ms: f64,
    pub batch_add_ms: f64,
    pub tail_msm_ms: f64,
    pub b_g2_msm_ms: f64,
    pub gpu_total_ms: f64,
    /// Reading a partition's sums back and combining them on the host, after its kernels.
    pub dtoh_ms: f64,
    pub collect_ms: f64,
    pub assemble_ms: f64,
    pub verify_ms: f64,
}

impl StageTotals {
    pub fn of(spans: &[Span]) -> StageTotals {
        let mut t = StageTotals::default();
        for s in spans {
            let ms = (s.end_us - s.start_us) as f64 / 1e3;
            let slot = match s.stage {
                "synth" => &mut t.synth_ms,
                "queue" => &mut t.queue_ms,
                "pin" => &mut t.pin_ms,
                "upload" => &mut t.upload_ms,
                "mutex_wait" => &mut t.mutex_wait_ms,
                "ntt_msm_h" | "ntt_h" | "msm_h" => &mut t.ntt_msm_h_ms,
                "batch_add" => &mut t.batch_add_ms,
                "tail_msm" => &mut t.tail_msm_ms,
                "b_g2_msm" => &mut t.b_g2_msm_ms,
                "compute" => &mut t.gpu_total_ms,
                "dtoh" => &mut t.dtoh_ms,
                "collect" => &mut t.collect_ms,
                "assemble" => &mut t.assemble_ms,
                "verify" => &mut t.verify_ms,
                _ => continue,
            };
            *slot += ms;
        }
        t
    }

    pub fn line(&self) -> String {
        format!(
            "synth_ms={:.1} queue_ms={:.1} mutex_wait_ms={:.1} ntt_msm_h_ms={:.1} batch_add_ms={:.1} tail_msm_ms={:.1} gpu_total_ms={:.1} b_g2_msm_ms={:.1} pin_ms={:.1} upload_ms={:.1} dtoh_ms={:.1}",
            self.synth_ms,
            self.queue_ms,
            self.mutex_wait_ms,
            self.ntt_msm_h_ms,
            self.batch_add_ms,
            self.tail_msm_ms,
            self.gpu_total_ms,
            self.b_g2_msm_ms,
            self.pin_ms,
            self.upload_ms,
            self.dtoh_ms
        )
    }
}

/// The heavy steps a backend times (on a GPU: between CUDA events on the worker's stream).
pub const KERNEL_STAGES: [&str; 6] = [
    "ntt_msm_h",
    "ntt_h",
    "msm_h",
    "tail_msm",
    "batch_add",
    "b_g2_msm",
];

/// Fraction of `[from_us, to_us)` during which `gpu` ran one of its heavy steps (`KERNEL_STAGES`;
/// the whole `compute` spans if there are none). A `compute` span also holds the host's work
/// around the kernels (queueing them, reading the sums back), so it overstates how busy the GPU
/// was.
pub fn busy_fraction(spans: &[Span], gpu: usize, from_us: u64, to_us: u64) -> f64 {
    let on_gpu = |s: &&Span| s.gpu == Some(gpu);
    let kernels = spans
        .iter()
        .filter(on_gpu)
        .any(|s| KERNEL_STAGES.contains(&s.stage));
    let mut iv: Vec<(u64, u64)> = spans
        .iter()
        .filter(on_gpu)
        .filter(|s| {
            if kernels {
                KERNEL_STAGES.contains(&s.stage)
            } else {
                s.stage == "compute"
            }
        })
        .map(|s| (s.start_us.max(from_us), s.end_us.min(to_us)))
        .filter(|(a, b)| a < b)
        .collect();
    iv.sort();
    let (mut busy, mut cur) = (0u64, None::<(u64, u64)>);
    for (a, b) in iv {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                busy += cb - ca;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((ca, cb)) = cur {
        busy += cb - ca;
    }
    if to_us > from_us {
        busy as f64 / (to_us - from_us) as f64
    } else {
        0.0
    }
}

fn color(stage: &str) -> &'static str {
    match stage {
        "synth" => "#9e9e9e",
        "queue" => "#e0e0e0",
        "pin" => "#ffcc80",
        "upload" => "#ff9800",
        "mutex_wait" => "#ef9a9a",
        "ntt_msm_h" => "#1e88e5",
        "ntt_h" => "#42a5f5",
        "msm_h" => "#1565c0",
        "dtoh" => "#26a69a",
        "tail_msm" => "#3949ab",
        "batch_add" => "#00acc1",
        "b_g2_msm" => "#8e24aa",
        "compute" => "#bbdefb",
        "launch" => "#90caf9",
        "collect" => "#43a047",
        "assemble" => "#7cb342",
        "verify" => "#c0ca33",
        _ => "#000000",
    }
}

/// Which row of the waterfall a span goes on.
fn row_of(s: &Span) -> String {
    match (s.stage, s.gpu, s.worker) {
        ("synth" | "queue", ..) => "host: synthesis".into(),
        ("pin" | "upload", Some(g), _) => format!("gpu{g}: upload"),
        ("collect" | "assemble" | "verify", Some(g), _) => format!("gpu{g}: collector"),
        (_, Some(g), Some(w)) => format!("gpu{g}: worker {w}"),
        (_, Some(g), None) => format!("gpu{g}"),
        _ => "host".into(),
    }
}

/// A self-contained SVG waterfall: one row per lane, one rectangle per span (nested compute
/// stages drawn over their `compute` span), partitions labelled `job.partition`.
pub fn svg(spans: &[Span], title: &str) -> String {
    let mut rows: Vec<String> = spans
        .iter()
        .filter(|s| s.stage != "queue")
        .map(row_of)
        .collect();
    rows.sort();
    rows.dedup();
    let t0 = spans.iter().map(|s| s.start_us).min().unwrap_or(0);
    let t1 = spans
        .iter()
        .map(|s| s.end_us)
        .max()
        .unwrap_or(1)
        .max(t0 + 1);
    let (left, width, row_h, top) = (150.0, 1400.0, 26.0, 40.0);
    let x = |us: u64| left + (us - t0) as f64 / (t1 - t0) as f64 * width;
    let height = top + row_h * rows.len() as f64 + 70.0;
    let mut out = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{height}' font-family='monospace' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n<text x='10' y='20' font-size='14'>{}</text>\n",
        left + width + 20.0,
        escape(title)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        out += &format!("<text x='5' y='{}'>{}</text><line x1='{left}' x2='{}' y1='{}' y2='{}' stroke='#eee'/>\n", y + 16.0, escape(r), left + width, y + row_h, y + row_h);
    }
    let mut ordered: Vec<&Span> = spans.iter().filter(|s| s.stage != "queue").collect();
    ordered.sort_by_key(|s| (s.stage != "compute", s.start_us));
    for s in ordered {
        let i = rows.iter().position(|r| *r == row_of(s)).unwrap_or(0);
        let inner = s.stage != "compute" && s.worker.is_some();
        let y = top + row_h * i as f64 + if inner { 6.0 } else { 2.0 };
        let h = if inner { row_h - 10.0 } else { row_h - 4.0 };
        let (x0, x1) = (x(s.start_us), x(s.end_us));
        out += &format!(
            "<rect x='{x0:.1}' y='{y:.1}' width='{:.1}' height='{h}' fill='{}' stroke='#555' stroke-width='0.3'><title>job {} partition {} {} {:.1} ms {} bytes</title></rect>\n",
            (x1 - x0).max(0.5),
            color(s.stage),
            s.job,
            s.partition,
            s.stage,
            (s.end_us - s.start_us) as f64 / 1e3,
            s.bytes
        );
        if s.stage == "compute" && x1 - x0 > 30.0 {
            out += &format!(
                "<text x='{:.1}' y='{:.1}' fill='#000'>{}.{}</text>\n",
                x0 + 2.0,
                y + h - 3.0,
                s.job,
                s.partition
            );
        }
    }
    let legend = [
        "synth",
        "pin",
        "upload",
        "mutex_wait",
        "ntt_msm_h",
        "tail_msm",
        "batch_add",
        "b_g2_msm",
        "compute",
        "collect",
        "assemble",
        "verify",
    ];
    let ly = top + row_h * rows.len() as f64 + 20.0;
    for (i, st) in legend.iter().enumerate() {
        let lx = left + i as f64 * 110.0;
        out += &format!("<rect x='{lx}' y='{ly}' width='12' height='12' fill='{}'/><text x='{}' y='{}'>{st}</text>\n", color(st), lx + 16.0, ly + 10.0);
    }
    out += &format!(
        "<text x='{left}' y='{}'>0 ms … {:.1} ms</text>\n</svg>\n",
        ly + 35.0,
        (t1 - t0) as f64 / 1e3
    );
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(stage: &'static str, gpu: usize, a: u64, b: u64) -> Span {
        Span {
            job: 1,
            partition: 0,
            stage,
            gpu: Some(gpu),
            worker: Some(0),
            start_us: a,
            end_us: b,
            bytes: 0,
        }
    }

    #[test]
    fn the_timeline_keeps_only_the_most_recent_spans() {
        let t = Timeline::keeping(3);
        let now = Instant::now();
        for job in 0..5 {
            let key = PartKey { job, partition: 0 };
            t.record(key, "synth", Lane::default(), now, now, 0);
        }
        let jobs: Vec<u64> = t.spans().iter().map(|s| s.job).collect();
        assert_eq!(jobs, [2, 3, 4]);
    }

    #[test]
    fn h_and_its_msm_timed_apart_add_up_under_ntt_msm_h() {
        let s = vec![
            span("ntt_h", 0, 0, 30),
            span("msm_h", 0, 30, 100),
            span("ntt_msm_h", 1, 0, 50),
            span("dtoh", 0, 100, 110),
        ];
        let t = StageTotals::of(&s);
        assert!((t.ntt_msm_h_ms - 0.150).abs() < 1e-9, "{}", t.ntt_msm_h_ms);
        assert_eq!(t.gpu_total_ms, 0.0);
    }

    #[test]
    fn busy_fraction_counts_the_heavy_steps_not_the_host_work_around_them() {
        let s = vec![
            span("compute", 0, 0, 100),
            span("ntt_h", 0, 10, 30),
            span("msm_h", 0, 30, 60),
            span("tail_msm", 0, 50, 70),
        ];
        assert!((busy_fraction(&s, 0, 0, 100) - 0.6).abs() < 1e-9);
    }

    #[test]
    fn busy_fraction_merges_overlapping_spans() {
        let s = vec![
            span("compute", 0, 0, 50),
            span("compute", 0, 40, 60),
            span("compute", 0, 80, 100),
            span("upload", 0, 0, 100),
        ];
        assert!((busy_fraction(&s, 0, 0, 100) - 0.8).abs() < 1e-9);
        assert!((busy_fraction(&s, 0, 50, 100) - 0.6).abs() < 1e-9);
        assert_eq!(busy_fraction(&s, 1, 0, 100), 0.0);
        let svg = svg(&s, "t");
        assert!(
            svg.starts_with("<svg")
                && svg.contains("gpu0: worker 0")
                && svg.contains("gpu0: upload")
        );
    }
}
