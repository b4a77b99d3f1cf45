//! The per-GPU kernel lock, taken in the order partitions were staged: the compute workers of one
//! GPU run their partitions strictly in dispatch order (a plain mutex lets a worker that just
//! finished barge ahead of one that has waited, starving a partition and its job).

use std::sync::{Condvar, Mutex};

#[derive(Default)]
pub struct Turns {
    serving: Mutex<u64>,
    cv: Condvar,
}

/// Holding a turn; dropping it lets the next sequence number in.
pub struct Turn<'a> {
    turns: &'a Turns,
}

impl Turns {
    /// Blocks until it is `seq`'s turn (sequence numbers start at 0 and every one must be taken).
    pub fn wait(&self, seq: u64) -> Turn<'_> {
        let mut serving = self.serving.lock().unwrap_or_else(|p| p.into_inner());
        while *serving != seq {
            serving = self.cv.wait(serving).unwrap_or_else(|p| p.into_inner());
        }
        Turn { turns: self }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut serving = self.turns.serving.lock().unwrap_or_else(|p| p.into_inner());
        *serving += 1;
        self.turns.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn turns_are_taken_in_sequence_order() {
        let turns = Arc::new(Turns::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..8u64)
            .rev()
            .map(|seq| {
                let (t, o) = (turns.clone(), order.clone());
                std::thread::spawn(move || {
                    let _turn = t.wait(seq);
                    o.lock().unwrap().push(seq);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    }
}
