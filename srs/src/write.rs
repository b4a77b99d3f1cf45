//! Writing parameter files in the Filecoin format (readable by bellperson's `Parameters::read`):
//! the bytes are bellperson's own `Parameters::write`'s, written to a temporary file and renamed.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use rayon::prelude::*;

use crate::point::SrsPoint;
use crate::SrsError;

/// The parts of a parameter set, borrowed.
pub struct ParamsRef<'a> {
    pub vk: &'a VerifyingKey<Bls12>,
    pub h: &'a [G1Affine],
    pub l: &'a [G1Affine],
    pub a: &'a [G1Affine],
    pub b_g1: &'a [G1Affine],
    pub b_g2: &'a [G2Affine],
}

impl<'a> From<&'a Parameters<Bls12>> for ParamsRef<'a> {
    fn from(p: &'a Parameters<Bls12>) -> Self {
        ParamsRef {
            vk: &p.vk,
            h: &p.h,
            l: &p.l,
            a: &p.a,
            b_g1: &p.b_g1,
            b_g2: &p.b_g2,
        }
    }
}

impl<'a> From<&'a crate::Srs> for ParamsRef<'a> {
    fn from(s: &'a crate::Srs) -> Self {
        ParamsRef {
            vk: s.vk(),
            h: s.h(),
            l: s.l(),
            a: s.a(),
            b_g1: s.b_g1(),
            b_g2: s.b_g2(),
        }
    }
}

/// Writes `params` to `path` atomically (temporary file, then rename).
pub fn write_params<'a>(path: &Path, params: impl Into<ParamsRef<'a>>) -> Result<(), SrsError> {
    let p = params.into();
    if p.b_g1.len() != p.b_g2.len() {
        return Err(SrsError::Inconsistent {
            path: path.into(),
            what: format!("b_g1 has {} points, b_g2 {}", p.b_g1.len(), p.b_g2.len()),
        });
    }
    if !(p.h.len() + 1).is_power_of_two() {
        return Err(SrsError::Inconsistent {
            path: path.into(),
            what: format!("h has {} points; h + 1 must be a power of two", p.h.len()),
        });
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let file = File::create(&tmp).map_err(|e| SrsError::io(&tmp, e))?;
        let mut w = BufWriter::with_capacity(1 << 22, file);
        let io = |e| SrsError::io(&tmp, e);
        let vk = p.vk;
        w.write_all(&encode(&[vk.alpha_g1, vk.beta_g1]))
            .map_err(io)?;
        w.write_all(&encode(&[vk.beta_g2, vk.gamma_g2]))
            .map_err(io)?;
        w.write_all(&encode(&[vk.delta_g1])).map_err(io)?;
        w.write_all(&encode(&[vk.delta_g2])).map_err(io)?;
        write_section(&mut w, &vk.ic).map_err(io)?;
        write_section(&mut w, p.h).map_err(io)?;
        write_section(&mut w, p.l).map_err(io)?;
        write_section(&mut w, p.a).map_err(io)?;
        write_section(&mut w, p.b_g1).map_err(io)?;
        write_section(&mut w, p.b_g2).map_err(io)?;
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
        drop(w);
        fs::rename(&tmp, path).map_err(|e| SrsError::io(path, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_section<P: SrsPoint>(w: &mut impl Write, points: &[P]) -> std::io::Result<()> {
    let count = u32::try_from(points.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "more than 2^32 − 1 points in one section",
        )
    })?;
    w.write_all(&count.to_be_bytes())?;
    for chunk in points.chunks(1 << 16) {
        w.write_all(&encode(chunk))?;
    }
    Ok(())
}

fn encode<P: SrsPoint>(points: &[P]) -> Vec<u8> {
    let mut out = vec![0u8; points.len() * P::ENCODED];
    out.par_chunks_mut(P::ENCODED)
        .zip(points.par_iter())
        .for_each(|(o, p)| p.encode_into(o));
    out
}
