//! The recorded path end to end: proof bytes equal to the full-synthesis path on every example
//! circuit (first proof recording, later ones from memory and from the file); a damaged, a
//! truncated and a stale recording file are rebuilt; a recording for another parameter file is
//! refused; a structure that follows the witness is caught by the sampled full synthesis.

use std::path::Path;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_engine::circuits::{Example, MulChain};
use cuzk_engine::recorded::{self, record, RecordOptions, RecordingCache, Source};
use cuzk_engine::setup::open_or_generate;
use cuzk_engine::synth::{synthesize, Shape};
use cuzk_engine::{CpuBackend, EngineError, Prover};
use cuzk_srs::{CacheMode, OpenOptions, Srs};
use ff::Field;

fn open(dir: &Path, name: &str, circuit: impl Circuit<Scalar> + Clone, seed: u64) -> Srs {
    let opts = OpenOptions {
        subgroup_check: false,
        cache: CacheMode::Dir(dir.join("cache")),
    };
    open_or_generate(&dir.join(format!("{name}.params")), circuit, seed, &opts)
        .unwrap()
        .0
}

fn size(name: &str) -> usize {
    match name {
        "mulchain" => 10,
        "sha256" => 32,
        "bits" => 4,
        n => Example::default_size(n),
    }
}

fn off() -> RecordOptions {
    RecordOptions {
        enabled: false,
        ..RecordOptions::default()
    }
}

#[test]
fn proofs_are_byte_identical_on_every_example() {
    let dir = tempfile::tempdir().unwrap();
    let backend = CpuBackend::new();
    let (r, s) = (
        [Scalar::from(11u64), Scalar::from(13u64)],
        [Scalar::from(17u64), Scalar::from(19u64)],
    );
    for name in Example::NAMES {
        let ex = |seed| Example::new(name, size(name), seed).unwrap();
        let srs = open(dir.path(), name, ex(0), 5);
        let cache = RecordingCache::new();
        let mut prover = Prover {
            recordings: &cache,
            ..Prover::new(&srs, &backend)
        };
        prover.opts.recorded = off();
        let want = prover.prove(vec![ex(1), ex(2)], &r, &s).unwrap().to_bytes();
        prover.opts.recorded = RecordOptions {
            check_every: 3,
            sample_rows: 7,
            ..RecordOptions::default()
        };
        // Recorded, then from memory (sampled rows), then the third proof checked in full.
        for round in 0..3 {
            let got = prover
                .prove(vec![ex(1), ex(2)], &r, &s)
                .unwrap_or_else(|e| panic!("{name} round {round}: {e}"))
                .to_bytes();
            assert_eq!(
                got, want,
                "{name} round {round}: proof bytes differ from the full-synthesis path"
            );
        }
        assert!(
            cache.get(std::any::type_name::<Example>(), &srs).is_some(),
            "{name}: recording kept"
        );
        // A fresh process: the recording comes from its file.
        let fresh = RecordingCache::new();
        let got = fresh
            .synthesize(&srs, ex(3), 0, &RecordOptions::default())
            .unwrap();
        assert_eq!(got.source, Source::File, "{name}");
        assert_eq!(
            got.assignment,
            synthesize(ex(3), Shape::default()).unwrap(),
            "{name}: assignment from the file"
        );
    }
}

/// Applies `damage` to the recording file of `srs` and checks the next open rebuilds it (and
/// says why), giving the right assignment, and that the file is whole again afterwards.
fn rebuilt_after(srs: &Srs, damage: impl Fn(&mut Vec<u8>), why: &str) {
    let key = std::any::type_name::<MulChain>();
    let path = recorded::recording_path(srs, key).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    damage(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    let c = MulChain::random(60, 2, 9);
    let got = RecordingCache::new()
        .synthesize(srs, c.clone(), 0, &RecordOptions::default())
        .unwrap();
    match &got.source {
        Source::Recorded { rebuilt: Some(w) } => assert!(w.contains(why), "{why}: {w}"),
        other => panic!("{why}: expected a rebuild, got {other:?}"),
    }
    assert_eq!(
        got.assignment,
        synthesize(c.clone(), Shape::default()).unwrap()
    );
    assert_eq!(
        RecordingCache::new()
            .synthesize(srs, c, 0, &RecordOptions::default())
            .unwrap()
            .source,
        Source::File,
        "{why}: rebuilt file"
    );
}

#[test]
fn damaged_truncated_and_stale_files_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let srs = open(dir.path(), "mulchain", MulChain::random(60, 2, 1), 3);
    let first = RecordingCache::new()
        .synthesize(
            &srs,
            MulChain::random(60, 2, 2),
            0,
            &RecordOptions::default(),
        )
        .unwrap();
    assert_eq!(first.source, Source::Recorded { rebuilt: None });
    rebuilt_after(&srs, |b| b[4096 + 8 * 70] ^= 0x10, "damaged");
    rebuilt_after(&srs, |b| b[130] ^= 1, "damaged");
    rebuilt_after(&srs, |b| b.truncate(b.len() - 8), "truncated");
    rebuilt_after(&srs, |b| b[8] = 0, "stale");
}

