//! The binary's global allocator: mimalloc, and on request (`CUZK_COUNT_HEAP=1` in the
//! environment) a count of the heap bytes live, for `bench soak`'s leak check. RSS is a poor leak
//! measure under any allocator that caches pages; the count is exact.
//!
//! The count is kept in per-thread shards (cache-line padded, a thread picks one on its first
//! allocation), so counting adds one uncontended atomic add to an allocation and costs nothing
//! while off. Whether it is on is read once, from the environment, at the first allocation (with
//! `getenv`, which does not allocate), so every allocation and free of the process is counted
//! alike.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicU8, AtomicUsize, Ordering::Relaxed};

use mimalloc::MiMalloc;

const SHARDS: usize = 64;
const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

#[repr(align(128))]
struct Shard(AtomicIsize);

pub struct Heap;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);
static LIVE: [Shard; SHARDS] = [const { Shard(AtomicIsize::new(0)) }; SHARDS];

thread_local! {
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn counting() -> bool {
    match STATE.load(Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            // SAFETY: the name is a NUL-terminated literal; getenv reads the environment without
            // allocating. Threads racing here all read the same value.
            let v = unsafe { libc::getenv(c"CUZK_COUNT_HEAP".as_ptr()) };
            // SAFETY: a non-null getenv result is a NUL-terminated string.
            let on = !v.is_null() && unsafe { std::ffi::CStr::from_ptr(v) }.to_bytes() == b"1";
            STATE.store(if on { ON } else { OFF }, Relaxed);
            on
        }
    }
}

fn add(delta: isize) {
    if !counting() {
        return;
    }
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

/// Heap bytes live in the process, or `None` when the count is off.
pub fn live_bytes() -> Option<i64> {
    counting().then(|| LIVE.iter().map(|s| s.0.load(Relaxed) as i64).sum())
}

/// Gives mimalloc's freed pages back to the system, so that RSS measures what is in use.
pub fn collect() {
    // SAFETY: `mi_collect` only walks mimalloc's own heaps; mimalloc is this binary's allocator.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

// SAFETY: every call is passed to mimalloc unchanged; the count only observes sizes.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { MiMalloc.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}
