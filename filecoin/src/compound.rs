//! The seam each Filecoin proof kind fills, cuzk's counterpart of rust-fil-proofs' (storage-proofs')
//! `CompoundProof`: which registered proof a request is for, its partition circuits built from
//! the typed input (handed to a [`CircuitSink`]), the blank circuit (for a setup and layouts),
//! each partition's public inputs, and filecoin-proofs' own verifier over cuzk's proof bytes.
//!
//! [`PoRep`] (`porep/`), [`SnapDeals`] (`snap.rs`), [`WindowPoSt`] and [`WinningPoSt`]
//! (`post.rs`) implement it; [`Parsed`](crate::request::Parsed), `params::blank` and
//! `verify::verify` dispatch a request or a registered proof to its kind.

use blstrs::Scalar;

use crate::error::FilecoinError;
use crate::kind::ProofKind;
use crate::registered::Registered;
use crate::sink::{BlankSink, CircuitSink};

pub use crate::porep::PoRep;
pub use crate::post::{WindowPoSt, WinningPoSt};
pub use crate::snap::SnapDeals;

/// One proof kind: its registered proofs, its typed input, and what is built and checked from
/// them. Everything is built exactly as filecoin-proofs builds it for proving and verifying.
pub trait Compound {
    /// The kind, as the scheduler and the wire name it.
    const KIND: ProofKind;
    /// filecoin-proofs-api's registered proof of this kind (sector size, version, features).
    type Proof: Copy + Into<Registered>;
    /// A request of this kind, its inputs read (nothing built yet).
    type Input;

    /// The registered proof `input` is for: the circuit and parameters it is proved against.
    fn registered(input: &Self::Input) -> Self::Proof;

    /// Builds the partition circuits of `input` and, for each, the public inputs filecoin-proofs
    /// computes for it, and hands them to `sink`. Malformed or inconsistent inputs are errors.
    fn build<S: CircuitSink>(input: Self::Input, sink: S) -> Result<S::Out, FilecoinError>;

    /// Hands `registered`'s blank (witness-free) partition circuit to `sink`, for a parameter
    /// setup or a layout count. A registered proof of another kind is an error.
    fn blank<S: BlankSink>(registered: Self::Proof, sink: S) -> Result<S::Out, FilecoinError>;

    /// Each partition's public inputs (without `one`), as filecoin-proofs' verifier computes
    /// them: what [`build`](Compound::build) hands over, without building any circuit.
    fn public_inputs(input: &Self::Input) -> Result<Vec<Vec<Scalar>>, FilecoinError>;

    /// Whether filecoin-proofs' own verifier of this kind accepts `proof` (cuzk's bytes, 192 per
    /// partition) for `input`. Its `.vk` file must be in filecoin-proofs' parameter cache: a
    /// missing one is an error, never a setup of filecoin-proofs' own.
    fn verify(input: &Self::Input, proof: &[u8]) -> Result<bool, FilecoinError>;
}

/// Hands `registered`'s blank partition circuit to `sink`, by its kind's [`Compound::blank`].
pub fn blank<S: BlankSink>(registered: Registered, sink: S) -> Result<S::Out, FilecoinError> {
    use filecoin_proofs_api::PoStType;
    match registered {
        Registered::Seal(p) => PoRep::blank(p, sink),
        Registered::Update(p) => SnapDeals::blank(p, sink),
        Registered::PoSt(p) => match p.typ() {
            PoStType::Window => WindowPoSt::blank(p, sink),
            PoStType::Winning => WinningPoSt::blank(p, sink),
        },
    }
}

#[cfg(test)]
mod tests {
    use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

    use super::*;
    use crate::layout::{self, CircuitLayout};

    /// `(constraints, inputs, aux, domain, a, b)` of a layout.
    fn counts(l: CircuitLayout) -> [u64; 6] {
        [l.constraints, l.inputs, l.aux, l.domain, l.a, l.b]
    }

    #[test]
    fn blank_circuits_of_every_kind_at_2kib_keep_the_layouts_they_had_before_the_trait() {
        // Counted from each kind's blank circuit before `Compound` named the seam (porep.rs,
        // snap.rs and post.rs's own `blank`); the three PoRep variants share one circuit.
        let porep = [2_687_961, 40, 2_685_673, 1 << 22, 2_674_948, 685_522];
        let cases: [(Registered, [u64; 6]); 6] = [
            (RegisteredSealProof::StackedDrg2KiBV1_1.into(), porep),
            (
                RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep.into(),
                porep,
            ),
            (
                RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep.into(),
                porep,
            ),
            (
                RegisteredUpdateProof::StackedDrg2KiBV1.into(),
                [1_705_044, 5, 1_703_569, 1 << 21, 1_697_194, 444_404],
            ),
            (
                RegisteredPoStProof::StackedDrgWindow2KiBV1_2.into(),
                [21_889, 23, 22_128, 1 << 15, 16_793, 16_029],
            ),
            (
                RegisteredPoStProof::StackedDrgWinning2KiBV1.into(),
                [90_883, 133, 91_674, 1 << 17, 69_433, 66_793],
            ),
        ];
        for (registered, want) in cases {
            let got = counts(layout::of(registered).unwrap());
            assert_eq!(got, want, "{registered}");
        }
    }

    #[test]
    fn each_kind_names_its_own_registered_proofs() {
        assert_eq!(PoRep::KIND, ProofKind::PoRep);
        assert_eq!(SnapDeals::KIND, ProofKind::SnapDeals);
        assert_eq!(WindowPoSt::KIND, ProofKind::WindowPoSt);
        assert_eq!(WinningPoSt::KIND, ProofKind::WinningPoSt);
        let window = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
        let winning = RegisteredPoStProof::StackedDrgWinning2KiBV1;
        assert_eq!(Registered::from(window).kind(), WindowPoSt::KIND);
        assert_eq!(Registered::from(winning).kind(), WinningPoSt::KIND);
        // A PoSt proof of the other kind is refused, not built as its own kind's circuit.
        struct Unused;
        impl BlankSink for Unused {
            type Out = ();
            fn take<C: bellperson::Circuit<Scalar> + Clone + Send + 'static>(self, _: C) {}
        }
        let err = WindowPoSt::blank(winning, Unused).unwrap_err().to_string();
        assert!(err.contains("is a winning-post proof"), "{err}");
        let err = WinningPoSt::blank(window, Unused).unwrap_err().to_string();
        assert!(err.contains("is a window-post proof"), "{err}");
    }
}