#[test]
fn a_recording_for_other_parameters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let circuit = MulChain::random(30, 2, 1);
    let srs1 = open(dir.path(), "one", circuit.clone(), 1);
    let srs2 = open(dir.path(), "two", circuit.clone(), 2);
    let key = std::any::type_name::<MulChain>();
    let path = recorded::build_file(&srs1, circuit.clone()).unwrap();
    assert!(recorded::open_for(&path, key, &srs1).is_ok());
    let err = recorded::open_for(&path, key, &srs2).err().unwrap();
    assert!(
        matches!(err, EngineError::RecordingParams { .. }) && err.to_string().contains("made for"),
        "{err}"
    );
    let rec = recorded::open_for(&path, key, &srs1).unwrap();
    let err = RecordingCache::new().insert(key, &srs2, rec).err().unwrap();
    assert!(matches!(err, EngineError::RecordingParams { .. }), "{err}");
    // Built ahead of time: the first proof already maps it.
    let got = RecordingCache::new()
        .synthesize(&srs1, circuit, 0, &RecordOptions::default())
        .unwrap();
    assert_eq!(got.source, Source::File);
}

/// Same counts every time; which variable the last row uses follows the witness.
#[derive(Clone)]
struct Drifts(u64);

impl Circuit<Scalar> for Drifts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let v = Scalar::from(self.0);
        let x = cs.alloc(|| "x", || Ok(v))?;
        let y = cs.alloc(|| "y", || Ok(v.double()))?;
        for i in 0..50 {
            cs.enforce(
                || format!("r{i}"),
                |l| l + x + x,
                |l| l + CS::one(),
                |l| l + y,
            );
        }
        let odd = self.0 % 2 == 1;
        let z = cs.alloc(|| "z", || Ok(if odd { v.double() } else { v }))?;
        let u = if odd { y } else { x };
        cs.enforce(|| "drift", |l| l + u, |l| l + CS::one(), |l| l + z);
        Ok(())
    }
}

#[test]
fn a_structure_that_follows_the_witness_is_caught_by_the_full_check() {
    let srs = Srs::from_parameters(&cuzk_engine::setup::generate(Drifts(2), 1).unwrap());
    let cache = RecordingCache::new();
    let opts = RecordOptions {
        check_every: 2,
        sample_rows: 0,
        ..RecordOptions::default()
    };
    assert!(matches!(
        cache.synthesize(&srs, Drifts(2), 0, &opts).unwrap().source,
        Source::Recorded { .. }
    ));
    let err = cache.synthesize(&srs, Drifts(3), 0, &opts).err().unwrap();
    assert!(
        matches!(err, EngineError::RecordingMismatch { .. })
            && err.to_string().contains("row 50 of A differs"),
        "{err}"
    );
    // The witness-only proof in between does not see it; the row check of prepare refuses it.
    let backend = CpuBackend::new();
    let mut prover = Prover {
        recordings: &cache,
        ..Prover::new(&srs, &backend)
    };
    prover.opts.recorded = RecordOptions {
        check_every: 0,
        sample_rows: 0,
        ..RecordOptions::default()
    };
    let err = prover
        .prove(vec![Drifts(3)], &[Scalar::ONE], &[Scalar::ONE])
        .err();
    assert!(
        matches!(err, Some(EngineError::Unsatisfied { row: 50, .. })),
        "{err:?}"
    );
    let (rec, _) = record(Drifts(2), false, 0).unwrap();
    assert_eq!(
        cache
            .get(std::any::type_name::<Drifts>(), &srs)
            .unwrap()
            .shape_hash(),
        rec.shape_hash()
    );
}

#[test]
fn the_pipeline_decides_which_synthesis_is_checked_and_is_told_when_one_is_due() {
    let srs = Srs::from_parameters(&cuzk_engine::setup::generate(Drifts(2), 1).unwrap());
    let key = std::any::type_name::<Drifts>();
    let binding = recorded::ParamsBinding::of(&srs);
    let cache = RecordingCache::new();
    let opts = RecordOptions {
        check_every: 3,
        sample_rows: 0,
        files: false,
        ..RecordOptions::default()
    };
    cache.set_options(opts.clone());
    assert_eq!(cache.check_due(key, &binding), None, "nothing held yet");
    let first = cache.synthesize(&srs, Drifts(2), 0, &opts).unwrap();
    assert!(matches!(first.source, Source::Recorded { .. }));
    let bytes = cache.get(key, &srs).unwrap().bytes();
    // The recording is the shape's first synthesis: its third is due, and stays due while the
    // caller says witness-only.
    let mut due = Vec::new();
    for _ in 0..4 {
        due.push(cache.check_due(key, &binding));
        let s = recorded::with_check(false, || {
            cache.synthesize_deferred(&srs, Drifts(4), 0, &opts, None)
        })
        .unwrap();
        assert_eq!(s.source, Source::Memory, "the caller said witness-only");
    }
    assert_eq!(due, [None, Some(bytes), Some(bytes), Some(bytes)]);
    // The one the caller checks: a full synthesis compared with the recording, whose products
    // are then left to the backend as a witness-only one's are.
    let s = recorded::with_check(true, || {
        cache.synthesize_deferred(&srs, Drifts(4), 0, &opts, None)
    })
    .unwrap();
    assert_eq!(s.source, Source::Checked);
    assert!(s.assignment.deferred.is_some() && s.assignment.a.is_empty());
    let (_, values) = record(Drifts(4), true, 0).unwrap();
    let (inputs, aux) = values.unwrap();
    assert_eq!((s.assignment.inputs, s.assignment.aux), (inputs, aux));
    assert_eq!(
        cache.check_due(key, &binding),
        None,
        "counted again from the check"
    );
    // A drift is caught by the check the caller asks for, whatever the count, and the decision
    // does not outlive its closure.
    let err = recorded::with_check(true, || cache.synthesize(&srs, Drifts(3), 0, &opts))
        .err()
        .unwrap();
    assert!(
        matches!(err, EngineError::RecordingMismatch { .. }),
        "{err}"
    );
    let next = cache.synthesize(&srs, Drifts(4), 0, &opts).unwrap();
    assert_eq!(next.source, Source::Memory);
}
