//! HostPinner: the only code that pins host memory.
//!
//! Registrations are immutable ranges with a reference count. A request is covered by existing
//! registrations where they overlap it (their counts go up) and by new registrations for the gaps,
//! each within one aligned block of `chunk` bytes (absolute addresses) — so overlapping requests
//! from two workers never register the same byte twice (CUDA error 712 in the story cuzk starts
//! from), and a copy split as `cuzk_engine::backend::COPY_PIECE` says reads from one registration
//! per piece. A lease releases its counts when
//! dropped; a registration is unregistered when its last holder goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::Sender;
use cuzk_engine::backend::PAGE;

/// What actually pins: `cuMemHostRegister` on a GPU machine, bookkeeping only on the CPU backend.
pub trait PinApi: Send + 'static {
    fn register(&mut self, addr: usize, len: usize) -> Result<(), String>;
    fn unregister(&mut self, addr: usize) -> Result<(), String>;
}

/// The CPU backend's pinning: nothing to pin, but every call is counted (tests read the counts).
#[derive(Debug, Default)]
pub struct CountingPin {
    pub stats: Arc<std::sync::Mutex<PinStats>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PinStats {
    pub registers: u64,
    pub unregisters: u64,
    pub registered_bytes: u64,
    /// Ranges currently registered (start → len), to check that none overlap.
    pub live: BTreeMap<usize, usize>,
    /// Set if a register ever overlapped a live registration.
    pub double_registered: bool,
}

impl PinApi for CountingPin {
    fn register(&mut self, addr: usize, len: usize) -> Result<(), String> {
        let mut s = self.stats.lock().map_err(|_| "pin stats poisoned")?;
        let overlaps = s.live.range(..addr + len).next_back().is_some_and(|(&a, &l)| a + l > addr);
        s.double_registered |= overlaps;
        s.registers += 1;
        s.registered_bytes += len as u64;
        s.live.insert(addr, len);
        Ok(())
    }
    fn unregister(&mut self, addr: usize) -> Result<(), String> {
        let mut s = self.stats.lock().map_err(|_| "pin stats poisoned")?;
        s.unregisters += 1;
        s.live.remove(&addr).map(|_| ()).ok_or_else(|| format!("unregister of {addr:#x}, which is not registered"))
    }
}

struct Registration {
    len: usize,
    holders: usize,
}

pub struct HostPinner {
    api: Box<dyn PinApi>,
    chunk: usize,
    /// start → registration, non-overlapping.
    regs: BTreeMap<usize, Registration>,
}

impl HostPinner {
    pub fn new(api: Box<dyn PinApi>, chunk: usize) -> Self {
        HostPinner { api, chunk: chunk.max(PAGE) / PAGE * PAGE, regs: BTreeMap::new() }
    }

    /// Covers `[addr, addr + len)`, rounded out to whole pages (the driver pins pages, so two
    /// buffers sharing a page must share its registration); pushes the registration starts the
    /// caller now holds.
    fn pin_range(&mut self, addr: usize, len: usize, held: &mut Vec<usize>) -> Result<(), String> {
        let end = (addr + len).div_ceil(PAGE) * PAGE;
        let addr = addr / PAGE * PAGE;
        let mut at = addr;
        // A registration that starts before `addr` may cover its beginning.
        if let Some((&s, r)) = self.regs.range_mut(..=addr).next_back() {
            if s + r.len > addr {
                r.holders += 1;
                held.push(s);
                at = s + r.len;
            }
        }
        while at < end {
            match self.regs.range_mut(at..end).next() {
                Some((&s, r)) if s == at => {
                    r.holders += 1;
                    held.push(s);
                    at = s + r.len;
                }
                next => {
                    let gap_end = next.map(|(&s, _)| s).unwrap_or(end).min(end);
                    while at < gap_end {
                        let n = (gap_end - at).min(self.chunk - at % self.chunk);
                        self.api.register(at, n)?;
                        self.regs.insert(at, Registration { len: n, holders: 1 });
                        held.push(at);
                        at += n;
                    }
                }
            }
        }
        Ok(())
    }

