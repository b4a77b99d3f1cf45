//! Every Filecoin proof kind at 2 KiB, from inputs made here with filecoin-proofs (a sector
//! sealed on the CPU, its SnapDeals update, PoSt vanilla proofs), proved by cuzk on the CPU, and
//! accepted by filecoin-proofs' own verifiers. PoRep is also byte-identical to bellperson's
//! `create_proof` for the same `r, s`.
//!
//! The parameters are generated with cuzk's seeded local setup, once, under the target
//! directory: they are **not** Filecoin's production (MPC) parameters, and the proofs verify only
//! against them.

use std::sync::OnceLock;

use bellperson::groth16::{create_proof, Parameters};
use blstrs::{Bls12, Scalar};
use cuzk_engine::CpuBackend;
use cuzk_filecoin::prove::{prove, Rs};
use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::sample::{self, Sealed};
use cuzk_filecoin::{
    layout, params, verify, CircuitSink, FilecoinError, Partitions, ProofRequest, Registered,
};
use cuzk_srs::Srs;
use ff::Field;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;

mod common;
use common::{param_dir, srs_for};

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

struct Sectors {
    _dir: tempfile::TempDir,
    a: Sealed,
    b: Sealed,
}

/// Two 2 KiB sectors sealed with filecoin-proofs (add_piece, PC1, PC2, C1), sharing a prover id
/// for PoSt.
fn sectors() -> &'static Sectors {
    static S: OnceLock<Sectors> = OnceLock::new();
    S.get_or_init(|| {
        param_dir();
        let dir = tempfile::tempdir().unwrap();
        let a = sample::seal(SEAL, &dir.path().join("a"), 7, 1, None).unwrap();
        let b = sample::seal(SEAL, &dir.path().join("b"), 9, 2, Some(a.prover_id)).unwrap();
        Sectors { _dir: dir, a, b }
    })
}

fn parsed(req: ProofRequest) -> Parsed {
    req.parse().unwrap()
}

/// bellperson's `create_proof` over the same circuits, the reference the bytes are compared with.
struct Bellperson<'a> {
    params: &'a Parameters<Bls12>,
    rs: &'a [(Scalar, Scalar)],
}

impl CircuitSink for Bellperson<'_> {
    type Out = Vec<u8>;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        for (c, (r, s)) in parts.circuits.into_iter().zip(self.rs) {
            create_proof::<Bls12, _, _>(c, self.params, *r, *s)
                .unwrap()
                .write(&mut out)
                .unwrap();
        }
        out
    }
}

#[test]
fn porep_2kib_is_bellpersons_bytes_and_passes_verify_seal() {
    let s = &sectors().a;
    let registered = Registered::Seal(SEAL);
    let srs = srs_for(registered);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let rs = vec![(Scalar::random(&mut rng), Scalar::random(&mut rng))];

    let req = parsed(s.porep_request());
    let ours = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Fixed(&rs)).unwrap();
    let bytes = ours.to_bytes();
    assert_eq!(bytes.len(), 192);

    let path = params::locate(registered, &param_dir()).unwrap();
    let bp = Parameters::<Bls12>::read(std::fs::File::open(&path).unwrap(), false).unwrap();
    let theirs = req
        .clone()
        .build(Bellperson {
            params: &bp,
            rs: &rs,
        })
        .unwrap();
    assert_eq!(
        bytes, theirs,
        "cuzk's PoRep proof differs from bellperson's for the same r, s"
    );

    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_seal rejected cuzk's proof"
    );
    let mut flipped = bytes.clone();
    flipped[100] ^= 1;
    assert!(
        !verify::verify(&req, &flipped).unwrap_or(false),
        "verify_seal accepted a flipped proof"
    );

    // Random r, s: still accepted, and different bytes.
    let random = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert_ne!(random, bytes);
    assert!(verify::verify(&req, &random).unwrap());
}

