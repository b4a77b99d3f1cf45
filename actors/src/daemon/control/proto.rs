//! Wire format: `u32 BE length | u16 BE version | bincode(payload)`, the length counting the
//! version and the payload, at most [`MAX_FRAME`] bytes (128 MiB: a 32 GiB PoRep C1 output is
//! ~51 MB, a 64 GiB one somewhat more). A longer frame is refused from its length alone, and a
//! frame's buffer grows only as its bytes arrive.
//!
//! Job ids are the daemon's public ids, the same as gRPC's: `<run>-<n>` (`run` eight hex digits
//! drawn at each start, see `daemon/jobs.rs`), so an id from before a restart never names another
//! job. Version 4 made them strings (version 3 carried the engine's bare number).

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

pub const VERSION: u16 = 4;
pub const MAX_FRAME: u32 = 128 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Queues, in-flight partitions, budgets, pinned memory (JSON).
    Status,
    /// Prometheus text exposition (`Response::Ok`): jobs by kind, queues, stage histograms,
    /// budgets, pinned memory, loaded parameters, GPU busy fraction.
    Metrics,
    /// Cancels a job by its id (`<run>-<n>`).
    Cancel {
        job: String,
    },
    /// Opens a parameter file (once) and keeps it loaded.
    Preload {
        path: String,
    },
    /// Drops the engine's handle to a parameter file (refused while a queued or running job uses it).
    Evict {
        path: String,
    },
    /// Stops dispatching to the GPUs (synthesis goes on); `Resume` undoes it.
    Pause,
    Resume,
    /// Proves one of the example circuits (a smoke test of a running daemon).
    ProveExample {
        circuit: String,
        size: usize,
        partitions: usize,
    },
    /// Waits for a job submitted through this daemon and reports how it ended.
    Wait {
        job: String,
    },
    /// Stops accepting work and exits once in-flight jobs are done.
    Drain,
    /// Stops at once.
    Shutdown,
    /// `starting`, `ready` or `draining` (`cuzk ctl ready` exits 0 only on `ready`).
    Ready,
    /// Proves a circuit kind the embedding program registered (`ServerOptions::custom`) from
    /// its input bytes, which that kind reads.
    ProveCustom {
        kind: String,
        input: Vec<u8>,
    },
    /// Re-reads the settings (this file, else the daemon's own) and applies those that can
    /// change live; a changed key that cannot is refused, by name, and nothing is applied.
    Reload {
        path: Option<String>,
    },
    /// Proves a Filecoin proof (PoRep C2, SnapDeals, WindowPoSt, WinningPoSt) from its inputs.
    #[cfg(feature = "filecoin")]
    Prove(cuzk_filecoin::ProofRequest),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Response {
    Ok(String),
    Json(String),
    /// A job taken: its id (`<run>-<n>`), for `Wait` and `Cancel`.
    Submitted {
        job: String,
    },
    /// A finished job: its proof bytes (192 per partition, in order, each self-verified) and
    /// where its time went: `queue_ms` from submission to its first partition's synthesis start
    /// (synthesis not counted), `prove_ms` from its first upload to its last proof.
    Proof {
        job: String,
        proof: Vec<u8>,
        partitions: u32,
        wall_ms: u64,
        queue_ms: u64,
        prove_ms: u64,
    },
    Error(String),
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {0} bytes: longer than the {MAX_FRAME}-byte limit")]
    TooLong(u32),
    #[error("frame of {0} bytes: too short to hold a version")]
    TooShort(u32),
    #[error("protocol version {0}; this side speaks {VERSION}")]
    Version(u16),
    #[error("frame cut short: {got} of its {expected} bytes arrived")]
    Truncated { expected: u32, got: u32 },
    #[error("undecodable payload: {0}")]
    Decode(String),
}

/// bincode's limit on what one payload may claim: a frame's most. Without it, a length prefix
/// inside a payload (a string's, a vector's) is allocated before its bytes are checked, so a few
/// bytes could claim exabytes and abort the process.
const PAYLOAD_LIMIT: usize = MAX_FRAME as usize;

fn config() -> bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<PAYLOAD_LIMIT>,
> {
    bincode::config::standard().with_limit::<PAYLOAD_LIMIT>()
}

pub fn write<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), FrameError> {
    let payload = bincode::serde::encode_to_vec(msg, config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    let len = u32::try_from(payload.len() + 2).map_err(|_| FrameError::TooLong(u32::MAX))?;
    if len > MAX_FRAME {
        return Err(FrameError::TooLong(len));
    }
    let mut frame = Vec::with_capacity(6 + payload.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&VERSION.to_be_bytes());
    frame.extend_from_slice(&payload);
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// Reads one frame. `Ok(None)` at a clean end of stream (before a frame starts).
pub fn read<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> Result<Option<T>, FrameError> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME {
        return Err(FrameError::TooLong(len));
    }
    if len < 2 {
        return Err(FrameError::TooShort(len));
    }
    // Grown as the bytes arrive: a length alone reserves nothing.
    let mut body = Vec::with_capacity((len as usize).min(1 << 20));
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() != len as usize {
        return Err(FrameError::Truncated {
            expected: len,
            got: body.len() as u32,
        });
    }
    let version = u16::from_be_bytes([body[0], body[1]]);
    if version != VERSION {
        return Err(FrameError::Version(version));
    }
    let (msg, used) = bincode::serde::decode_from_slice(&body[2..], config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    if used != body.len() - 2 {
        return Err(FrameError::Decode(format!(
            "{} trailing bytes",
            body.len() - 2 - used
        )));
    }
    Ok(Some(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let mut buf = Vec::new();
        let cancel = Request::Cancel {
            job: "0a1b2c3d-7".into(),
        };
        write(&mut buf, &cancel).unwrap();
        let back: Request = read(&mut buf.as_slice()).unwrap().unwrap();
        assert_eq!(back, cancel);

        let mut bad = buf.clone();
        bad[4] = 9; // version
        assert!(matches!(
            read::<Request>(&mut bad.as_slice()),
            Err(FrameError::Version(_))
        ));
        let huge = (MAX_FRAME + 1).to_be_bytes();
        assert!(matches!(
            read::<Request>(&mut huge.as_slice()),
            Err(FrameError::TooLong(_))
        ));
        let mut garbage = vec![0, 0, 0, 6];
        garbage.extend_from_slice(&VERSION.to_be_bytes());
        garbage.extend_from_slice(&[0xff; 4]);
        assert!(matches!(
            read::<Request>(&mut garbage.as_slice()),
            Err(FrameError::Decode(_))
        ));
        assert!(read::<Request>(&mut [].as_slice()).unwrap().is_none());
    }
}