    fn drop_holds(&mut self, held: &[usize]) -> Result<(), String> {
        let mut first_err = None;
        for s in held {
            let last = match self.regs.get_mut(s) {
                Some(r) => {
                    r.holders -= 1;
                    r.holders == 0
                }
                None => continue,
            };
            if last {
                self.regs.remove(s);
                if let Err(e) = self.api.unregister(*s) {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Actor for HostPinner {
    type Context = SyncContext<Self>;
}

/// Pins `ranges` (address, length); replies with a lease that unpins when dropped.
pub struct Pin {
    pub ranges: Vec<(usize, usize)>,
    pub reply: Sender<Result<PinLease, String>>,
    pub pinner: Addr<HostPinner>,
}

impl Message for Pin {
    type Result = ();
}

impl Handler<Pin> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: Pin, _: &mut SyncContext<Self>) {
        let mut held = Vec::new();
        let mut result = Ok(());
        for &(addr, len) in &msg.ranges {
            if len > 0 {
                result = self.pin_range(addr, len, &mut held);
                if result.is_err() {
                    break;
                }
            }
        }
        let reply = match result {
            Ok(()) => Ok(PinLease { held, pinner: Some(msg.pinner) }),
            Err(e) => {
                // Nothing half-pinned survives a failed request.
                let _ = self.drop_holds(&held);
                Err(e)
            }
        };
        let _ = msg.reply.send(reply);
    }
}

/// Drops holds (sent by `PinLease::drop`).
pub struct Unpin(pub Vec<usize>);

impl Message for Unpin {
    type Result = ();
}

impl Handler<Unpin> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: Unpin, _: &mut SyncContext<Self>) {
        let _ = self.drop_holds(&msg.0);
    }
}

/// Registered-byte count and number of registrations (for status).
pub struct PinnedNow(pub Sender<(usize, usize)>);

impl Message for PinnedNow {
    type Result = ();
}

impl Handler<PinnedNow> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: PinnedNow, _: &mut SyncContext<Self>) {
        let bytes = self.regs.values().map(|r| r.len).sum();
        let _ = msg.0.send((bytes, self.regs.len()));
    }
}

/// A holder's share of some registrations.
pub struct PinLease {
    held: Vec<usize>,
    pinner: Option<Addr<HostPinner>>,
}

impl PinLease {
    pub fn registrations(&self) -> usize {
        self.held.len()
    }
}

impl Drop for PinLease {
    fn drop(&mut self) {
        if let Some(p) = self.pinner.take() {
            p.do_send(Unpin(std::mem::take(&mut self.held)));
        }
    }
}

/// Asks `pinner` to pin `ranges` and waits for the lease (callable from any thread).
pub fn pin_blocking(pinner: &Addr<HostPinner>, ranges: Vec<(usize, usize)>) -> Result<PinLease, String> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    pinner.do_send(Pin { ranges, reply: tx, pinner: pinner.clone() });
    rx.recv().map_err(|_| "host pinner stopped".to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pinner(chunk: usize) -> (HostPinner, Arc<std::sync::Mutex<PinStats>>) {
        let api = CountingPin::default();
        let stats = api.stats.clone();
        (HostPinner::new(Box::new(api), chunk), stats)
    }

    #[test]
    fn overlapping_ranges_share_registrations() {
        let (mut p, stats) = pinner(4096);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.pin_range(0x10000, 3 * 4096, &mut a).unwrap();
        // Overlaps the tail of the first request and extends beyond it.
        p.pin_range(0x10000 + 4096 + 100, 4 * 4096, &mut b).unwrap();
        {
            let s = stats.lock().unwrap();
            assert!(!s.double_registered, "a byte was registered twice");
            // The second request rounds out to whole pages, [0x11000, 0x16000); only the three pages
            // past the first request's [0x10000, 0x13000) are new.
            assert_eq!(s.registered_bytes as usize, 6 * 4096);
        }
        p.drop_holds(&a).unwrap();
        assert!(stats.lock().unwrap().unregisters == 1, "a shared registration was dropped early");
        p.drop_holds(&b).unwrap();
        let s = stats.lock().unwrap();
        assert_eq!(s.registers, s.unregisters, "something stayed pinned");
        assert!(s.live.is_empty() && p.regs.is_empty());
    }

    #[test]
    fn buffers_sharing_a_page_share_its_registration() {
        let (mut p, stats) = pinner(1 << 20);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.pin_range(0x20000 + 10, 100, &mut a).unwrap();
        p.pin_range(0x20000 + 200, 5000, &mut b).unwrap();
        let s = stats.lock().unwrap().clone();
        assert!(!s.double_registered);
        assert_eq!((s.registers, s.registered_bytes), (2, 2 * 4096));
        p.drop_holds(&a).unwrap();
        p.drop_holds(&b).unwrap();
        assert!(stats.lock().unwrap().live.is_empty());
    }

    #[test]
    fn registrations_never_cross_a_chunk_boundary() {
        let (mut p, stats) = pinner(8192);
        let mut a = Vec::new();
        p.pin_range(4096 + 7, 5 * 8192, &mut a).unwrap();
        for (&s, r) in &p.regs {
            assert_eq!(s / 8192, (s + r.len - 1) / 8192, "registration {s:#x}+{} crosses a chunk boundary", r.len);
        }
        p.drop_holds(&a).unwrap();
        assert!(stats.lock().unwrap().live.is_empty());
    }

    #[test]
    fn large_ranges_register_in_chunks_and_repin_is_a_count() {
        let (mut p, stats) = pinner(8192);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.pin_range(0, 5 * 8192 + 1, &mut a).unwrap();
        assert_eq!(stats.lock().unwrap().registers, 6);
        p.pin_range(0, 5 * 8192 + 1, &mut b).unwrap();
        assert_eq!(stats.lock().unwrap().registers, 6, "re-pinning registered again");
        p.drop_holds(&a).unwrap();
        assert_eq!(stats.lock().unwrap().unregisters, 0);
        p.drop_holds(&b).unwrap();
        assert_eq!(stats.lock().unwrap().unregisters, 6);
    }
}
