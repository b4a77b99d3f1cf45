//! Arbitrary bytes as a `.params` file: `Layout::parse` on them, then `Srs::open` (cache off) on
//! the same bytes in a file. Each must return an error or a valid `Srs`, never panic, hang, or
//! allocate more than the input describes. Seeds: two small valid files (`cuzk srs generate`).
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk_srs::{CacheMode, Layout, OpenOptions, Srs};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| tempfile::tempdir().expect("temp dir").keep())
}

fuzz_target!(|data: &[u8]| {
    let path = dir().join("input.params");
    let layout = Layout::parse(&path, data);
    std::fs::write(&path, data).expect("writing the input file");
    for subgroup_check in [false, true] {
        let opts = OpenOptions {
            subgroup_check,
            cache: CacheMode::Off,
        };
        match Srs::open(&path, &opts) {
            Ok(srs) => {
                // A file that opens parsed; its sections are the ones the layout described.
                let layout = layout
                    .as_ref()
                    .expect("Srs opened a file Layout::parse refused");
                assert_eq!(srs.h().len() as u64, layout.proving_sections()[0].count);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
        if layout.is_err() {
            break;
        }
    }
});
