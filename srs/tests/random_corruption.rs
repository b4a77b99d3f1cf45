//! Random damage to a parameter file never panics and never yields wrong points: every open
//! either fails with an error naming the file, or returns exactly the original parameters (the
//! damage fell where it cannot change a point, which for uncompressed points is nowhere).

mod common;

use cuzk_srs::{write_params, CacheMode, OpenOptions, Srs};
use rand::{Rng, SeedableRng};

#[test]
fn random_flips_and_truncations() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::small(30);
    let good = dir.path().join("good.params");
    write_params(&good, &p).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let bad = dir.path().join("bad.params");
    let (mut refused, mut accepted) = (0, 0);
    for round in 0..300 {
        let mut b = bytes.clone();
        match round % 3 {
            0 => b.truncate(rng.gen_range(0..bytes.len())),
            1 => {
                let i = rng.gen_range(0..b.len());
                b[i] ^= 1 << rng.gen_range(0..8);
            }
            _ => {
                for _ in 0..rng.gen_range(1..20) {
                    let i = rng.gen_range(0..b.len());
                    b[i] = rng.gen();
                }
            }
        }
        std::fs::write(&bad, &b).unwrap();
        let cache = CacheMode::Dir(dir.path().join(format!("cache{round}")));
        match Srs::open(
            &bad,
            &OpenOptions {
                subgroup_check: round % 2 == 0,
                cache,
            },
        ) {
            Err(e) => {
                assert!(
                    e.to_string().contains("bad.params"),
                    "round {round}: error does not name the file: {e}"
                );
                refused += 1;
            }
            Ok(srs) => {
                assert!(
                    common::same(&p, &srs),
                    "round {round}: damaged file decoded to different parameters"
                );
                accepted += 1;
            }
        }
    }
    assert!(
        refused > 250,
        "only {refused} of 300 damaged files refused ({accepted} accepted)"
    );
}
