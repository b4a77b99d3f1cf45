//! A proof request as it travels (bytes a node produced, nothing parsed yet), and its parsed
//! form. The wire form is what the daemon's control frames and the library's job type carry.
//! A parsed request goes to its kind's [`Compound`].
//!
//! [`ProofRequest::parse`] reads the inputs (errors name what is malformed); bincode inputs are
//! decoded as filecoin-proofs-api writes them, trailing bytes refused and allocation bounded by
//! the input's length. [`Parsed::build`] and [`Parsed::public_inputs`] catch a panic inside
//! filecoin-proofs and report it as an error. [`prover_id_of_miner`] and [`hex32`] read the ids
//! and commitments clients send.

use blstrs::Scalar;
use serde::{Deserialize, Serialize};

use crate::compound::{Compound, PoRep, SnapDeals, WindowPoSt, WinningPoSt};
use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::porep::PoRepInput;
use crate::post::PoStInput;
use crate::registered::{self, Registered};
use crate::sink::CircuitSink;
use crate::snap::SnapInput;

/// One proof to make, with its inputs exactly as a storage node's pipelines produce them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProofRequest {
    /// PoRep C2. `c1_json` is the `SealCommitPhase1Output` JSON; the prover id and sector
    /// number are needed only to run filecoin-proofs' `verify_seal` as well.
    PoRep {
        c1_json: Vec<u8>,
        prover_id: Option<[u8; 32]>,
        sector_id: Option<u64>,
    },
    /// SnapDeals. `registered` is the `RegisteredUpdateProof` abi number (0–4).
    SnapDeals {
        registered: u64,
        vanilla_proofs: Vec<Vec<u8>>,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
    },
    /// One WindowPoSt partition. `registered` is the `RegisteredPoStProof` abi number (5–14).
    WindowPoSt {
        registered: u64,
        vanilla_proofs: Vec<Vec<u8>>,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        partition_index: u64,
    },
    /// WinningPoSt. `registered` is the `RegisteredPoStProof` abi number (0–4).
    WinningPoSt {
        registered: u64,
        vanilla_proofs: Vec<Vec<u8>>,
        randomness: [u8; 32],
        prover_id: [u8; 32],
    },
}

impl ProofRequest {
    pub fn kind(&self) -> ProofKind {
        match self {
            ProofRequest::PoRep { .. } => ProofKind::PoRep,
            ProofRequest::SnapDeals { .. } => ProofKind::SnapDeals,
            ProofRequest::WindowPoSt { .. } => ProofKind::WindowPoSt,
            ProofRequest::WinningPoSt { .. } => ProofKind::WinningPoSt,
        }
    }

    /// Reads the inputs (JSON, bincode headers, registered proof numbers); errors name what was
    /// malformed. Circuits are built later, by [`Parsed::build`].
    pub fn parse(self) -> Result<Parsed, FilecoinError> {
        let post = |kind,
                    registered: u64,
                    vanilla_proofs,
                    randomness,
                    prover_id,
                    partition_index: u64|
         -> Result<Parsed, FilecoinError> {
            let Registered::PoSt(p) = registered::parse(kind, &registered.to_string())? else {
                return Err(FilecoinError::invalid("registered PoSt proof", registered));
            };
            let partition_index = usize::try_from(partition_index)
                .map_err(|_| FilecoinError::invalid("partition index", partition_index))?;
            Ok(Parsed::PoSt(PoStInput {
                registered: p,
                vanilla_proofs,
                randomness,
                prover_id,
                partition_index,
            }))
        };
        match self {
            ProofRequest::PoRep {
                c1_json,
                prover_id,
                sector_id,
            } => {
                let mut input = PoRepInput::from_json(&c1_json)?;
                input.prover_id = prover_id;
                input.sector_id = sector_id;
                Ok(Parsed::PoRep(Box::new(input)))
            }
            ProofRequest::SnapDeals {
                registered,
                vanilla_proofs,
                comm_r_old,
                comm_r_new,
                comm_d_new,
            } => {
                let registered = registered::update_from_abi(registered)?;
                Ok(Parsed::Snap(SnapInput {
                    registered,
                    vanilla_proofs,
                    comm_r_old,
                    comm_r_new,
                    comm_d_new,
                }))
            }
            ProofRequest::WindowPoSt {
                registered,
                vanilla_proofs,
                randomness,
                prover_id,
                partition_index,
            } => post(
                ProofKind::WindowPoSt,
                registered,
                vanilla_proofs,
                randomness,
                prover_id,
                partition_index,
            ),
            ProofRequest::WinningPoSt {
                registered,
                vanilla_proofs,
                randomness,
                prover_id,
            } => post(
                ProofKind::WinningPoSt,
                registered,
                vanilla_proofs,
                randomness,
                prover_id,
                0,
            ),
        }
    }
}

