//! `Srs`: an opened parameter file, with typed zero-copy views of its sections (`h() l() a()
//! b_g1() b_g2() vk()`).
//!
//! [`Srs::open`] validates the layout, decodes the verifying key, and maps the proving sections
//! from the decode cache: a matching cache is mapped as it is, a missing or stale one rebuilt
//! first, and where no cache can be written the points are decoded into memory ([`Origin`] says
//! which). [`Srs::from_parameters`] and [`Srs::from_owned`] hold parameters built in memory (a
//! setup); [`inspect`] reports a file's layout and cache state without decoding it.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use memmap2::Mmap;

use crate::cache::{self, Binding};
use crate::decode::{decode_one, decode_section};
use crate::layout::Layout;
use crate::point::cast_points;
use crate::SrsError;

/// Where the decode cache lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheMode {
    /// Decode into memory on every open.
    Off,
    /// `<params file>.cuzk-cache` beside the source.
    Beside,
    /// `<dir>/<params file name>.cuzk-cache`.
    Dir(PathBuf),
}

#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Check that every point is in the prime-order subgroup (slow; on-curve is always checked).
    pub subgroup_check: bool,
    pub cache: CacheMode,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            subgroup_check: false,
            cache: CacheMode::Beside,
        }
    }
}

/// How the proving sections came to be in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Mapped from a valid decode cache; no point was decoded.
    Cache(PathBuf),
    /// Decoded and written to a (new or rebuilt) cache; `stale` says why an old cache was not used.
    Rebuilt {
        cache: PathBuf,
        stale: Option<String>,
    },
    /// Decoded into memory (cache off, or the cache could not be written: `cache_error`).
    InMemory { cache_error: Option<String> },
}

enum Points {
    Mapped {
        map: Mmap,
        ranges: [Range<usize>; 5],
    },
    Owned {
        h: Vec<G1Affine>,
        l: Vec<G1Affine>,
        a: Vec<G1Affine>,
        b_g1: Vec<G1Affine>,
        b_g2: Vec<G2Affine>,
    },
}

/// An opened Groth16 parameter set.
pub struct Srs {
    path: PathBuf,
    layout: Option<Layout>,
    vk: VerifyingKey<Bls12>,
    points: Points,
    origin: Origin,
}

