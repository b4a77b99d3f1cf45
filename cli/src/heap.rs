//! The binary's global allocator: mimalloc, and on request a count of the heap bytes live.
//!
//! - `Heap::from_env()` (the `cuzk` binary) counts when `CUZK_COUNT_HEAP=1` is in the
//!   environment, for `bench soak`'s leak check (RSS is a poor leak measure under any allocator
//!   that caches pages; the count is exact). The count is kept in per-thread shards (cache-line
//!   padded; a thread picks one on its first allocation), so counting adds one uncontended
//!   atomic add to an allocation and costs nothing while off. Whether it is on is read once,
//!   with `getenv` (which does not allocate), at the first allocation, so every allocation and
//!   free of the process is counted alike.
//! - `Heap::peak()` (measurement programs and tests) counts in one shared counter and keeps the
//!   exact high-water mark (`peak_bytes`, `reset_peak`); every allocation contends on it.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicU8, AtomicUsize, Ordering::Relaxed};

use mimalloc::MiMalloc;

const SHARDS: usize = 64;
const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const SHARDED: u8 = 2;
const PEAK: u8 = 3;

#[repr(align(128))]
struct Shard(AtomicIsize);

/// The allocator; see the module's text.
pub struct Heap {
    peak: bool,
}

impl Heap {
    /// Counts (sharded, no peak) when `CUZK_COUNT_HEAP=1`.
    #[allow(dead_code)]
    pub const fn from_env() -> Heap {
        Heap { peak: false }
    }

    /// Always counts, with the exact peak.
    #[allow(dead_code)]
    pub const fn peak() -> Heap {
        Heap { peak: true }
    }
}

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);
static LIVE: [Shard; SHARDS] = [const { Shard(AtomicIsize::new(0)) }; SHARDS];
static HIGH: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn state(peak: bool) -> u8 {
    match STATE.load(Relaxed) {
        UNKNOWN => {
            let s = if peak {
                PEAK
            } else {
                // SAFETY: the name is a NUL-terminated literal; getenv reads the environment
                // without allocating. Threads racing here all read the same value.
                let v = unsafe { libc::getenv(c"CUZK_COUNT_HEAP".as_ptr()) };
                // SAFETY: a non-null getenv result is a NUL-terminated string.
                let on = !v.is_null() && unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes() == b"1";
                if on {
                    SHARDED
                } else {
                    OFF
                }
            };
            STATE.store(s, Relaxed);
            s
        }
        s => s,
    }
}

fn add(peak: bool, delta: isize) {
    match state(peak) {
        SHARDED => {
            let shard = MY_SHARD
                .try_with(|s| {
                    if s.get() == usize::MAX {
                        s.set(NEXT_SHARD.fetch_add(1, Relaxed) % SHARDS);
                    }
                    s.get()
                })
                // A thread's last frees, after its thread-locals are gone.
                .unwrap_or(0);
            LIVE[shard].0.fetch_add(delta, Relaxed);
        }
        PEAK => {
            let now = LIVE[0].0.fetch_add(delta, Relaxed) + delta;
            HIGH.fetch_max(now, Relaxed);
        }
        _ => {}
    }
}

fn counting() -> bool {
    matches!(STATE.load(Relaxed), SHARDED | PEAK)
}

/// Heap bytes live in the process, or `None` when the count is off.
pub fn live_bytes() -> Option<i64> {
    counting().then(|| LIVE.iter().map(|s| s.0.load(Relaxed) as i64).sum())
}

/// The most heap bytes live at once since the start or the last [`reset_peak`] (`Heap::peak`).
#[allow(dead_code)]
pub fn peak_bytes() -> Option<i64> {
    (STATE.load(Relaxed) == PEAK).then(|| HIGH.load(Relaxed) as i64)
}

/// Starts a new high-water mark at what is live now.
#[allow(dead_code)]
pub fn reset_peak() {
    HIGH.store(LIVE[0].0.load(Relaxed), Relaxed);
}

/// Gives mimalloc's freed pages back to the system, so that RSS measures what is in use.
#[allow(dead_code)]
pub fn collect() {
    // SAFETY: `mi_collect` only walks mimalloc's own heaps; mimalloc is this binary's allocator.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

// SAFETY: every call is passed to mimalloc unchanged; the count only observes sizes.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            add(self.peak, layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            add(self.peak, layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) };
        add(self.peak, -(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(self.peak, new_size as isize - layout.size() as isize);
        }
        p
    }
}
