//! HostPinner: the only code that pins host memory.
//!
//! Two kinds of pinned memory: staging buffers (`Staging`), allocated and registered once and
//! reused for every upload (what a GPU backend copies through, so nothing is registered or
//! unregistered per partition), and registrations of a caller's own ranges (`Pin`):
//! Registrations are immutable ranges with a reference count. A request is covered by existing
//! registrations where they overlap it (their counts go up) and by new registrations for the gaps,
//! each within one aligned block of `chunk` bytes (absolute addresses) — so overlapping requests
//! from two workers never register the same byte twice (CUDA error 712 in the story cuzk starts
//! from), and a copy split as `cuzk_engine::pipeline::COPY_PIECE` says reads from one registration
//! per piece. A lease releases its counts when
//! dropped; a registration is unregistered when its last holder goes.
//!
//! Its messages are declared here, not in `pipeline::messages`, because the resources never
//! import the pipeline; the pipeline reaches it through [`pin_blocking`] and
//! [`staging_blocking`] and the leases they return.

use std::collections::BTreeMap;
use std::sync::Arc;

use actix::prelude::*;
use crossbeam_channel::Sender;
use cuzk_engine::pipeline::PAGE;

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
        let overlaps = s
            .live
            .range(..addr + len)
            .next_back()
            .is_some_and(|(&a, &l)| a + l > addr);
        s.double_registered |= overlaps;
        s.registers += 1;
        s.registered_bytes += len as u64;
        s.live.insert(addr, len);
        Ok(())
    }
    fn unregister(&mut self, addr: usize) -> Result<(), String> {
        let mut s = self.stats.lock().map_err(|_| "pin stats poisoned")?;
        s.unregisters += 1;
        s.live
            .remove(&addr)
            .map(|_| ())
            .ok_or_else(|| format!("unregister of {addr:#x}, which is not registered"))
    }
}

struct Registration {
    len: usize,
    holders: usize,
}

/// Page-aligned host memory, freed when the last holder drops it (the HostPinner keeps one
/// handle while it is registered, so it is never freed while pinned).
pub struct HostBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: plain owned memory; access goes through `StagingLease::buffers(&mut self)`.
unsafe impl Send for HostBuf {}
unsafe impl Sync for HostBuf {}

impl HostBuf {
    fn new(len: usize) -> Result<Self, String> {
        let layout = std::alloc::Layout::from_size_align(len.max(PAGE).div_ceil(PAGE) * PAGE, PAGE)
            .map_err(|e| format!("staging buffer of {len} bytes: {e}"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = std::ptr::NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
            .ok_or_else(|| format!("allocating a {len}-byte staging buffer failed"))?;
        Ok(HostBuf { ptr, layout })
    }
    fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }
    pub fn len(&self) -> usize {
        self.layout.size()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for HostBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

pub struct HostPinner {
    api: Box<dyn PinApi>,
    chunk: usize,
    /// start → registration, non-overlapping.
    regs: BTreeMap<usize, Registration>,
    /// Staging buffers handed out and registered (each once, for its whole life).
    staging: Vec<Arc<HostBuf>>,
}

impl HostPinner {
    pub fn new(api: Box<dyn PinApi>, chunk: usize) -> Self {
        HostPinner {
            api,
            chunk: chunk.max(PAGE) / PAGE * PAGE,
            regs: BTreeMap::new(),
            staging: Vec::new(),
        }
    }

    fn release_staging(&mut self, addrs: &[usize]) {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.staging)
            .into_iter()
            .partition(|b| addrs.contains(&b.addr()));
        self.staging = kept;
        for b in gone {
            // Unregistered before its memory can be freed (this handle drops after).
            let _ = self.api.unregister(b.addr());
        }
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

impl Drop for HostPinner {
    fn drop(&mut self) {
        // Staging buffers still leased stay allocated (their leases hold them) but are unpinned
        // now, while the pinning API is still here.
        let all: Vec<usize> = self.staging.iter().map(|b| b.addr()).collect();
        self.release_staging(&all);
    }
}

/// Allocates and pins `count` staging buffers of `bytes` each, for one holder (a GPU's
/// UploadActor) to reuse for every upload; they are unpinned and freed when the lease drops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Staging {
    pub count: usize,
    pub bytes: usize,
    pub reply: Sender<Result<StagingLease, String>>,
    pub pinner: Addr<HostPinner>,
}

impl Handler<Staging> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: Staging, _: &mut SyncContext<Self>) {
        let mut bufs = Vec::new();
        let mut result = Ok(());
        for _ in 0..msg.count {
            match HostBuf::new(msg.bytes)
                .and_then(|b| self.api.register(b.addr(), b.len()).map(|()| b))
            {
                Ok(b) => {
                    let b = Arc::new(b);
                    self.staging.push(b.clone());
                    bufs.push(b);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let reply = match result {
            Ok(()) => Ok(StagingLease {
                bufs,
                pinner: Some(msg.pinner),
            }),
            Err(e) => {
                let addrs: Vec<usize> = bufs.iter().map(|b| b.addr()).collect();
                self.release_staging(&addrs);
                Err(e)
            }
        };
        let _ = msg.reply.send(reply);
    }
}

/// Pinned staging buffers leased to one holder.
pub struct StagingLease {
    bufs: Vec<Arc<HostBuf>>,
    pinner: Option<Addr<HostPinner>>,
}

impl StagingLease {
    /// The buffers, writable (the lease is the only user of their memory).
    pub fn buffers(&mut self) -> Vec<&mut [u8]> {
        // SAFETY: each buffer is `len` bytes of live memory (held by `self.bufs`); the HostPinner
        // never reads or writes it, and `&mut self` makes these the only references.
        self.bufs
            .iter()
            .map(|b| unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr(), b.len()) })
            .collect()
    }
}

impl Drop for StagingLease {
    fn drop(&mut self) {
        if let Some(p) = self.pinner.take() {
            p.do_send(ReleaseStaging(self.bufs.iter().map(|b| b.addr()).collect()));
        }
    }
}

/// Unpins staging buffers whose lease was dropped (their memory goes when the last handle does).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReleaseStaging(pub Vec<usize>);

impl Handler<ReleaseStaging> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: ReleaseStaging, _: &mut SyncContext<Self>) {
        self.release_staging(&msg.0);
    }
}

