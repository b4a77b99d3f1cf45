//! The recorded path with its products left to the backend (`Assignment::deferred`,
//! `Prepared::recorded`): completed on the host, it is exactly the full path's `Prepared`; and
//! proofs through it are byte-identical to proofs with recording off, on every example circuit,
//! on the CPU backend. An unsatisfied witness on this path is still an error. Packed at
//! synthesis where asked, the witness unpacks to itself.

use blstrs::Scalar;
use cuzk_engine::circuits::{Example, Square};
use cuzk_engine::packed_witness::PackedWitness;
use cuzk_engine::prover::{prepare, Prepared, ProveOptions, Split};
use cuzk_engine::recorded::{record, witness, RecordOptions, RecordingCache};
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, EngineError, Prover};
use cuzk_srs::Srs;
use ff::Field;
use rand::SeedableRng;
use std::sync::Arc;

fn size(name: &str) -> usize {
    match name {
        // log2 of the domain.
        "mulchain" => 8,
        "sha256" => 32,
        "bits" => 8,
        n => Example::default_size(n),
    }
}

fn same_split(what: &str, x: &Split, y: &Split) {
    assert!(x.tail == y.tail, "{what}: tails differ");
    assert_eq!(x.ones.len(), y.ones.len(), "{what}: one-bitmaps' lengths");
    assert_eq!(x.ones.words(), y.ones.words(), "{what}: one-bitmaps");
}

fn same_prepared(what: &str, x: &Prepared, y: &Prepared) {
    assert!(
        x.a == y.a && x.b == y.b && x.c == y.c,
        "{what}: a, b, c differ"
    );
    same_split(&format!("{what}: l"), &x.l, &y.l);
    same_split(&format!("{what}: a_query"), &x.a_query, &y.a_query);
    same_split(&format!("{what}: b_query"), &x.b_query, &y.b_query);
    assert_eq!(x.public_inputs, y.public_inputs, "{what}: public inputs");
    assert_eq!(x.shape, y.shape, "{what}: shape");
}

#[test]
fn deferred_products_completed_on_the_host_equal_the_full_prepare() {
    for name in Example::NAMES {
        let make = |seed| Example::new(name, size(name), seed).unwrap();
        let srs = Srs::from_parameters(&generate(make(1), 3).unwrap());
        let (rec, _) = record(make(1), false, 0).unwrap();
        let rec = Arc::new(rec);
        let opts = ProveOptions::default();
        for seed in [2, 3] {
            let values = witness(&rec, make(seed), 0, 1, 0).unwrap();
            let full = prepare(0, rec.assignment(values.clone(), 0).unwrap(), &srs, &opts)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let deferred = rec.deferred(values, 0).unwrap();
            assert!(deferred.a.is_empty() && deferred.deferred.is_some());
            let mut p = prepare(0, deferred, &srs, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                p.a.is_empty() && p.recorded.is_some(),
                "{name}: prepare computed the products on the recorded path"
            );
            // The splits are built by `prepare` (on the synthesis thread), as the full path does.
            same_split(&format!("{name}: l before completion"), &p.l, &full.l);
            same_split(
                &format!("{name}: a_query before completion"),
                &p.a_query,
                &full.a_query,
            );
            same_split(
                &format!("{name}: b_query before completion"),
                &p.b_query,
                &full.b_query,
            );
            p.complete_on_host().unwrap();
            assert!(p.recorded.is_none());
            same_prepared(&format!("{name} seed {seed}"), &p, &full);
            // The splits left to the backend (`splits_on_device`): none built by `prepare`,
            // then the host's completion builds them, the same as the full path's.
            let values = witness(&rec, make(seed), 0, 1, 0).unwrap();
            let left = ProveOptions {
                splits_on_device: true,
                ..ProveOptions::default()
            };
            let mut p = prepare(0, rec.deferred(values, 0).unwrap(), &srs, &left)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(p.splits_pending(), "{name}: splits pending");
            assert!(
                p.l.is_empty() && p.a_query.is_empty() && p.b_query.is_empty(),
                "{name}: prepare built splits it was told to leave"
            );
            p.complete_on_host().unwrap();
            assert!(!p.splits_pending());
            same_prepared(&format!("{name} seed {seed}, splits left"), &p, &full);
            // The products on the host (`products_on_host`, the streamed tier's choice where a
            // card cannot hold them beside the witness): `prepare` itself completes the
            // partition, on the synthesis thread, the same as the full path's.
            let values = witness(&rec, make(seed), 0, 1, 0).unwrap();
            let on_host = ProveOptions {
                splits_on_device: true,
                products_on_host: true,
                ..ProveOptions::default()
            };
            let p = prepare(0, rec.deferred(values, 0).unwrap(), &srs, &on_host)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                p.recorded.is_none() && !p.a.is_empty(),
                "{name}: prepare left the products with products_on_host"
            );
            same_prepared(&format!("{name} seed {seed}, products on host"), &p, &full);
            // The witness packed at synthesis (`pack_witness`, the pipeline's choice where
            // partitions may stream): where it pays, it unpacks to the witness; never otherwise.
            let values = witness(&rec, make(seed), 0, 1, 0).unwrap();
            let packing = ProveOptions {
                splits_on_device: true,
                pack_witness: true,
                ..ProveOptions::default()
            };
            let p = prepare(0, rec.deferred(values.clone(), 0).unwrap(), &srs, &packing)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let r = p.recorded.as_ref().expect("recorded");
            let w: Vec<Scalar> = r.inputs.iter().chain(&r.aux).copied().collect();
            let pays = PackedWitness::of(&r.inputs, &r.aux, 2).unwrap().pays();
            assert_eq!(
                r.packed.is_some(),
                pays,
                "{name}: packed where it pays, only there"
            );
            if let Some(packed) = &r.packed {
                assert_eq!(packed.unpack(), w, "{name}: the packed witness");
            }
            if name == "bits" || name == "sha256" {
                assert!(pays, "{name}: a witness of bits packs");
            }
            let plain = prepare(0, rec.deferred(values, 0).unwrap(), &srs, &left).unwrap();
            assert!(
                plain.recorded.as_ref().unwrap().packed.is_none(),
                "{name}: packed unasked"
            );
        }
    }
}

