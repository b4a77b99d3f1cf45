//! Synthetic PoSt vanilla proofs (`cuzk_filecoin::synth_post`): at 2 KiB they pass filecoin-proofs'
//! vanilla verification, and a WindowPoSt and a WinningPoSt proved from them by cuzk on the CPU
//! are accepted by `verify_window_post` and `verify_winning_post`; one byte changed in a Merkle
//! path is refused, naming the sector and partition; at 32 GiB they are generated, timed, parsed
//! and built (a WinningPoSt, and a WindowPoSt partition of a few sectors: the full 2349 are timed
//! by `cuzk filecoin synth-post`, see the report).
//!
//! The parameters are kinds.rs's: cuzk's seeded local setup, cached in the same directory under
//! the target directory (generated once by whichever test binary runs first).

use cuzk_engine::CpuBackend;
use cuzk_filecoin::prove::{prove, Rs};
use cuzk_filecoin::synth_post::{self, check, SynthPoSt};
use cuzk_filecoin::{verify, ProofKind, ProofRequest};
use filecoin_proofs::{FallbackPoStSectorProof, SectorShape2KiB};
use filecoin_proofs_api::RegisteredPoStProof;
use serde_json::Value;

mod common;
use common::{param_dir, srs_for, Count};

fn synth(kind: ProofKind, size: &str, sectors: Option<usize>, seed: u64) -> SynthPoSt {
    param_dir();
    let r = synth_post::registered_for(kind, size).unwrap();
    synth_post::generate(r, sectors, seed).unwrap()
}

/// filecoin-proofs' own vanilla step over the 2 KiB proofs: `single_partition_vanilla_proofs`
/// (which runs storage-proofs' `FallbackPoSt::verify` over the partition).
fn passes_filecoin_proofs_vanilla_verification(s: &SynthPoSt) {
    use filecoin_hashers::Hasher;
    use storage_proofs_core::compound_proof::{self, CompoundProof};
    use storage_proofs_post::fallback::{self, FallbackPoStCompound, PublicSector};
    type Tree = SectorShape2KiB;
    type D = <<Tree as storage_proofs_core::merkle::MerkleTreeTrait>::Hasher as Hasher>::Domain;
    let config = s.registered.as_v1_config();
    let vanilla_params = match config.typ {
        filecoin_proofs::PoStType::Window => {
            filecoin_proofs::parameters::window_post_setup_params(&config)
        }
        filecoin_proofs::PoStType::Winning => {
            filecoin_proofs::parameters::winning_post_setup_params(&config).unwrap()
        }
    };
    let pp = FallbackPoStCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions: None,
        priority: false,
    })
    .unwrap();
    let proofs: Vec<FallbackPoStSectorProof<Tree>> = s
        .vanilla_proofs
        .iter()
        .map(|b| bincode1::deserialize(b).unwrap())
        .collect();
    let pub_in = fallback::PublicInputs {
        randomness: filecoin_proofs::as_safe_commitment::<D, _>(&s.randomness, "r").unwrap(),
        prover_id: filecoin_proofs::as_safe_commitment::<D, _>(&s.prover_id, "p").unwrap(),
        sectors: proofs
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: Some(0),
    };
    filecoin_proofs::single_partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_in, &proofs)
        .expect("filecoin-proofs' vanilla verification refuses the synthetic proofs");
}

/// Proves `s` with cuzk on the CPU and checks the proof with filecoin-proofs' verifier.
fn proved_and_accepted(s: &SynthPoSt) {
    let req = s.request().parse().unwrap();
    let srs = srs_for(req.registered());
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert_eq!(bytes.len(), 192);
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "{}: filecoin-proofs' verifier rejected cuzk's proof of synthetic inputs",
        s.kind()
    );
}

