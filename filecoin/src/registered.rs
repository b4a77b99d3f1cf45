//! Registered proofs: which circuit (kind, sector size, API version and features) a request is
//! for, by name or by the Go `abi` number Curio and Lotus use, and the standard parameter file
//! names that circuit is proved against.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use serde::{Deserialize, Serialize};

use crate::error::FilecoinError;
use crate::kind::ProofKind;

/// One registered proof of filecoin-proofs-api 19.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Registered {
    Seal(RegisteredSealProof),
    Update(RegisteredUpdateProof),
    PoSt(RegisteredPoStProof),
}

/// The enums are append-only and declared in `abi` order, so a variant's position is its number.
const SEAL: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

const UPDATE: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

const POST: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

/// The seal proof with `abi` number `n`.
pub fn seal_from_abi(n: u64) -> Result<RegisteredSealProof, FilecoinError> {
    SEAL.get(n as usize).copied().ok_or_else(|| {
        FilecoinError::invalid(
            "registered seal proof",
            format!("abi number {n} (0–19 exist)"),
        )
    })
}

/// The update proof with `abi` number `n`.
pub fn update_from_abi(n: u64) -> Result<RegisteredUpdateProof, FilecoinError> {
    UPDATE.get(n as usize).copied().ok_or_else(|| {
        FilecoinError::invalid(
            "registered update proof",
            format!("abi number {n} (0–4 exist)"),
        )
    })
}

/// The PoSt proof with `abi` number `n`.
pub fn post_from_abi(n: u64) -> Result<RegisteredPoStProof, FilecoinError> {
    POST.get(n as usize).copied().ok_or_else(|| {
        FilecoinError::invalid(
            "registered PoSt proof",
            format!("abi number {n} (0–14 exist)"),
        )
    })
}

/// Parses a registered proof of `kind` from its name (`StackedDrg2KiBV1_1`) or `abi` number.
pub fn parse(kind: ProofKind, s: &str) -> Result<Registered, FilecoinError> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return match kind {
            ProofKind::PoRep => seal_from_abi(n).map(Registered::Seal),
            ProofKind::SnapDeals => update_from_abi(n).map(Registered::Update),
            ProofKind::WindowPoSt | ProofKind::WinningPoSt => {
                let p = post_from_abi(n)?;
                Registered::PoSt(p).expect_kind(kind)
            }
        };
    }
    let by_name = |names: Vec<(String, Registered)>| {
        names
            .into_iter()
            .find(|(n, _)| n == s)
            .map(|(_, r)| r)
            .ok_or_else(|| {
                FilecoinError::invalid(
                    format!("registered {kind} proof"),
                    format!("`{s}` is not one of its names or abi numbers"),
                )
            })
    };
    let r = match kind {
        ProofKind::PoRep => by_name(
            SEAL.iter()
                .map(|p| (format!("{p:?}"), Registered::Seal(*p)))
                .collect(),
        )?,
        ProofKind::SnapDeals => by_name(
            UPDATE
                .iter()
                .map(|p| (format!("{p:?}"), Registered::Update(*p)))
                .collect(),
        )?,
        ProofKind::WindowPoSt | ProofKind::WinningPoSt => by_name(
            POST.iter()
                .map(|p| (format!("{p:?}"), Registered::PoSt(*p)))
                .collect(),
        )?,
    };
    r.expect_kind(kind)
}

impl Registered {
    pub fn kind(self) -> ProofKind {
        match self {
            Registered::Seal(_) => ProofKind::PoRep,
            Registered::Update(_) => ProofKind::SnapDeals,
            Registered::PoSt(p) => match p.typ() {
                filecoin_proofs_api::PoStType::Winning => ProofKind::WinningPoSt,
                filecoin_proofs_api::PoStType::Window => ProofKind::WindowPoSt,
            },
        }
    }

    /// `self` if it is a proof of `kind`, else an error naming both.
    pub(crate) fn expect_kind(self, kind: ProofKind) -> Result<Registered, FilecoinError> {
        if self.kind() == kind {
            Ok(self)
        } else {
            Err(FilecoinError::invalid(
                format!("registered {kind} proof"),
                format!("{self} is a {} proof", self.kind()),
            ))
        }
    }

