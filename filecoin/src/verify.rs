//! filecoin-proofs' own verifiers over cuzk's proof bytes (`verify_seal`,
//! `verify_empty_sector_update_proof`, `verify_window_post`, `verify_winning_post`: each kind's
//! [`Compound::verify`]), and the guard every one of them runs behind.
//!
//! They read the verifying key from the `.vk` file in filecoin-proofs' parameter cache
//! (`FIL_PROOFS_PARAMETER_CACHE`, read once per process). Finding none, filecoin-proofs would
//! run a parameter setup of its own, so a missing `.vk` is an error here instead.

use crate::compound::{Compound, PoRep, SnapDeals, WindowPoSt, WinningPoSt};
use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::request::{catch, Parsed};

/// Whether filecoin-proofs accepts `proof` for the request `parsed`.
pub fn verify(parsed: &Parsed, proof: &[u8]) -> Result<bool, FilecoinError> {
    match parsed {
        Parsed::PoRep(p) => PoRep::verify(p, proof),
        Parsed::Snap(s) => SnapDeals::verify(s, proof),
        Parsed::PoSt(p) if parsed.kind() == ProofKind::WindowPoSt => WindowPoSt::verify(p, proof),
        Parsed::PoSt(p) => WinningPoSt::verify(p, proof),
    }
}

/// Runs `verifier` (a filecoin-proofs verifier of a `registered` proof; its argument is the
/// context its errors name) once `registered`'s `.vk` file is in filecoin-proofs' parameter
/// cache, a panic inside filecoin-proofs caught as an error.
pub(crate) fn guarded(
    registered: Registered,
    verifier: impl FnOnce(&str) -> Result<bool, FilecoinError>,
) -> Result<bool, FilecoinError> {
    let (dir, file) = (
        storage_proofs_core::parameter_cache::parameter_cache_dir(),
        registered.vk_file_name()?,
    );
    if !dir.join(&file).is_file() {
        return Err(FilecoinError::MissingParams {
            proof: format!("{registered} (verifying key)"),
            file,
            dir,
        });
    }
    let ctx = format!("filecoin-proofs verifying a {registered} proof");
    catch(&ctx, || verifier(&ctx))
}