#[test]
fn proofs_on_the_deferred_path_are_byte_identical_to_recording_off() {
    let cpu = CpuBackend::new();
    for name in Example::NAMES {
        let make = |seed| Example::new(name, size(name), seed).unwrap();
        let srs = Srs::from_parameters(&generate(make(1), 3).unwrap());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let r: Vec<Scalar> = (0..2).map(|_| Scalar::random(&mut rng)).collect();
        let s: Vec<Scalar> = (0..2).map(|_| Scalar::random(&mut rng)).collect();
        let mut off = Prover::new(&srs, &cpu);
        off.opts.recorded.enabled = false;
        let want = off
            .prove(vec![make(7), make(8)], &r, &s)
            .unwrap()
            .to_bytes();
        let cache = RecordingCache::new();
        let mut on = Prover::new(&srs, &cpu);
        on.recordings = &cache;
        on.opts.recorded = RecordOptions {
            check_every: 0,
            files: false,
            ..RecordOptions::default()
        };
        // The first batch records; the second is witness-only with deferred products; the third
        // leaves the splits to the backend too (the host builds them when it computes).
        for round in 0..3 {
            on.opts.splits_on_device = round == 2;
            let got = on.prove(vec![make(7), make(8)], &r, &s).unwrap();
            assert_eq!(got.to_bytes(), want, "{name}: round {round}");
        }
        assert!(cache.get(std::any::type_name::<Example>(), &srs).is_some());
    }
}

#[test]
fn an_unsatisfied_witness_on_the_deferred_path_is_an_error() {
    let x = Scalar::from(3u64);
    let good = Square { x, y: x.square() };
    let srs = Srs::from_parameters(&generate(good.clone(), 3).unwrap());
    let cpu = CpuBackend::new();
    let cache = RecordingCache::new();
    let mut p = Prover::new(&srs, &cpu);
    p.recordings = &cache;
    p.opts.recorded.files = false;
    p.opts.recorded.check_every = 0;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    p.prove_random(vec![good], &mut rng).unwrap();
    let bad = Square {
        x,
        y: x.square() + Scalar::ONE,
    };
    match p.prove_random(vec![bad], &mut rng) {
        Err(EngineError::Unsatisfied {
            circuit: 0, row: 0, ..
        }) => {}
        other => panic!("expected row 0 unsatisfied, got {:?}", other.map(|_| ())),
    }
}