#[test]
fn porep_2kib_synthetic_and_non_interactive_variants() {
    let dir = tempfile::tempdir().unwrap();
    let srs = srs_for(Registered::Seal(SEAL));
    // Synthetic PoRep: the C1 output comes from the synthetic challenges; verify_seal accepts.
    let syn = sample::seal(
        RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        &dir.path().join("syn"),
        4,
        8,
        None,
    )
    .unwrap();
    let req = parsed(syn.porep_request());
    // The three 2 KiB variants share one parameter file.
    assert_eq!(
        req.registered().params_file_name().unwrap(),
        Registered::Seal(SEAL).params_file_name().unwrap()
    );
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_seal rejected a synthetic-PoRep proof"
    );

    // NI-PoRep: 13 partitions at 2 KiB (126 at 32 GiB); the first is proved here and
    // self-verified against filecoin-proofs' inputs (all 13 on 2 cores would take minutes).
    // Their aggregation, and so filecoin-proofs' verification, is out of scope: verify says so.
    let ni = sample::seal(
        RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        &dir.path().join("ni"),
        5,
        9,
        None,
    )
    .unwrap();
    let req = parsed(ni.porep_request());
    let proved = req.clone().build(FirstPartition { srs: &srs }).unwrap();
    assert_eq!(proved, 13, "NI-PoRep partitions at 2 KiB");
    assert!(verify::verify(&req, &[0u8; 192])
        .unwrap_err()
        .to_string()
        .contains("aggregate"));
}

/// Proves the first partition only, checking its public inputs against filecoin-proofs'; returns
/// how many partitions there were.
struct FirstPartition<'a> {
    srs: &'a Srs,
}

impl CircuitSink for FirstPartition<'_> {
    type Out = usize;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(self, parts: Partitions<C>) -> usize {
        let n = parts.circuits.len();
        let first = parts.circuits.into_iter().next().unwrap();
        let mut rng = rand::thread_rng();
        let batch = cuzk_engine::Prover::new(self.srs, &CpuBackend::new())
            .prove_random(vec![first], &mut rng)
            .unwrap();
        cuzk_filecoin::prove::check_inputs(&batch.public_inputs, &parts.public_inputs[..1])
            .unwrap();
        n
    }
}

#[test]
fn porep_refuses_a_vanilla_proof_of_another_sector() {
    let (a, b) = (&sectors().a, &sectors().b);
    let srs = srs_for(Registered::Seal(SEAL));
    // a's C1 output with b's commitments: the circuit is unsatisfied, no bytes come back.
    let mut c1: serde_json::Value = serde_json::from_slice(&a.c1_json).unwrap();
    c1["comm_r"] = serde_json::to_value(b.comm_r).unwrap();
    let req = ProofRequest::PoRep {
        c1_json: serde_json::to_vec(&c1).unwrap(),
        prover_id: None,
        sector_id: None,
    };
    let err = prove(parsed(req), &srs, &CpuBackend::new(), Rs::Random).unwrap_err();
    assert!(
        err.to_string().contains("nsatisfied") || err.to_string().contains("differ"),
        "{err}"
    );
}

#[test]
fn snap_deals_2kib_passes_verify_empty_sector_update_proof() {
    let s = &sectors().a;
    let dir = tempfile::tempdir().unwrap();
    let req = parsed(sample::snap(s, dir.path(), 11).unwrap());
    let srs = srs_for(req.registered());
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert_eq!(bytes.len(), 192);
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_empty_sector_update_proof rejected cuzk's proof"
    );

    // The same vanilla proofs against another comm_d_new: refused before any bytes exist.
    let Parsed::Snap(mut other) = req else {
        unreachable!()
    };
    other.comm_d_new = sectors().b.comm_d;
    assert!(prove(Parsed::Snap(other), &srs, &CpuBackend::new(), Rs::Random).is_err());
}

#[test]
fn window_post_2kib_passes_verify_window_post() {
    let (a, b) = (&sectors().a, &sectors().b);
    let mut both = vec![a.clone(), b.clone()];
    both.sort_by_key(|s| s.sector_id);
    let req = parsed(sample::window_post(&both, a.prover_id, 5).unwrap());
    let srs = srs_for(req.registered());
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_window_post rejected cuzk's proof"
    );

    // Vanilla proofs for other randomness do not prove this request.
    let Parsed::PoSt(mut other) = req else {
        unreachable!()
    };
    other.randomness[0] ^= 1;
    assert!(prove(Parsed::PoSt(other), &srs, &CpuBackend::new(), Rs::Random).is_err());
}

#[test]
fn winning_post_2kib_passes_verify_winning_post() {
    let a = &sectors().a;
    let req = parsed(sample::winning_post(a, a.prover_id, 6).unwrap());
    let srs = srs_for(req.registered());
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_winning_post rejected cuzk's proof"
    );

    // The leaf challenges follow the randomness (the prover id only picks the sector, and there
    // is one): other randomness is refused.
    let Parsed::PoSt(mut other) = req else {
        unreachable!()
    };
    other.randomness[3] ^= 1;
    assert!(prove(Parsed::PoSt(other), &srs, &CpuBackend::new(), Rs::Random).is_err());
}

