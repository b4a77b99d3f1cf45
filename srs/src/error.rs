//! Errors of cuzk-srs. Every error about file content names the section and the byte offset.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SrsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{path}: truncated in section `{section}`: needs bytes up to offset {needed}, file has {file_len}")]
    Truncated {
        path: PathBuf,
        section: &'static str,
        needed: u64,
        file_len: u64,
    },

    #[error("{path}: count of section `{section}` at offset {offset} is {count}, which runs past the end of the file ({file_len} bytes)")]
    CountPastEnd {
        path: PathBuf,
        section: &'static str,
        offset: u64,
        count: u64,
        file_len: u64,
    },

    #[error("{path}: section `{section}` point {index} at offset {offset}: {problem}")]
    BadPoint {
        path: PathBuf,
        section: &'static str,
        index: u64,
        offset: u64,
        problem: PointProblem,
    },

    #[error("{path}: {what}")]
    Inconsistent { path: PathBuf, what: String },

    #[error("{path}: {extra} trailing bytes after the last section (offset {offset})")]
    TrailingBytes {
        path: PathBuf,
        offset: u64,
        extra: u64,
    },

    #[error("decode cache {cache} does not belong to {source_path}: {field} is {found}, the source has {expected}")]
    CacheMismatch {
        cache: PathBuf,
        source_path: PathBuf,
        field: &'static str,
        expected: String,
        found: String,
    },

    #[error("decode cache {cache} is corrupt at offset {offset}: {what}")]
    CacheCorrupt {
        cache: PathBuf,
        offset: u64,
        what: String,
    },
}

/// What is wrong with one encoded point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointProblem {
    /// The 0x80 flag (compressed encoding) is set; parameter files hold uncompressed points.
    CompressedFlag,
    /// Not a valid encoding (a coordinate ≥ p, or the infinity flag with non-zero coordinates).
    BadEncoding,
    /// The coordinates do not satisfy the curve equation.
    NotOnCurve,
    /// On the curve, but not in the prime-order subgroup (checked mode).
    NotInSubgroup,
    /// The point at infinity, which a parameter file never holds.
    Infinity,
}

impl std::fmt::Display for PointProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PointProblem::CompressedFlag => {
                "compressed flag (0x80) set; expected an uncompressed point"
            }
            PointProblem::BadEncoding => "invalid encoding",
            PointProblem::NotOnCurve => "point is not on the curve",
            PointProblem::NotInSubgroup => "point is not in the prime-order subgroup",
            PointProblem::Infinity => "point at infinity",
        })
    }
}

impl SrsError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        SrsError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
