//! The fault plan (feature `faults`): rules, blocking gates, and the thread-local partition a
//! backend call works on.

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{fault_text, Fault, Site, Stage};
use crate::pipeline::job::JobId;
use crate::pipeline::work::PartKey;

thread_local! {
    static CURRENT: Cell<Option<PartKey>> = const { Cell::new(None) };
}

/// Runs `f` with `key` as the partition the backend calls on this thread work on.
pub fn scope<T>(key: PartKey, f: impl FnOnce() -> T) -> T {
    let before = CURRENT.with(|c| c.replace(Some(key)));
    struct Restore(Option<PartKey>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// The partition set by [`scope`] on this thread.
pub fn scoped_key() -> Option<PartKey> {
    CURRENT.with(|c| c.get())
}

/// A rule's handle (to release a blocking rule, or read how often it fired).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(pub usize);

/// Inject `fault` at `stage`, where the job, partition and device match (`None`: any), at most
/// `times` times.
#[derive(Debug, Clone)]
pub struct Rule {
    pub stage: Stage,
    pub fault: Fault,
    pub job: Option<JobId>,
    pub partition: Option<usize>,
    pub device: Option<usize>,
    pub times: usize,
}

impl Rule {
    /// `fault` at `stage`, once, for any partition on any device.
    pub fn new(stage: Stage, fault: Fault) -> Rule {
        Rule {
            stage,
            fault,
            job: None,
            partition: None,
            device: None,
            times: 1,
        }
    }
    pub fn job(mut self, job: JobId) -> Rule {
        self.job = Some(job);
        self
    }
    pub fn partition(mut self, p: usize) -> Rule {
        self.partition = Some(p);
        self
    }
    pub fn device(mut self, d: usize) -> Rule {
        self.device = Some(d);
        self
    }
    /// Fires at most `n` times (`usize::MAX`: always).
    pub fn times(mut self, n: usize) -> Rule {
        self.times = n;
        self
    }

    fn matches(&self, site: &Site) -> bool {
        let key_ok = |want: Option<u64>, got: Option<u64>| want.is_none() || want == got;
        self.stage == site.stage
            && key_ok(self.job, site.key.map(|k| k.job))
            && key_ok(
                self.partition.map(|p| p as u64),
                site.key.map(|k| k.partition as u64),
            )
            && (self.device.is_none() || self.device == site.device)
    }
}

struct Entry {
    rule: Rule,
    fired: usize,
    /// Blocking rules: sites now held, and whether the gate is open.
    held: Vec<Site>,
    open: bool,
}

#[derive(Default)]
struct State {
    rules: Vec<Entry>,
    /// Every site where a rule fired, in order.
    log: Vec<Site>,
}

/// A fault plan, shared by the engine's actors and backends (cheap to clone).
#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Faults")
    }
}

impl Faults {
    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a rule.
    pub fn add(&self, rule: Rule) -> RuleId {
        let mut st = self.state();
        st.rules.push(Entry {
            rule,
            fired: 0,
            held: Vec::new(),
            open: false,
        });
        RuleId(st.rules.len() - 1)
    }

    /// Removes every rule (opening every gate).
    pub fn clear(&self) {
        self.release_all();
        self.state().rules.clear();
    }

    /// Opens a blocking rule's gate: held sites go on, later ones pass.
    pub fn release(&self, id: RuleId) {
        if let Some(e) = self.state().rules.get_mut(id.0) {
            e.open = true;
        }
        self.inner.1.notify_all();
    }

    pub fn release_all(&self) {
        for e in self.state().rules.iter_mut() {
            e.open = true;
        }
        self.inner.1.notify_all();
    }

    /// How often a rule fired.
    pub fn fired(&self, id: RuleId) -> usize {
        self.state().rules.get(id.0).map_or(0, |e| e.fired)
    }

    /// Every site where a rule fired.
    pub fn log(&self) -> Vec<Site> {
        self.state().log.clone()
    }

    /// Waits until a blocking rule holds at least one site; returns the first, or `None` after
    /// `timeout`.
    pub fn wait_held(&self, id: RuleId, timeout: Duration) -> Option<Site> {
        let end = Instant::now() + timeout;
        let mut st = self.state();
        loop {
            if let Some(s) = st.rules.get(id.0).and_then(|e| e.held.first()) {
                return Some(*s);
            }
            let left = end.checked_duration_since(Instant::now())?;
            st = self
                .inner
                .1
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The first rule matching `site` with firings left, counted as fired.
    fn fire(&self, st: &mut State, site: &Site, want: impl Fn(Fault) -> bool) -> Option<usize> {
        let i = st
            .rules
            .iter()
            .position(|e| want(e.rule.fault) && e.fired < e.rule.times && e.rule.matches(site))?;
        st.rules[i].fired += 1;
        st.log.push(*site);
        Some(i)
    }

    /// The hook at a stage: `Err` for an injected error, a panic for `Panic`, a wait for `Block`.
    pub(crate) fn hit(&self, site: Site) -> Result<(), String> {
        let mut st = self.state();
        let Some(i) = self.fire(&mut st, &site, |f| f != Fault::WrongResult) else {
            return Ok(());
        };
        let fault = st.rules[i].rule.fault;
        match fault {
            Fault::Block => {
                st.rules[i].held.push(site);
                self.inner.1.notify_all();
                // Cleared rules open their gates (`clear`), and go: a gone rule is open.
                while st.rules.get(i).is_some_and(|e| !e.open) {
                    st = self.inner.1.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                if let Some(e) = st.rules.get_mut(i) {
                    e.held.retain(|s| *s != site);
                }
                Ok(())
            }
            Fault::Panic => {
                drop(st);
                panic!("{}", fault_text(fault, site.stage))
            }
            f => Err(fault_text(f, site.stage)),
        }
    }

    /// Whether a `WrongResult` rule fires at `site` (the caller then corrupts its result).
    pub fn corrupt(&self, site: Site) -> bool {
        let mut st = self.state();
        self.fire(&mut st, &site, |f| f == Fault::WrongResult)
            .is_some()
    }
}
