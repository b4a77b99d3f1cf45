//! Parameter files move both ways between cuzk-srs and bellperson.

mod common;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_srs::{write_params, CacheMode, Layout, OpenOptions, Srs};

#[test]
fn cuzk_writes_bellperson_reads() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::small(1);
    let path = dir.path().join("c.params");
    write_params(&path, &p).unwrap();
    let back = Parameters::<Bls12>::read(std::fs::File::open(&path).unwrap(), true).unwrap();
    assert!(back == p, "bellperson read back different parameters");
    // And the bytes are exactly bellperson's own encoding.
    let mut theirs = Vec::new();
    p.write(&mut theirs).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), theirs);
}

#[test]
fn bellperson_writes_cuzk_reads() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::random_params(2, 5, 5, 33, 17, 11);
    let path = dir.path().join("b.params");
    common::write_bellperson(&path, &p);
    for cache in [CacheMode::Off, CacheMode::Dir(dir.path().join("cache"))] {
        for subgroup_check in [false, true] {
            let srs = Srs::open(
                &path,
                &OpenOptions {
                    subgroup_check,
                    cache: cache.clone(),
                },
            )
            .unwrap();
            assert!(
                common::same(&p, &srs),
                "cuzk read different parameters ({cache:?}, {subgroup_check})"
            );
            assert_eq!(srs.domain_size(), 32);
            assert_eq!(srs.num_inputs(), 5);
        }
    }
    let bytes = std::fs::read(&path).unwrap();
    let layout = Layout::parse(&path, &bytes).unwrap();
    assert_eq!(
        (
            layout.ic.count,
            layout.h.count,
            layout.l.count,
            layout.a.count,
            layout.b_g1.count
        ),
        (5, 31, 33, 17, 11)
    );
}

#[test]
fn srs_round_trips_through_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::small(3);
    let first = dir.path().join("first.params");
    write_params(&first, &p).unwrap();
    let srs = Srs::open(&first, &OpenOptions::default()).unwrap();
    let second = dir.path().join("second.params");
    write_params(&second, &srs).unwrap();
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );
}