#[test]
fn a_synthetic_window_post_is_accepted_by_filecoin_proofs_verifier() {
    let s = synth(ProofKind::WindowPoSt, "2KiB", None, 1);
    assert_eq!(s.registered, RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
    assert_eq!(
        (s.sectors.len(), s.challenges),
        (2, 20),
        "2 KiB: a partition of 2 sectors × 10 challenges"
    );
    assert!(s.sectors.windows(2).all(|w| w[0].0 < w[1].0));
    passes_filecoin_proofs_vanilla_verification(&s);
    proved_and_accepted(&s);
    // Deterministic in the seed; another seed, other sectors.
    assert_eq!(
        synth(ProofKind::WindowPoSt, "2KiB", None, 1).vanilla_proofs,
        s.vanilla_proofs
    );
    assert_ne!(
        synth(ProofKind::WindowPoSt, "2KiB", None, 2).sectors,
        s.sectors
    );
    // One sector of the two is a partition too (filecoin-proofs repeats the last).
    let one = synth(ProofKind::WindowPoSt, "2KiB", Some(1), 3);
    passes_filecoin_proofs_vanilla_verification(&one);
    assert!(synth_post::generate(s.registered, Some(3), 1).is_err());
}

#[test]
fn a_synthetic_winning_post_is_accepted_by_filecoin_proofs_verifier() {
    let s = synth(ProofKind::WinningPoSt, "2KiB", None, 4);
    assert_eq!(s.registered, RegisteredPoStProof::StackedDrgWinning2KiBV1);
    assert_eq!((s.sectors.len(), s.challenges), (1, 66));
    passes_filecoin_proofs_vanilla_verification(&s);
    proved_and_accepted(&s);
    assert!(synth_post::generate(s.registered, Some(2), 4).is_err());
}

/// `vanilla` (a 2 KiB bincode sector proof) with bit 0 of byte 0 of a sibling on its first
/// inclusion proof's path flipped.
fn damaged(vanilla: &[u8]) -> Vec<u8> {
    let p: FallbackPoStSectorProof<SectorShape2KiB> = bincode1::deserialize(vanilla).unwrap();
    let mut v = serde_json::to_value(&p).unwrap();
    let at = "/vanilla_proof/sectors/0/inclusion_proofs/0/data/Single/path/path/1/hashes/3/0";
    let byte = v.pointer_mut(at).unwrap_or_else(|| panic!("no {at}"));
    *byte = Value::from(byte.as_u64().unwrap() ^ 1);
    let p: FallbackPoStSectorProof<SectorShape2KiB> = serde_json::from_value(v).unwrap();
    bincode1::serialize(&p).unwrap()
}

#[test]
fn a_flipped_byte_in_a_path_is_refused_naming_the_sector_and_partition() {
    for (kind, bad) in [(ProofKind::WindowPoSt, 1), (ProofKind::WinningPoSt, 0)] {
        let s = synth(kind, "2KiB", None, 5);
        let mut req = s.request();
        let (ProofRequest::WindowPoSt { vanilla_proofs, .. }
        | ProofRequest::WinningPoSt { vanilla_proofs, .. }) = &mut req
        else {
            unreachable!()
        };
        vanilla_proofs[bad] = damaged(&vanilla_proofs[bad]);
        let err =
            check::verify_vanilla(s.registered, vanilla_proofs, &s.randomness, &s.prover_id, 0)
                .unwrap_err()
                .to_string();
        let sector = s.sectors[bad].0;
        assert!(
            err.contains(&format!(
                "partition 0 vanilla proof {bad} (sector {sector})"
            )) && err.contains("1 of"),
            "{kind}: {err}"
        );
        // cuzk's request refuses it as well, before any proving.
        let parsed = req.parse().unwrap();
        let srs = srs_for(parsed.registered());
        let e = prove(parsed, &srs, &CpuBackend::new(), Rs::Random).unwrap_err();
        println!("{kind}: {err}\n  cuzk: {e}");
    }
}

#[test]
fn synthetic_post_at_32_gib_is_generated_in_seconds_and_builds() {
    for (kind, sectors, want) in [
        (ProofKind::WinningPoSt, None, (1, 66)),
        (ProofKind::WindowPoSt, Some(16), (16, 160)),
    ] {
        let s = synth(kind, "32GiB", sectors, 7);
        let bytes: usize = s.vanilla_proofs.iter().map(Vec::len).sum();
        println!(
            "synth-post {kind} 32GiB: {:.2} s, {} sectors, {} challenges, {bytes} bytes",
            s.elapsed.as_secs_f64(),
            s.sectors.len(),
            s.challenges,
        );
        assert_eq!((s.sectors.len(), s.challenges), want, "{kind}");
        check::verify_vanilla(
            s.registered,
            &s.vanilla_proofs,
            &s.randomness,
            &s.prover_id,
            0,
        )
        .unwrap();
        let (n, inputs) = s.request().parse().unwrap().build(Count).unwrap();
        assert_eq!((n, inputs.len()), (1, 1), "{kind}: one partition");
        assert!(inputs[0] > 0);
    }
    assert_eq!(
        synth_post::registered_for(ProofKind::WindowPoSt, "32GiB").unwrap(),
        RegisteredPoStProof::StackedDrgWindow32GiBV1_2
    );
    assert_eq!(
        RegisteredPoStProof::StackedDrgWindow32GiBV1_2.sector_count(),
        2349,
        "the default partition at 32 GiB"
    );
    assert!(synth_post::registered_for(ProofKind::PoRep, "32GiB").is_err());
}