    /// The `abi` number.
    pub fn abi(self) -> u64 {
        let pos = match self {
            Registered::Seal(p) => SEAL.iter().position(|x| *x == p),
            Registered::Update(p) => UPDATE.iter().position(|x| *x == p),
            Registered::PoSt(p) => POST.iter().position(|x| *x == p),
        };
        pos.unwrap_or(usize::MAX) as u64
    }

    pub fn sector_size(self) -> u64 {
        u64::from(match self {
            Registered::Seal(p) => p.sector_size(),
            Registered::Update(p) => p.sector_size(),
            Registered::PoSt(p) => p.sector_size(),
        })
    }

    /// The standard `.params` file name (`v28-…​.params`), the same for every machine; the
    /// directory is the node's parameter cache.
    pub fn params_file_name(self) -> Result<String, FilecoinError> {
        let path = match self {
            Registered::Seal(p) => p.cache_params_path(),
            Registered::Update(p) => {
                return Ok(storage_proofs_core::parameter_cache::parameter_id(
                    &crate::snap::cache_identifier(p)?,
                ))
            }
            Registered::PoSt(p) => p.cache_params_path(),
        }
        .map_err(FilecoinError::proofs(format!(
            "parameter file name of {self}"
        )))?;
        file_name(&path)
    }

    /// The standard verifying-key file name (`v28-…​.vk`), read by filecoin-proofs' verifiers.
    pub fn vk_file_name(self) -> Result<String, FilecoinError> {
        let path = match self {
            Registered::Seal(p) => p.cache_verifying_key_path(),
            Registered::Update(p) => {
                return Ok(storage_proofs_core::parameter_cache::verifying_key_id(
                    &crate::snap::cache_identifier(p)?,
                ))
            }
            Registered::PoSt(p) => p.cache_verifying_key_path(),
        }
        .map_err(FilecoinError::proofs(format!(
            "verifying key file name of {self}"
        )))?;
        file_name(&path)
    }
}

impl From<RegisteredSealProof> for Registered {
    fn from(p: RegisteredSealProof) -> Registered {
        Registered::Seal(p)
    }
}

impl From<RegisteredUpdateProof> for Registered {
    fn from(p: RegisteredUpdateProof) -> Registered {
        Registered::Update(p)
    }
}

impl From<RegisteredPoStProof> for Registered {
    fn from(p: RegisteredPoStProof) -> Registered {
        Registered::PoSt(p)
    }
}

fn file_name(path: &std::path::Path) -> Result<String, FilecoinError> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| FilecoinError::invalid("parameter path", path.display()))
}

impl std::fmt::Display for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Registered::Seal(p) => write!(f, "{p:?}"),
            Registered::Update(p) => write!(f, "{p:?}"),
            Registered::PoSt(p) => write!(f, "{p:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_numbers_round_trip_and_match_the_api_ids() {
        for (i, p) in SEAL.iter().enumerate() {
            assert_eq!(Registered::Seal(*p).abi(), i as u64);
            assert_eq!(seal_from_abi(i as u64).unwrap(), *p);
        }
        // filecoin-proofs-api's own porep-id table agrees with the positions (its first 8 bytes).
        for p in SEAL {
            let id = p.as_v1_config().porep_id;
            assert_eq!(
                Registered::Seal(p).abi(),
                u64::from_le_bytes(id[..8].try_into().unwrap())
            );
        }
        assert_eq!(
            post_from_abi(10).unwrap(),
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2
        );
        assert!(seal_from_abi(20).is_err());
        assert!(post_from_abi(15).is_err());
        assert!(update_from_abi(5).is_err());
    }

    #[test]
    fn names_and_numbers_parse_per_kind() {
        assert_eq!(
            parse(ProofKind::PoRep, "StackedDrg2KiBV1_1").unwrap(),
            Registered::Seal(RegisteredSealProof::StackedDrg2KiBV1_1)
        );
        assert_eq!(
            parse(ProofKind::PoRep, "8").unwrap(),
            Registered::Seal(RegisteredSealProof::StackedDrg32GiBV1_1)
        );
        assert_eq!(
            parse(ProofKind::WinningPoSt, "0").unwrap().kind(),
            ProofKind::WinningPoSt
        );
        // A window proof's number is refused for a winning request, and the reverse.
        assert!(parse(ProofKind::WinningPoSt, "5").is_err());
        assert!(parse(ProofKind::WindowPoSt, "StackedDrgWinning2KiBV1").is_err());
        assert!(parse(ProofKind::SnapDeals, "StackedDrg2KiBV1_9").is_err());
    }
}
