//! The host memory the dispatcher admits a partition for is what it really takes. A real 2 KiB
//! PoRep partition is synthesized witness-only against its recording and prepared, exactly as
//! the dispatcher does it, under an allocator that keeps the exact high-water mark of live heap
//! bytes (`cli/src/heap.rs`, `Heap::peak`). The peak above what was live before must fit
//! `Dims::host_recorded`, which the dispatcher admits against `MemAvailable`: an estimate below
//! the peak is how a 32 GiB stream got OOM-killed. And the estimate must not be far above it,
//! or fewer partitions synthesize at once than memory allows.

mod common;

#[path = "../src/heap.rs"]
mod heap;

#[global_allocator]
static ALLOCATOR: heap::Heap = heap::Heap::peak();

use std::sync::Arc;

use cuzk_actors::pipeline::job::Synthesis;
use cuzk_actors::resources::tier::Dims;
use cuzk_actors::Priority;
use cuzk_engine::prover::prepare;
use cuzk_engine::synth::Shape;
use cuzk_engine::ProveOptions;
use cuzk_filecoin::{params, Registered};
use cuzk_srs::{CacheMode, OpenOptions, Srs};

/// Synthesizes and prepares partition 0 of the fixture's PoRep as the dispatcher does; the
/// bytes live at the peak above those live before, and the bytes the prepared partition holds.
fn synthesize_and_prepare(
    f: &common::Fixture,
    srs: &Arc<Srs>,
    recorded: bool,
    opts: &ProveOptions,
) -> (i64, i64) {
    let parsed = f.sector.porep_request().parse().unwrap();
    let mut spec = cuzk_actors::filecoin::job_spec(parsed, srs.clone(), Priority::Normal).unwrap();
    let how = (spec.synthesis)();
    assert_eq!(how == Synthesis::Recorded, recorded, "{how:?}");
    let synth = spec.partitions.remove(0);
    let hint = Shape {
        constraints: srs.domain_size(),
        inputs: srs.num_inputs(),
        aux: srs.l().len(),
    };
    let before = heap::live_bytes().unwrap();
    heap::reset_peak();
    let prepared = synth(hint)
        .and_then(|asg| prepare(0, asg, srs, opts))
        .unwrap();
    let peak = heap::peak_bytes().unwrap() - before;
    let held = heap::live_bytes().unwrap() - before;
    drop(prepared);
    (peak, held)
}

fn mib(b: i64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// [`synthesize_and_prepare`], its figures printed, and its peak checked against `admitted`;
/// the peak and `admitted`.
fn measured(
    f: &common::Fixture,
    srs: &Arc<Srs>,
    recorded: bool,
    opts: &ProveOptions,
    what: &str,
    admitted: u64,
) -> (i64, i64) {
    let (peak, held) = synthesize_and_prepare(f, srs, recorded, opts);
    let admitted = admitted as i64;
    eprintln!(
        "{what} partition: peak {:.1} MiB, held after prepare {:.1} MiB, admitted for {:.1} MiB",
        mib(peak),
        mib(held),
        mib(admitted)
    );
    assert!(
        peak <= admitted,
        "{what}: peak {:.1} MiB above the {:.1} MiB admitted",
        mib(peak),
        mib(admitted)
    );
    (peak, admitted)
}

#[test]
fn partitions_take_no_more_host_memory_than_they_are_admitted_for() {
    let f = common::fixture(None);
    let path = params::locate(Registered::Seal(common::SEAL), &f.params).unwrap();
    // Decoded into memory, with no decode cache and so no recording file beside it: the first
    // partition really records the shape.
    let opts = OpenOptions {
        cache: CacheMode::Off,
        ..OpenOptions::default()
    };
    let srs = Arc::new(Srs::open(&path, &opts).unwrap());

    // Recording: admitted for a full synthesis (`Dims::host`); the recording is built on the way
    // (and held after, in the recording cache).
    let host = ProveOptions::default();
    measured(&f, &srs, false, &host, "recording", Dims::of(&srs).host());

    // Witness-only with the splits built by `prepare` (`Dims::host_recorded`), then with the
    // splits left to the device, as the dispatcher does for GPUs that build them
    // (`Dims::host_witness`).
    let device = ProveOptions {
        splits_on_device: true,
        ..ProveOptions::default()
    };
    for (opts, what, admitted) in [
        (&host, "witness-only", Dims::of(&srs).host_recorded()),
        (
            &device,
            "witness-only, splits on the device",
            Dims::of(&srs).host_witness(),
        ),
    ] {
        let (peak, admitted) = measured(&f, &srs, true, opts, what, admitted);
        assert!(
            admitted <= peak + peak / 4,
            "{what}: admitted for {:.1} MiB, more than 1.25 × the {:.1} MiB peak",
            mib(admitted),
            mib(peak)
        );
    }
}