#[test]
fn blank_circuit_layouts_match_the_generated_parameters() {
    let a = &sectors().a;
    let dir = tempfile::tempdir().unwrap();
    let reqs = [
        a.porep_request(),
        sample::snap(a, dir.path(), 12).unwrap(),
        sample::winning_post(a, a.prover_id, 1).unwrap(),
    ];
    for req in reqs {
        let registered = parsed(req).registered();
        let want = layout::of(registered).unwrap();
        let srs = srs_for(registered);
        assert!(
            want.matches(&srs),
            "{registered}: counted {want:?}, parameters {:?}",
            layout::CircuitLayout::of_srs(&srs)
        );
        let file_len = std::fs::metadata(srs.path()).unwrap().len();
        assert_eq!(
            want.params_bytes(),
            file_len,
            "{registered}: parameter file size"
        );
    }
    // The real 2 KiB PoRep partition (DESIGN.md): 2,687,921 constraints... counted with the input rows.
    let porep = layout::of(Registered::Seal(SEAL)).unwrap();
    assert_eq!(porep.inputs, 40, "39 public inputs and one");
    assert_eq!(porep.domain, 1 << 22);
}

#[test]
fn bad_inputs_are_clear_errors() {
    let a = &sectors().a;
    let e = |r: ProofRequest| {
        r.parse()
            .and_then(|p| p.build(Nothing))
            .unwrap_err()
            .to_string()
    };

    let err = e(ProofRequest::PoRep {
        c1_json: b"{\"registered_proof\": \"StackedDrg2KiBV1_1\"".to_vec(),
        prover_id: None,
        sector_id: None,
    });
    assert!(err.contains("malformed C1 output"), "{err}");
    let truncated = a.c1_json[..a.c1_json.len() / 2].to_vec();
    assert!(e(ProofRequest::PoRep {
        c1_json: truncated,
        prover_id: None,
        sector_id: None
    })
    .contains("malformed"));

    // A registered proof of another sector size than the vanilla proofs'.
    let mut c1: serde_json::Value = serde_json::from_slice(&a.c1_json).unwrap();
    c1["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let err = e(ProofRequest::PoRep {
        c1_json: serde_json::to_vec(&c1).unwrap(),
        prover_id: None,
        sector_id: None,
    });
    assert!(err.contains("2048-byte sectors"), "{err}");

    let err = e(ProofRequest::WinningPoSt {
        registered: 0,
        vanilla_proofs: vec![vec![1, 2, 3]],
        randomness: [0; 32],
        prover_id: [0; 32],
    });
    assert!(
        err.contains("malformed WinningPoSt vanilla proof 0"),
        "{err}"
    );
    let err = e(ProofRequest::SnapDeals {
        registered: 9,
        vanilla_proofs: vec![],
        comm_r_old: [0; 32],
        comm_r_new: [0; 32],
        comm_d_new: [0; 32],
    });
    assert!(err.contains("abi number 9"), "{err}");
    let err = e(ProofRequest::WindowPoSt {
        registered: 0,
        vanilla_proofs: vec![],
        randomness: [0; 32],
        prover_id: [0; 32],
        partition_index: 0,
    });
    assert!(err.contains("is a winning-post proof"), "{err}");

    // A sector size without parameters: the expected file and directory are named.
    let empty = tempfile::tempdir().unwrap();
    let missing = params::locate(
        Registered::Seal(RegisteredSealProof::StackedDrg32GiBV1_1),
        empty.path(),
    )
    .unwrap_err();
    let msg = missing.to_string();
    assert!(
        matches!(missing, FilecoinError::MissingParams { .. })
            && msg.contains("v28-stacked-proof-of-replication")
            && msg.contains(&empty.path().display().to_string()),
        "{msg}"
    );
}

/// A sink that only builds the circuits.
struct Nothing;
impl CircuitSink for Nothing {
    type Out = ();
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(self, _: Partitions<C>) {}
}

/// The public inputs a build hands over with its circuits.
struct Inputs;
impl CircuitSink for Inputs {
    type Out = Vec<Vec<Scalar>>;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Self::Out {
        parts.public_inputs
    }
}

