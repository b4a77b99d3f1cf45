//! The decode cache: a second open maps the cache and decodes nothing; a changed source rebuilds
//! it; a cache from another source is refused by name. One test per binary file, because the
//! decode counter is process-wide.

mod common;

use cuzk_srs::{
    cache_path_beside, decoded_section_points_total, write_params, CacheMode, OpenOptions, Origin,
    Srs, SrsError,
};

#[test]
fn cache_reopens_without_decoding_and_rebuilds_when_stale() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::small(10);
    let path = dir.path().join("p.params");
    write_params(&path, &p).unwrap();
    let opts = OpenOptions {
        subgroup_check: false,
        cache: CacheMode::Beside,
    };

    let first = Srs::open(&path, &opts).unwrap();
    assert!(
        matches!(first.origin(), Origin::Rebuilt { stale: None, .. }),
        "{:?}",
        first.origin()
    );
    assert!(cache_path_beside(&path).exists());
    let points = first.h().len() + first.l().len() + first.a().len() + 2 * first.b_g1().len();
    drop(first);

    let before = decoded_section_points_total();
    let second = Srs::open(&path, &opts).unwrap();
    assert_eq!(
        decoded_section_points_total(),
        before,
        "opening through the cache decoded points"
    );
    assert!(
        matches!(second.origin(), Origin::Cache(_)),
        "{:?}",
        second.origin()
    );
    assert!(common::same(&p, &second));
    drop(second);

    // A source with other content (and so another vk and mtime) makes the cache stale.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let q = common::small(11);
    write_params(&path, &q).unwrap();
    let third = Srs::open(&path, &opts).unwrap();
    match third.origin() {
        Origin::Rebuilt {
            stale: Some(why), ..
        } => assert!(why.contains("does not belong"), "{why}"),
        other => panic!("expected a rebuild, got {other:?}"),
    }
    assert!(common::same(&q, &third));
    assert_eq!(decoded_section_points_total(), before + points as u64);

    // Touching the source (same bytes, new mtime) also rebuilds.
    drop(third);
    let f = std::fs::File::options().write(true).open(&path).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    let fourth = Srs::open(&path, &opts).unwrap();
    match fourth.origin() {
        Origin::Rebuilt {
            stale: Some(why), ..
        } => assert!(why.contains("mtime"), "{why}"),
        other => panic!("expected a rebuild, got {other:?}"),
    }

    // A cache asked to serve another source is refused, naming the field.
    let other = dir.path().join("other.params");
    write_params(&other, &common::small(12)).unwrap();
    let err = Srs::open_cache(cache_path_beside(&path), &other, &opts)
        .expect_err("foreign cache accepted");
    assert!(
        matches!(
            err,
            SrsError::CacheMismatch {
                field: "verifying-key hash",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("does not belong to"), "{err}");

    // A checked open does not accept an unchecked cache: it rebuilds with the subgroup check.
    let checked = Srs::open(
        &path,
        &OpenOptions {
            subgroup_check: true,
            cache: CacheMode::Beside,
        },
    )
    .unwrap();
    assert!(
        matches!(checked.origin(), Origin::Rebuilt { stale: Some(_), .. }),
        "{:?}",
        checked.origin()
    );
}
