//! The on-disk kernel cache: a second compile of a module comes from the cache with the same
//! bytes, and a damaged entry (a flipped byte, a truncated file, an empty file) is compiled again
//! and rewritten instead of being returned. Needs NVRTC, not a GPU; without NVRTC the test prints
//! why it skipped, and fails when CUZK_REQUIRE_NVRTC=1. One test in this binary: it sets
//! CUZK_KERNEL_CACHE for the process.

use cuzk_engine::gpu::nvrtc::{compile, nvrtc_present};
use cuzk_engine::gpu::sources::Module;

#[test]
fn damaged_cache_entries_are_compiled_again() {
    let required = std::env::var("CUZK_REQUIRE_NVRTC")
        .map(|v| v == "1")
        .unwrap_or(false);
    if let Err(why) = nvrtc_present() {
        if required {
            panic!("CUZK_REQUIRE_NVRTC=1 but NVRTC is unusable: {why}");
        }
        eprintln!("SKIPPED kernel_cache: {why} (set LD_LIBRARY_PATH to an NVRTC 13 install)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("CUZK_KERNEL_CACHE", dir.path());
    let (m, cc) = (Module::Arith, (9, 0));
    let first = compile(m, cc, true).unwrap();
    assert!(!first.from_cache, "an empty cache directory served a cubin");
    let again = compile(m, cc, true).unwrap();
    assert!(
        again.from_cache,
        "the second compile did not come from the cache"
    );
    assert_eq!(
        again.cubin, first.cubin,
        "the cache returned other bytes than it was given"
    );

    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "one module, one cache entry: {entries:?}");
    let entry = &entries[0];
    let good = std::fs::read(entry).unwrap();
    let damaged: [(&str, Vec<u8>); 4] = [
        ("a flipped byte in the cubin", {
            let mut b = good.clone();
            b[good.len() / 2] ^= 0x40;
            b
        }),
        ("a flipped byte in the checksum", {
            let mut b = good.clone();
            *b.last_mut().unwrap() ^= 1;
            b
        }),
        ("a truncated file", good[..good.len() / 3].to_vec()),
        ("an empty file", Vec::new()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(entry, &bytes).unwrap();
        let c = compile(m, cc, true).unwrap();
        assert!(!c.from_cache, "{what}: the damaged entry was served");
        assert_eq!(c.cubin, first.cubin, "{what}: the recompiled cubin differs");
        assert_eq!(
            std::fs::read(entry).unwrap(),
            good,
            "{what}: the entry was not rewritten"
        );
        assert!(
            compile(m, cc, true).unwrap().from_cache,
            "{what}: the rewritten entry is not used"
        );
    }
}