#[test]
fn public_inputs_computed_alone_are_those_each_kind_builds_with_its_circuits() {
    let (a, b) = (&sectors().a, &sectors().b);
    let dir = tempfile::tempdir().unwrap();
    let mut both = vec![a.clone(), b.clone()];
    both.sort_by_key(|s| s.sector_id);
    let reqs = [
        a.porep_request(),
        sample::snap(a, dir.path(), 14).unwrap(),
        sample::window_post(&both, a.prover_id, 15).unwrap(),
        sample::winning_post(a, a.prover_id, 16).unwrap(),
    ];
    for req in reqs {
        let p = parsed(req);
        let kind = p.kind();
        let alone = p.public_inputs().unwrap();
        let built = p.build(Inputs).unwrap();
        assert!(!alone.is_empty(), "{kind}: no partitions");
        assert!(alone == built, "{kind}: the public inputs differ");
    }
}

#[test]
fn a_parameter_file_of_another_circuit_is_refused() {
    // A WinningPoSt parameter file where the PoRep one should be: a shape error naming the
    // parameters, no proof.
    let a = &sectors().a;
    let winning = parsed(sample::winning_post(a, a.prover_id, 2).unwrap()).registered();
    let wrong = srs_for(winning);
    let err = prove(
        parsed(a.porep_request()),
        &wrong,
        &CpuBackend::new(),
        Rs::Random,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("parameters"), "{err}");
}

/// Records the first partition and returns the recording and its assignment.
struct Record;
impl CircuitSink for Record {
    type Out = (cuzk_engine::recorded::Recording, cuzk_engine::Assignment);
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Self::Out {
        let c = parts.circuits.into_iter().next().unwrap();
        let (rec, values) = cuzk_engine::recorded::record(c, true, 0).unwrap();
        let asg = rec.assignment(values.unwrap(), 0).unwrap();
        (rec, asg)
    }
}

/// The first partition's witness on several threads against `rec`.
struct Parallel<'a> {
    rec: &'a cuzk_engine::recorded::Recording,
}
impl CircuitSink for Parallel<'_> {
    type Out = Result<cuzk_engine::Assignment, cuzk_engine::EngineError>;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Self::Out {
        let w = parts
            .parallel_witness
            .expect("PoRep has a parallel witness");
        let c = parts.circuits.into_iter().next().unwrap();
        self.rec.assignment(w(c, self.rec, 0)?, 0)
    }
}

#[test]
fn porep_challenges_synthesized_in_parallel_give_the_same_assignment() {
    let (a, b) = (&sectors().a, &sectors().b);
    let req = parsed(a.porep_request());
    let (rec, sequential) = req.clone().build(Record).unwrap();
    assert!(
        rec.mark("challenge_1").is_some(),
        "the recording marks each challenge"
    );
    // The blank circuit records the same system, so it can be recorded before the first proof.
    let blank = cuzk_filecoin::porep::record_blank(SEAL).unwrap();
    assert_eq!(blank.recording().first_difference(&rec), None);
    assert_eq!(blank.recording().shape_hash(), rec.shape_hash());
    let parallel = req.build(Parallel { rec: &rec }).unwrap().unwrap();
    assert!(
        parallel == sequential,
        "the parallel witness differs from the sequential synthesis"
    );
    // Another sector's partition, against the same recording: a different, satisfied witness.
    let other = parsed(b.porep_request())
        .build(Parallel { rec: &rec })
        .unwrap()
        .unwrap();
    assert!(other != sequential && other.first_unsatisfied().is_none());
    // A recording of another circuit (SnapDeals) is refused: it has no challenge_<i> pieces.
    let dir = tempfile::tempdir().unwrap();
    let snap = parsed(sample::snap(a, dir.path(), 13).unwrap());
    let (snap_rec, _) = snap.build(Record).unwrap();
    assert!(parsed(a.porep_request())
        .build(Parallel { rec: &snap_rec })
        .unwrap()
        .is_err());
}

#[test]
fn porep_circuit_is_filecoin_proofs_own_value_for_value() {
    // cuzk's cut of the partition circuit (its labels' SHA-256 lean) against filecoin-proofs'
    // `StackedCircuit`: the same system, the same witness, on two sectors.
    for s in [&sectors().a, &sectors().b] {
        let req = parsed(s.porep_request());
        let (ours_rec, ours) = req.clone().build(Record).unwrap();
        let Parsed::PoRep(input) = req else {
            panic!("a PoRep request")
        };
        let (theirs_rec, theirs) = input.build_reference(Record).unwrap();
        assert_eq!(theirs_rec.first_difference(&ours_rec), None);
        assert!(
            ours == theirs,
            "the witness differs from filecoin-proofs' circuit's"
        );
        assert!(ours.first_unsatisfied().is_none());
    }
}
