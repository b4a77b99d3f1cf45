//! The synthesis workers: a fixed set of OS threads, each synthesizing one partition at a time,
//! fed in order through a channel. A partition's own parallel work (its challenges' witness
//! pieces, `prepare`'s gathers) runs on rayon's global pool, which holds nothing else of the
//! pipeline's.
//!
//! Why not one rayon pool for both: a rayon thread waiting in a `join` runs whatever job it can
//! find, and a whole partition spawned on the same pool is such a job. A thread waiting for a
//! 10 ms witness piece then ran another partition's synthesis (hundreds of ms; a periodic full
//! check, seconds) on top of its stack, so the partition waiting on that piece, and every
//! partition dispatched after it, waited too: on the H200 a 2 KiB PoRep stream of 64 proofs
//! left the GPU idle for 2.7 s while eighteen partitions' syntheses all ended at once behind
//! one checked proof. Here a worker is never inside a rayon job, so what a waiting rayon thread
//! can pick up is only other partitions' short pieces.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crossbeam_channel::{unbounded, Sender};

type Task = Box<dyn FnOnce() + Send + 'static>;

/// The workers (see the module documentation). Dropping it lets them finish the tasks already
/// sent, then end.
pub struct SynthWorkers {
    tx: Sender<Task>,
}

impl SynthWorkers {
    /// `threads` workers (at least one), named `cuzk-synth-<i>`.
    pub(crate) fn new(threads: usize) -> Result<SynthWorkers, String> {
        let (tx, rx) = unbounded::<Task>();
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("cuzk-synth-{i}"))
                .spawn(move || {
                    for task in rx {
                        // A task catches its own panics (`fault::catch`); should one escape, the
                        // worker stays for the next task.
                        let _ = catch_unwind(AssertUnwindSafe(task));
                    }
                })
                .map_err(|e| format!("synthesis worker {i}: {e}"))?;
        }
        Ok(SynthWorkers { tx })
    }

    /// Queues `task` for the next free worker (tasks start in the order they are sent).
    pub fn spawn(&self, task: impl FnOnce() + Send + 'static) {
        // The workers hold the receiver for as long as `self` holds the sender.
        let _ = self.tx.send(Box::new(task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_long_task_does_not_hold_up_tasks_sent_after_it() {
        let w = SynthWorkers::new(2).unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        w.spawn(move || {
            let _ = wait.recv();
        });
        let done = Arc::new(AtomicUsize::new(0));
        for i in 0..4 {
            let (tx, done) = (tx.clone(), done.clone());
            // Nested rayon work inside a task runs on the global pool.
            w.spawn(move || {
                let s: u64 = rayon::join(|| i as u64, || 1).0;
                done.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(s);
            });
        }
        for _ in 0..4 {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("a task behind the blocked one never ran");
        }
        assert_eq!(done.load(Ordering::SeqCst), 4);
        release.send(()).unwrap();
    }

    #[test]
    fn a_panicking_task_leaves_the_worker_serving() {
        let w = SynthWorkers::new(1).unwrap();
        w.spawn(|| panic!("a task's panic"));
        let (tx, rx) = crossbeam_channel::bounded(1);
        w.spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(7));
    }
}