impl Srs {
    /// Opens a `.params` file: validates its layout, decodes the verifying key, and maps the
    /// proving sections from the decode cache, (re)building the cache when it is missing or stale.
    pub fn open(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Srs, SrsError> {
        let path = path.as_ref();
        let (file, bytes, layout) = map_source(path)?;
        let vk = decode_vk(path, &bytes, &layout)?;
        let subgroup = opts.subgroup_check;

        let Some(cache_path) = cache_path(path, opts) else {
            let points = decode_owned(path, &bytes, &layout, subgroup)?;
            return Ok(Srs {
                path: path.into(),
                layout: Some(layout),
                vk,
                points,
                origin: Origin::InMemory { cache_error: None },
            });
        };

        let binding = Binding::of_source(path, &file, &bytes, &layout, subgroup)?;
        let stale = match cache::open(&cache_path, path, &binding) {
            Ok((map, ranges)) => {
                return Ok(Srs {
                    path: path.into(),
                    layout: Some(layout),
                    vk,
                    points: Points::Mapped { map, ranges },
                    origin: Origin::Cache(cache_path),
                })
            }
            Err(SrsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                None
            }
            Err(e) => Some(e.to_string()),
        };
        match cache::build(&cache_path, path, &bytes, &layout, &binding) {
            Ok(()) => {
                let (map, ranges) = cache::open(&cache_path, path, &binding)?;
                Ok(Srs {
                    path: path.into(),
                    layout: Some(layout),
                    vk,
                    points: Points::Mapped { map, ranges },
                    origin: Origin::Rebuilt {
                        cache: cache_path,
                        stale,
                    },
                })
            }
            // Bad content is the source's fault: report it rather than retrying in memory.
            Err(e @ SrsError::BadPoint { .. }) => Err(e),
            Err(e) => {
                let points = decode_owned(path, &bytes, &layout, subgroup)?;
                Ok(Srs {
                    path: path.into(),
                    layout: Some(layout),
                    vk,
                    points,
                    origin: Origin::InMemory {
                        cache_error: Some(e.to_string()),
                    },
                })
            }
        }
    }

    /// Opens a decode cache that must belong to `source` (no fallback: a mismatch is an error).
    pub fn open_cache(
        cache_path: impl AsRef<Path>,
        source: impl AsRef<Path>,
        opts: &OpenOptions,
    ) -> Result<Srs, SrsError> {
        let (cache_path, source) = (cache_path.as_ref(), source.as_ref());
        let (file, bytes, layout) = map_source(source)?;
        let vk = decode_vk(source, &bytes, &layout)?;
        let binding = Binding::of_source(source, &file, &bytes, &layout, opts.subgroup_check)?;
        let (map, ranges) = cache::open(cache_path, source, &binding)?;
        Ok(Srs {
            path: source.into(),
            layout: Some(layout),
            vk,
            points: Points::Mapped { map, ranges },
            origin: Origin::Cache(cache_path.into()),
        })
    }

    /// Wraps parameters already in memory (e.g. fresh from `generate_random_parameters`).
    pub fn from_parameters(params: &Parameters<Bls12>) -> Srs {
        Srs {
            path: PathBuf::from("<memory>"),
            layout: None,
            vk: params.vk.clone(),
            points: Points::Owned {
                h: params.h.to_vec(),
                l: params.l.to_vec(),
                a: params.a.to_vec(),
                b_g1: params.b_g1.to_vec(),
                b_g2: params.b_g2.to_vec(),
            },
            origin: Origin::InMemory { cache_error: None },
        }
    }

    /// Takes parameters built in memory (a setup's output) without copying their points where
    /// nobody else holds them. A section with capacity beyond its points (a generator that
    /// filtered its products in place, as bellperson's does) is shrunk to them: the parameters
    /// are held for the life of the process, and `point_bytes` counts points, not capacity.
    pub fn from_owned(params: Parameters<Bls12>) -> Srs {
        fn take<T: Clone>(v: std::sync::Arc<Vec<T>>) -> Vec<T> {
            let mut v = std::sync::Arc::try_unwrap(v).unwrap_or_else(|shared| shared.to_vec());
            v.shrink_to_fit();
            v
        }
        Srs {
            path: PathBuf::from("<memory>"),
            layout: None,
            vk: params.vk,
            points: Points::Owned {
                h: take(params.h),
                l: take(params.l),
                a: take(params.a),
                b_g1: take(params.b_g1),
                b_g2: take(params.b_g2),
            },
            origin: Origin::InMemory { cache_error: None },
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The file layout (`None` for parameters built in memory).
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }
    pub fn origin(&self) -> &Origin {
        &self.origin
    }
    pub fn vk(&self) -> &VerifyingKey<Bls12> {
        &self.vk
    }
    /// Number of public inputs, `one` included.
    pub fn num_inputs(&self) -> usize {
        self.vk.ic.len()
    }
    /// Domain size `n` (`h` holds `n − 1` points).
    pub fn domain_size(&self) -> usize {
        self.h().len() + 1
    }

    pub fn h(&self) -> &[G1Affine] {
        self.g1(0)
    }
    pub fn l(&self) -> &[G1Affine] {
        self.g1(1)
    }
    pub fn a(&self) -> &[G1Affine] {
        self.g1(2)
    }
    pub fn b_g1(&self) -> &[G1Affine] {
        self.g1(3)
    }
    pub fn b_g2(&self) -> &[G2Affine] {
        match &self.points {
            Points::Mapped { map, ranges } => cast_points(&map[ranges[4].clone()]).unwrap_or(&[]),
            Points::Owned { b_g2, .. } => b_g2,
        }
    }

    fn g1(&self, i: usize) -> &[G1Affine] {
        match &self.points {
            // The cache layout keeps every section 8-byte aligned inside a page-aligned map,
            // and `cache::open` checked the length, so the cast cannot fail.
            Points::Mapped { map, ranges } => cast_points(&map[ranges[i].clone()]).unwrap_or(&[]),
            Points::Owned { h, l, a, b_g1, .. } => [h, l, a, b_g1][i],
        }
    }

    /// Bytes of point data held (for memory budgets and `srs inspect`).
    pub fn point_bytes(&self) -> u64 {
        (self.h().len() + self.l().len() + self.a().len() + self.b_g1().len()) as u64 * 96
            + self.b_g2().len() as u64 * 192
    }
}

/// The state of a parameter file's decode cache, found without building anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheState {
    Disabled,
    Missing(PathBuf),
    Valid(PathBuf),
    Stale { cache: PathBuf, why: String },
}

/// Where `opts` puts the decode cache of `path` (`None` when caching is off).
pub fn cache_path(path: &Path, opts: &OpenOptions) -> Option<PathBuf> {
    match &opts.cache {
        CacheMode::Off => None,
        CacheMode::Beside => Some(cache_path_beside(path)),
        CacheMode::Dir(dir) => Some(dir.join(cache_file_name(path))),
    }
}

/// Validates `path`'s layout and reports the state of its decode cache (for `cuzk srs inspect`).
pub fn inspect(path: &Path, opts: &OpenOptions) -> Result<(Layout, CacheState), SrsError> {
    let (file, bytes, layout) = map_source(path)?;
    let Some(cache) = cache_path(path, opts) else {
        return Ok((layout, CacheState::Disabled));
    };
    let binding = Binding::of_source(path, &file, &bytes, &layout, opts.subgroup_check)?;
    let state = match cache::open(&cache, path, &binding) {
        Ok(_) => CacheState::Valid(cache),
        Err(SrsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            CacheState::Missing(cache)
        }
        Err(e) => CacheState::Stale {
            cache,
            why: e.to_string(),
        },
    };
    Ok((layout, state))
}

/// The default cache path beside a parameter file.
pub fn cache_path_beside(path: &Path) -> PathBuf {
    path.with_file_name(cache_file_name(path))
}

fn cache_file_name(path: &Path) -> String {
    format!(
        "{}.cuzk-cache",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

/// Opens and maps a parameter file and validates its layout (nothing is decoded yet).
fn map_source(path: &Path) -> Result<(File, Mmap, Layout), SrsError> {
    let file = File::open(path).map_err(|e| SrsError::io(path, e))?;
    // SAFETY: parameter files are read-only inputs; we never write through this map.
    let bytes = unsafe { Mmap::map(&file) }.map_err(|e| SrsError::io(path, e))?;
    let layout = Layout::parse(path, &bytes)?;
    Ok((file, bytes, layout))
}

fn decode_vk(path: &Path, bytes: &[u8], layout: &Layout) -> Result<VerifyingKey<Bls12>, SrsError> {
    // The verifying key is small: always decoded with the full subgroup check, like bellperson.
    let [alpha, beta1, beta2, gamma2, delta1, delta2] = &layout.vk_points;
    let ic = (0..layout.ic.count)
        .map(|i| decode_one::<G1Affine>(path, bytes, &layout.ic, i, true, true))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(VerifyingKey {
        alpha_g1: decode_one(path, bytes, alpha, 0, true, false)?,
        beta_g1: decode_one(path, bytes, beta1, 0, true, false)?,
        beta_g2: decode_one(path, bytes, beta2, 0, true, false)?,
        gamma_g2: decode_one(path, bytes, gamma2, 0, true, false)?,
        delta_g1: decode_one(path, bytes, delta1, 0, true, false)?,
        delta_g2: decode_one(path, bytes, delta2, 0, true, false)?,
        ic,
    })
}

fn decode_owned(
    path: &Path,
    bytes: &[u8],
    layout: &Layout,
    subgroup: bool,
) -> Result<Points, SrsError> {
    fn g1(
        path: &Path,
        bytes: &[u8],
        s: &crate::layout::Section,
        subgroup: bool,
    ) -> Result<Vec<G1Affine>, SrsError> {
        let mut v = vec![G1Affine::default(); s.count as usize];
        decode_section(path, bytes, s, &mut v, subgroup)?;
        Ok(v)
    }
    let mut b_g2 = vec![G2Affine::default(); layout.b_g2.count as usize];
    decode_section(path, bytes, &layout.b_g2, &mut b_g2, subgroup)?;
    Ok(Points::Owned {
        h: g1(path, bytes, &layout.h, subgroup)?,
        l: g1(path, bytes, &layout.l, subgroup)?,
        a: g1(path, bytes, &layout.a, subgroup)?,
        b_g1: g1(path, bytes, &layout.b_g1, subgroup)?,
        b_g2,
    })
}

impl std::fmt::Debug for Srs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Srs")
            .field("path", &self.path)
            .field("origin", &self.origin)
            .field("inputs", &self.num_inputs())
            .field("domain", &self.domain_size())
            .field("l", &self.l().len())
            .field("a", &self.a().len())
            .field("b", &self.b_g1().len())
            .finish()
    }
}
