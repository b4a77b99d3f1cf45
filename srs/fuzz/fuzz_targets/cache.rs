//! Arbitrary decode caches for a fixed small `.params` source (`corpus/params/mulchain-4.params`,
//! its mtime pinned so a cache built from it is valid on every run): `Srs::open_cache` must
//! return an error or an `Srs` whose sections match the source's counts, never panic.
//! Input: first byte 0 → the rest is the whole cache file; otherwise the rest edits the valid
//! cache: a u16 LE length to cut it to (0xffff keeps it), then (u16 LE offset, byte) pairs.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use cuzk_srs::{CacheMode, OpenOptions, Srs};
use libfuzzer_sys::fuzz_target;

const SOURCE: &[u8] = include_bytes!("../corpus/params/mulchain-4.params");

struct Fixture {
    source: PathBuf,
    cache: PathBuf,
    valid: Vec<u8>,
    h_count: usize,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir").keep();
        let source = dir.join("src.params");
        std::fs::write(&source, SOURCE).expect("writing the source");
        let f = std::fs::File::options()
            .write(true)
            .open(&source)
            .expect("source");
        f.set_modified(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .expect("mtime");
        drop(f);
        let cache_dir = dir.join("cache");
        let opts = OpenOptions {
            subgroup_check: false,
            cache: CacheMode::Dir(cache_dir.clone()),
        };
        let srs = Srs::open(&source, &opts).expect("the seed source opens");
        let h_count = srs.h().len();
        let built = cuzk_srs::cache_path(&source, &opts).expect("a cache path");
        let valid = std::fs::read(&built).expect("the built cache");
        Fixture {
            source,
            cache: dir.join("fuzzed.cuzk-cache"),
            valid,
            h_count,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let bytes = match data.split_first() {
        None => return,
        Some((0, rest)) => rest.to_vec(),
        Some((_, rest)) => {
            let mut v = f.valid.clone();
            if rest.len() >= 2 {
                let cut = u16::from_le_bytes([rest[0], rest[1]]) as usize;
                if cut != 0xffff {
                    v.truncate(cut.min(v.len()));
                }
                for e in rest[2..].chunks_exact(3) {
                    let at = u16::from_le_bytes([e[0], e[1]]) as usize;
                    if at < v.len() {
                        v[at] = e[2];
                    }
                }
            }
            v
        }
    };
    std::fs::write(&f.cache, &bytes).expect("writing the fuzzed cache");
    let opts = OpenOptions::default();
    match Srs::open_cache(&f.cache, &f.source, &opts) {
        Ok(srs) => {
            assert_eq!(srs.h().len(), f.h_count);
            // Mapped points are read as they are (the cache is trusted once bound): touch them.
            let _ = srs.point_bytes();
            let _ = srs
                .b_g2()
                .iter()
                .filter(|p| bool::from(p.is_on_curve()))
                .count();
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