/// Asks `pinner` for `count` pinned staging buffers of `bytes` each and waits for them.
pub(crate) fn staging_blocking(
    pinner: &Addr<HostPinner>,
    count: usize,
    bytes: usize,
) -> Result<StagingLease, String> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    pinner.do_send(Staging {
        count,
        bytes,
        reply: tx,
        pinner: pinner.clone(),
    });
    rx.recv().map_err(|_| "host pinner stopped".to_string())?
}

/// Pins `ranges` (address, length); replies with a lease that unpins when dropped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Pin {
    pub ranges: Vec<(usize, usize)>,
    pub reply: Sender<Result<PinLease, String>>,
    pub pinner: Addr<HostPinner>,
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
            Ok(()) => Ok(PinLease {
                held,
                pinner: Some(msg.pinner),
            }),
            Err(e) => {
                // Nothing half-pinned survives a failed request.
                let _ = self.drop_holds(&held);
                Err(e)
            }
        };
        let _ = msg.reply.send(reply);
    }
}

/// Drops holds (sent by `PinLease::drop` and `PinLease::unpin`); `done` hears when they are
/// dropped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unpin(pub Vec<usize>, pub Option<Sender<()>>);

impl Handler<Unpin> for HostPinner {
    type Result = ();
    fn handle(&mut self, msg: Unpin, _: &mut SyncContext<Self>) {
        let _ = self.drop_holds(&msg.0);
        if let Some(done) = msg.1 {
            let _ = done.send(());
        }
    }
}

/// Registered-byte count and number of registrations (for status).
#[derive(Message)]
#[rtype(result = "()")]
pub struct PinnedNow(pub Sender<(usize, usize)>);

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

    /// Releases the holds and waits until the HostPinner has done so (and unregistered what no
    /// one holds any more): after this the ranges may be freed. Dropping a lease only asks.
    pub fn unpin(mut self) {
        if let Some(p) = self.pinner.take() {
            let (tx, rx) = crossbeam_channel::bounded(1);
            p.do_send(Unpin(std::mem::take(&mut self.held), Some(tx)));
            let _ = rx.recv();
        }
    }
}

impl Drop for PinLease {
    fn drop(&mut self) {
        if let Some(p) = self.pinner.take() {
            p.do_send(Unpin(std::mem::take(&mut self.held), None));
        }
    }
}

/// Asks `pinner` to pin `ranges` and waits for the lease (callable from any thread).
pub(crate) fn pin_blocking(
    pinner: &Addr<HostPinner>,
    ranges: Vec<(usize, usize)>,
) -> Result<PinLease, String> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    pinner.do_send(Pin {
        ranges,
        reply: tx,
        pinner: pinner.clone(),
    });
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
        assert!(
            stats.lock().unwrap().unregisters == 1,
            "a shared registration was dropped early"
        );
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
            assert_eq!(
                s / 8192,
                (s + r.len - 1) / 8192,
                "registration {s:#x}+{} crosses a chunk boundary",
                r.len
            );
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
        assert_eq!(
            stats.lock().unwrap().registers,
            6,
            "re-pinning registered again"
        );
        p.drop_holds(&a).unwrap();
        assert_eq!(stats.lock().unwrap().unregisters, 0);
        p.drop_holds(&b).unwrap();
        assert_eq!(stats.lock().unwrap().unregisters, 6);
    }
}