/// A request whose inputs have been read: the input of its kind's [`Compound`] (WindowPoSt and
/// WinningPoSt share theirs; the registered proof tells them apart).
#[derive(Debug, Clone)]
pub enum Parsed {
    PoRep(Box<PoRepInput>),
    Snap(SnapInput),
    PoSt(PoStInput),
}

impl Parsed {
    pub fn registered(&self) -> Registered {
        match self {
            Parsed::PoRep(p) => PoRep::registered(p).into(),
            Parsed::Snap(s) => SnapDeals::registered(s).into(),
            // The same for either PoSt kind; the registered proof is what tells them apart.
            Parsed::PoSt(p) => p.registered.into(),
        }
    }

    pub fn kind(&self) -> ProofKind {
        self.registered().kind()
    }

    /// Builds the partition circuits and public inputs and hands them to `sink`. A panic inside
    /// filecoin-proofs on an input it did not expect is caught and reported as an error.
    pub fn build<S: CircuitSink>(self, sink: S) -> Result<S::Out, FilecoinError> {
        let what = format!("building the {} circuits", self.registered());
        let kind = self.kind();
        catch(&what, move || match self {
            Parsed::PoRep(p) => PoRep::build(*p, sink),
            Parsed::Snap(s) => SnapDeals::build(s, sink),
            Parsed::PoSt(p) if kind == ProofKind::WindowPoSt => WindowPoSt::build(p, sink),
            Parsed::PoSt(p) => WinningPoSt::build(p, sink),
        })
    }

    /// Each partition's public inputs as filecoin-proofs' verifier computes them, without
    /// building the circuits; a panic inside filecoin-proofs is caught as in [`Parsed::build`].
    pub fn public_inputs(&self) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
        let what = format!("computing the {} public inputs", self.registered());
        catch(&what, || match self {
            Parsed::PoRep(p) => PoRep::public_inputs(p),
            Parsed::Snap(s) => SnapDeals::public_inputs(s),
            Parsed::PoSt(p) if self.kind() == ProofKind::WindowPoSt => WindowPoSt::public_inputs(p),
            Parsed::PoSt(p) => WinningPoSt::public_inputs(p),
        })
    }
}

/// Runs `f`, turning a panic into an error naming `what`.
pub(crate) fn catch<T>(
    what: &str,
    f: impl FnOnce() -> Result<T, FilecoinError>,
) -> Result<T, FilecoinError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(FilecoinError::invalid(
            what.to_string(),
            format!(
                "filecoin-proofs panicked: {}",
                cuzk_engine::error::panic_text(&*p)
            ),
        ))
    })
}

/// Decodes a bincode (1.x, as filecoin-proofs-api writes it) value of `what`, refusing trailing
/// bytes; allocation is bounded by the input's length.
pub(crate) fn decode_bincode<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
) -> Result<T, FilecoinError> {
    use bincode1::Options;
    bincode1::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| {
            FilecoinError::malformed(format!("{what} (bincode, {} bytes)", bytes.len()), e)
        })
}

/// The prover id of miner actor `f0<id>`: its ID address payload (the id as an unsigned LEB128
/// varint), zero-padded to 32 bytes, as Lotus and Curio derive it.
pub fn prover_id_of_miner(id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            return out;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}

/// 32 bytes from 64 hex digits (a commitment, randomness or prover id), naming `what` on error.
pub fn hex32(what: &str, s: &str) -> Result<[u8; 32], FilecoinError> {
    let s = s.trim().trim_start_matches("0x");
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(FilecoinError::malformed(
            what,
            format!("`{s}` is not 64 hex digits"),
        ));
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .map_err(|e| FilecoinError::malformed(what, e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_leb128_id_payloads() {
        assert_eq!(prover_id_of_miner(0)[..2], [0, 0]);
        assert_eq!(prover_id_of_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_of_miner(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_of_miner(128)[..3], [0x80, 0x01, 0]);
    }

    #[test]
    fn hex_is_checked() {
        assert_eq!(hex32("x", &"01".repeat(32)).unwrap(), [1u8; 32]);
        assert!(hex32("comm_r", "abc")
            .unwrap_err()
            .to_string()
            .contains("malformed comm_r"));
        assert!(hex32("x", &"zz".repeat(32)).is_err());
    }
}
