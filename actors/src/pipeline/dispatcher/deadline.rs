//! Deadlines: a job may be due some time after its submission ([`JobSpec::deadline`]); when it
//! ends later than that, the dispatcher reports it here: a WARN line naming the job, its kind and
//! by how much it was late, the engine's count of missed deadlines by kind (what
//! `cuzk_deadlines_missed_total{kind}` exposes), and `JobOutput::missed_deadline_by`. A deadline
//! does not reorder work: the priority class does (WinningPoSt and WindowPoSt above PoRep and
//! SnapDeals).
//!
//! [`JobSpec::deadline`]: crate::pipeline::job::JobSpec::deadline

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::pipeline::job::JobId;

/// Missed deadlines by kind, counted for the engine's life (shared by the dispatcher, which
/// counts, and the engine handle, which reads).
#[derive(Clone, Default)]
pub(crate) struct DeadlinesMissed(Arc<Mutex<BTreeMap<String, u64>>>);

impl DeadlinesMissed {
    /// Every kind that missed a deadline, with how many times, by kind name.
    pub(crate) fn by_kind(&self) -> Vec<(String, u64)> {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.iter().map(|(k, n)| (k.clone(), *n)).collect()
    }

    fn count(&self, kind: &str) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(kind.to_string()).or_default() += 1;
    }

    /// Job `job` of `kind`, due `deadline` after submission, ended `wall` after it: how late it
    /// was (`None`: on time, or no deadline), reported where it was late.
    pub(super) fn judge(
        &self,
        job: JobId,
        kind: &str,
        deadline: Option<Duration>,
        wall: Duration,
    ) -> Option<Duration> {
        let late = wall.checked_sub(deadline?).filter(|d| !d.is_zero())?;
        self.count(kind);
        slog::warn!(
            crate::log::job(job, None, kind, None),
            "job {job} ({kind}) missed its deadline by {} ms", late.as_millis();
            "deadline_ms" => deadline.map_or(0, |d| d.as_millis() as u64),
            "wall_ms" => wall.as_millis() as u64,
            "missed_by_ms" => late.as_millis() as u64,
        );
        Some(late)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_job_ending_after_its_deadline_is_counted_late() {
        let d = DeadlinesMissed::default();
        let ms = Duration::from_millis;
        assert_eq!(d.judge(1, "winning", None, ms(900)), None);
        assert_eq!(d.judge(2, "winning", Some(ms(1000)), ms(900)), None);
        assert_eq!(d.judge(3, "winning", Some(ms(1000)), ms(1000)), None);
        assert_eq!(
            d.judge(4, "winning", Some(ms(1000)), ms(1250)),
            Some(ms(250))
        );
        assert_eq!(d.judge(5, "porep", Some(ms(1)), ms(3)), Some(ms(2)));
        assert_eq!(d.judge(6, "winning", Some(ms(5)), ms(6)), Some(ms(1)));
        assert_eq!(
            d.by_kind(),
            vec![("porep".to_string(), 1), ("winning".to_string(), 2)]
        );
    }
}
