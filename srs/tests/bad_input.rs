//! Corrupt parameter files give clear errors naming the section and byte offset; nothing panics
//! and nothing is left behind.

mod common;

use cuzk_srs::{write_params, CacheMode, OpenOptions, PointProblem, Srs, SrsError};

struct Fixture {
    dir: tempfile::TempDir,
    bytes: Vec<u8>,
    layout: cuzk_srs::Layout,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("good.params");
    write_params(&path, &common::small(20)).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let layout = cuzk_srs::Layout::parse(&path, &bytes).unwrap();
    Fixture { dir, bytes, layout }
}

/// Opens `bytes` as a params file with a cache directory, returning the error; checks that no
/// cache or temporary file was left behind.
fn open_bad(f: &Fixture, name: &str, bytes: &[u8], subgroup_check: bool) -> SrsError {
    let path = f.dir.path().join(format!("{name}.params"));
    std::fs::write(&path, bytes).unwrap();
    let cache_dir = f.dir.path().join(format!("{name}-cache"));
    let err = Srs::open(
        &path,
        &OpenOptions {
            subgroup_check,
            cache: CacheMode::Dir(cache_dir.clone()),
        },
    )
    .err()
    .unwrap_or_else(|| panic!("{name}: corrupt file accepted"));
    let left: Vec<_> = std::fs::read_dir(&cache_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "{name}: left partial state behind: {left:?}"
    );
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{name}: error does not name the file: {err}"
    );
    err
}

fn has(err: &SrsError, parts: &[&str]) {
    let msg = err.to_string();
    for p in parts {
        assert!(msg.contains(p), "error `{msg}` does not mention `{p}`");
    }
}

#[test]
fn truncation_at_several_offsets() {
    let f = fixture();
    let l = &f.layout;
    let cuts: [(u64, &str); 6] = [
        (0, "alpha_g1"),
        (150, "beta_g1"),
        (l.ic.offset - 2, "ic"),
        (l.h.offset + 100, "h"),
        (l.b_g1.offset - 1, "b_g1"),
        (l.file_len - 1, "b_g2"),
    ];
    for (cut, section) in cuts {
        let err = open_bad(&f, &format!("cut{cut}"), &f.bytes[..cut as usize], false);
        match &err {
            SrsError::Truncated {
                section: s,
                file_len,
                ..
            }
            | SrsError::CountPastEnd {
                section: s,
                file_len,
                ..
            } => {
                assert_eq!(*s, section, "cut at {cut}: {err}");
                assert_eq!(*file_len, cut);
            }
            other => panic!("cut at {cut}: unexpected {other}"),
        }
        has(&err, &[&format!("`{section}`")]);
    }
}

#[test]
fn a_count_that_runs_past_the_end() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    let at = (f.layout.a.offset - 4) as usize;
    bytes[at..at + 4].copy_from_slice(&0x00FF_FFFFu32.to_be_bytes());
    let err = open_bad(&f, "count", &bytes, false);
    assert!(
        matches!(
            err,
            SrsError::CountPastEnd {
                section: "a",
                count: 0xFF_FFFF,
                ..
            }
        ),
        "{err}"
    );
    has(&err, &["`a`", &format!("offset {at}")]);
}

#[test]
fn trailing_bytes_and_inconsistent_counts() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    bytes.extend_from_slice(&[0u8; 7]);
    let err = open_bad(&f, "trailing", &bytes, false);
    assert!(
        matches!(err, SrsError::TrailingBytes { extra: 7, .. }),
        "{err}"
    );
}

#[allow(clippy::too_many_arguments)]
fn point_err(
    f: &Fixture,
    name: &str,
    bytes: &[u8],
    subgroup: bool,
    section: &str,
    index: u64,
    offset: u64,
    problem: PointProblem,
) {
    let err = open_bad(f, name, bytes, subgroup);
    match &err {
        SrsError::BadPoint {
            section: s,
            index: i,
            offset: o,
            problem: p,
            ..
        } => {
            assert_eq!(
                (*s, *i, *o, *p),
                (section, index, offset, problem),
                "{name}: {err}"
            );
        }
        other => panic!("{name}: unexpected {other}"),
    }
    has(
        &err,
        &[&format!("`{section}`"), &format!("offset {offset}")],
    );
}

#[test]
fn a_flipped_byte_inside_a_point() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    let at = f.layout.l.offset + 3 * 96;
    bytes[(at + 60) as usize] ^= 0x10; // inside y of l[3]
    point_err(
        &f,
        "flip",
        &bytes,
        false,
        "l",
        3,
        at,
        PointProblem::NotOnCurve,
    );
}

#[test]
fn the_compressed_flag_set() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    let at = f.layout.b_g2.offset + 192;
    bytes[at as usize] |= 0x80;
    point_err(
        &f,
        "compressed",
        &bytes,
        false,
        "b_g2",
        1,
        at,
        PointProblem::CompressedFlag,
    );
}

#[test]
fn an_off_curve_point_in_checked_mode() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    // Replace h[5] by (x, y + 1): a valid encoding of a point off the curve.
    let at = (f.layout.h.offset + 5 * 96) as usize;
    let mut y = bytes[at + 48..at + 96].to_vec();
    for b in y.iter_mut().rev() {
        let (v, carry) = b.overflowing_add(1);
        *b = v;
        if !carry {
            break;
        }
    }
    bytes[at + 48..at + 96].copy_from_slice(&y);
    point_err(
        &f,
        "offcurve",
        &bytes,
        true,
        "h",
        5,
        at as u64,
        PointProblem::NotOnCurve,
    );
}

#[test]
fn the_point_at_infinity_in_a_proving_section() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    let at = (f.layout.a.offset + 2 * 96) as usize;
    bytes[at..at + 96].fill(0);
    bytes[at] = 0x40;
    point_err(
        &f,
        "infinity",
        &bytes,
        false,
        "a",
        2,
        at as u64,
        PointProblem::Infinity,
    );
}

#[test]
fn a_bad_verifying_key_point() {
    let f = fixture();
    let mut bytes = f.bytes.clone();
    bytes[96 + 70] ^= 0x01; // inside beta_g1
    point_err(
        &f,
        "vk",
        &bytes,
        false,
        "beta_g1",
        0,
        96,
        PointProblem::NotOnCurve,
    );
}

#[test]
fn a_corrupt_cache_is_rebuilt_not_trusted() {
    let f = fixture();
    let path = f.dir.path().join("good.params");
    let opts = OpenOptions {
        subgroup_check: false,
        cache: CacheMode::Beside,
    };
    drop(Srs::open(&path, &opts).unwrap());
    let cache = cuzk_srs::cache_path_beside(&path);
    let len = std::fs::metadata(&cache).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&cache)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    let srs = Srs::open(&path, &opts).unwrap();
    match srs.origin() {
        cuzk_srs::Origin::Rebuilt {
            stale: Some(why), ..
        } => assert!(why.contains("corrupt"), "{why}"),
        other => panic!("expected a rebuild, got {other:?}"),
    }
    assert!(common::same(&common::small(20), &srs));
}
