//! Synthetic C1 outputs (`cuzk_filecoin::synth_c1`): at 2 KiB proved by cuzk on the CPU and
//! accepted by filecoin-proofs' `verify_seal`, with the same structure as a really sealed
//! sector's C1; damaged (one byte of a Merkle path, one label) refused by cuzk and, proved
//! anyway with bellperson, rejected by `verify_seal`; at 32 GiB and 64 GiB generated, timed,
//! parsed and built into 10 partitions with their public inputs (no parameters, no proof).
//!
//! The parameters are kinds.rs's: cuzk's seeded local setup, cached in the same directory under
//! the target directory (generated once by whichever test binary runs first).

use std::sync::OnceLock;

use bellperson::groth16::{create_random_proof, Parameters};
use blstrs::{Bls12, Scalar};
use cuzk_engine::CpuBackend;
use cuzk_filecoin::prove::{prove, Rs};
use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::synth_c1::{self, writer::verify_c1};
use cuzk_filecoin::{params, sample, verify, CircuitSink, Partitions, ProofRequest, Registered};
use cuzk_srs::Srs;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use serde_json::Value;

mod common;
use common::{param_dir, srs_for, Count};

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

fn srs() -> Srs {
    srs_of(SEAL)
}

/// The parameters of `r` (generated into the cache the first time, by cuzk's seeded setup).
fn srs_of(r: RegisteredSealProof) -> Srs {
    srs_for(Registered::Seal(r))
}

fn synth_2kib() -> &'static synth_c1::SynthC1 {
    static S: OnceLock<synth_c1::SynthC1> = OnceLock::new();
    S.get_or_init(|| {
        param_dir();
        synth_c1::generate(SEAL, 1).unwrap()
    })
}

/// The JSON's shape: object keys, array lengths, number-ness; not the values.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        Value::Number(_) => Value::from(0),
        other => other.clone(),
    }
}

#[test]
fn synthetic_c1_2kib_has_a_sealed_sectors_structure_and_passes_verify_seal() {
    let syn = synth_2kib();
    let dir = tempfile::tempdir().unwrap();
    let sealed = sample::seal(SEAL, dir.path(), 3, 5, None).unwrap();
    let a: Value = serde_json::from_slice(&syn.c1_json).unwrap();
    let b: Value = serde_json::from_slice(&sealed.c1_json).unwrap();
    assert!(
        shape(&a) == shape(&b),
        "the synthetic C1 output's JSON shape differs from a sealed sector's"
    );
    assert_eq!(
        (syn.partitions, syn.challenges),
        (1, 2),
        "2 KiB: 1 partition of 2 challenges"
    );
    // Both pass storage-proofs' vanilla verification.
    for json in [&syn.c1_json, &sealed.c1_json] {
        let c1: SealCommitPhase1Output = serde_json::from_slice(json).unwrap();
        verify_c1(&c1).unwrap();
    }

    let req = syn.porep_request().parse().unwrap();
    let bytes = prove(req.clone(), &srs(), &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    assert_eq!(bytes.len(), 192);
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_seal rejected cuzk's proof of the synthetic C1 output"
    );
    // Deterministic in the seed; another seed, another sector.
    assert_eq!(synth_c1::generate(SEAL, 1).unwrap().c1_json, syn.c1_json);
    assert_ne!(synth_c1::generate(SEAL, 2).unwrap().comm_r, syn.comm_r);
}

/// At 512 MiB against a really sealed sector (PC1 takes minutes: not in CI; run with
/// `--ignored` on a machine with cores): the same JSON shape, and both pass vanilla verification.
#[test]
#[ignore = "seals a 512 MiB sector (minutes); run with --ignored"]
fn synthetic_c1_512mib_has_a_sealed_sectors_structure() {
    param_dir();
    let r = RegisteredSealProof::StackedDrg512MiBV1_1;
    let syn = synth_c1::generate(r, 3).unwrap();
    println!("synth-c1 512MiB: {:.2} s", syn.elapsed.as_secs_f64());
    let dir = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let sealed = sample::seal(r, dir.path(), 3, 5, None).unwrap();
    println!("sealed 512MiB: {:.1} s", t.elapsed().as_secs_f64());
    let a: Value = serde_json::from_slice(&syn.c1_json).unwrap();
    let b: Value = serde_json::from_slice(&sealed.c1_json).unwrap();
    assert!(shape(&a) == shape(&b), "512 MiB: JSON shapes differ");
    for json in [&syn.c1_json, &sealed.c1_json] {
        verify_c1(&serde_json::from_slice(json).unwrap()).unwrap();
    }
}

/// bellperson's proof of the (possibly unsatisfied) circuits: it does not check them.
struct Bellperson<'a>(&'a Parameters<Bls12>);
impl CircuitSink for Bellperson<'_> {
    type Out = Vec<u8>;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(
        self,
        parts: Partitions<C>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rng = rand::thread_rng();
        for c in parts.circuits {
            create_random_proof::<Bls12, _, _, _>(c, self.0, &mut rng)
                .unwrap()
                .write(&mut out)
                .unwrap();
        }
        out
    }
}

#[test]
fn a_one_byte_change_to_a_path_or_a_label_is_refused() {
    damage_is_refused(SEAL, synth_2kib(), &srs());
}

/// At 512 MiB (cuzk's setup of its parameters and two CPU proofs: minutes, not in CI; run with
/// `--ignored` on a machine with cores): a synthetic C1 output is proved by cuzk and accepted by
/// `verify_seal`, and damaged ones are refused as at 2 KiB.
#[test]
#[ignore = "sets up 512 MiB PoRep parameters and proves on the CPU (minutes); run with --ignored"]
fn synthetic_c1_512mib_is_proved_and_passes_verify_seal() {
    param_dir();
    let r = RegisteredSealProof::StackedDrg512MiBV1_1;
    let t = std::time::Instant::now();
    let srs = srs_of(r);
    println!(
        "512MiB parameters ready: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let syn = synth_c1::generate(r, 3).unwrap();
    println!(
        "synth-c1 512MiB: {:.2} s, {} partitions, {} challenges",
        syn.elapsed.as_secs_f64(),
        syn.partitions,
        syn.challenges
    );
    let req = syn.porep_request().parse().unwrap();
    let t = std::time::Instant::now();
    let bytes = prove(req.clone(), &srs, &CpuBackend::new(), Rs::Random)
        .unwrap()
        .to_bytes();
    println!(
        "512MiB proved (CPU, self-verified): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(bytes.len(), 192 * syn.partitions);
    assert!(
        verify::verify(&req, &bytes).unwrap(),
        "verify_seal rejected cuzk's proof of the 512 MiB synthetic C1 output"
    );
    println!("512MiB verify_seal: true");
    damage_is_refused(r, &syn, &srs);
}

/// One byte changed in a Merkle path (comm_r_last, comm_d) or a label (a base parent's, an
/// expansion parent's) of `syn`'s first challenge: cuzk refuses to prove it (the circuit is
/// unsatisfied), and bellperson's proof of the damaged C1 (it proves unsatisfied circuits without
/// a word) is rejected by `verify_seal`.
fn damage_is_refused(r: RegisteredSealProof, syn: &synth_c1::SynthC1, srs: &Srs) {
    let path = params::locate(Registered::Seal(r), &param_dir()).unwrap();
    let bp = Parameters::<Bls12>::read(std::fs::File::open(&path).unwrap(), false).unwrap();
    let p0 = format!("/vanilla_proofs/{}/0/1", vanilla_key(r));
    let damages = [
        // A sibling on the replica's path in comm_r_last.
        format!("{p0}/comm_r_last_proof/data/Single/path/path/0/hashes/3/0"),
        // A sibling on the data leaf's path in comm_d.
        format!("{p0}/comm_d_proofs/data/Single/path/path/2/hashes/0/0"),
        // A base parent's label on layer 2. (The challenged node's own column, `c_x/column`,
        // is not an input of the circuit: it recomputes those labels from the parents'.)
        format!("{p0}/replica_column_proofs/drg_parents/5/column/rows/1/0"),
        // An expansion parent's label on layer 1.
        format!("{p0}/replica_column_proofs/exp_parents/4/column/rows/0/0"),
    ];
    for at in damages {
        let mut c1: Value = serde_json::from_slice(&syn.c1_json).unwrap();
        let byte = c1.pointer_mut(&at).unwrap_or_else(|| panic!("no {at}"));
        *byte = Value::from(byte.as_u64().unwrap() ^ 1);
        let json = serde_json::to_vec(&c1).unwrap();
        let parsed_c1: SealCommitPhase1Output = serde_json::from_slice(&json).unwrap();
        // storage-proofs' vanilla verifier hashes the column paths but checks only the position
        // of the comm_d and replica paths (`proves_challenge`) and their stored roots; the
        // circuit checks every path.
        if at.contains("column") {
            assert!(
                verify_c1(&parsed_c1).is_err(),
                "{at}: vanilla verification passed"
            );
        }
        let req = ProofRequest::PoRep {
            c1_json: json,
            prover_id: Some(syn.identity.prover_id),
            sector_id: Some(syn.identity.sector_id),
        }
        .parse()
        .unwrap();
        let t = std::time::Instant::now();
        let err = prove(req.clone(), srs, &CpuBackend::new(), Rs::Random)
            .unwrap_err()
            .to_string();
        println!("{at}: refused in {:.1} s: {err}", t.elapsed().as_secs_f64());
        assert!(err.contains("nsatisfied"), "{at}: {err}");
        // bellperson proves unsatisfied circuits without a word: verify_seal rejects the proof.
        if at.contains("comm_r_last") {
            let bytes = req.clone().build(Bellperson(&bp)).unwrap();
            assert!(
                !verify::verify(&req, &bytes).unwrap_or(false),
                "{at}: verify_seal accepted a proof of a damaged C1 output"
            );
        }
    }
}

/// The C1 output's `vanilla_proofs` key of a registered seal proof (V1 and V1_1 share it).
fn vanilla_key(r: RegisteredSealProof) -> &'static str {
    use RegisteredSealProof::*;
    match r {
        StackedDrg2KiBV1 | StackedDrg2KiBV1_1 => "StackedDrg2KiBV1",
        StackedDrg8MiBV1 | StackedDrg8MiBV1_1 => "StackedDrg8MiBV1",
        StackedDrg512MiBV1 | StackedDrg512MiBV1_1 => "StackedDrg512MiBV1",
        StackedDrg32GiBV1 | StackedDrg32GiBV1_1 => "StackedDrg32GiBV1",
        StackedDrg64GiBV1 | StackedDrg64GiBV1_1 => "StackedDrg64GiBV1",
        other => panic!("{other:?}: no synthetic C1 output"),
    }
}

#[test]
fn synthetic_c1_at_32_and_64_gib_parses_into_10_partitions() {
    for (size, r) in [
        ("32GiB", RegisteredSealProof::StackedDrg32GiBV1_1),
        ("64GiB", RegisteredSealProof::StackedDrg64GiBV1_1),
    ] {
        assert_eq!(synth_c1::registered_for(size).unwrap(), r);
        let syn = synth_c1::generate(r, 7).unwrap();
        println!(
            "synth-c1 {size}: {:.2} s, {} partitions, {} challenges, {} columns opened, {} MB JSON",
            syn.elapsed.as_secs_f64(),
            syn.partitions,
            syn.challenges,
            syn.opened,
            syn.c1_json.len() / 1_000_000
        );
        let parsed = syn.porep_request().parse().unwrap();
        assert!(matches!(parsed, Parsed::PoRep(_)));
        let (n, inputs) = parsed.build(Count).unwrap();
        assert_eq!(n, 10, "{size}: partitions");
        assert_eq!(inputs.len(), 10);
        assert!(
            inputs.iter().all(|&k| k > 0 && k == inputs[0]),
            "{size}: {inputs:?}"
        );
        assert_eq!(
            syn.challenges, 180,
            "{size}: 18 challenges in each of 10 partitions"
        );
    }
    assert!(synth_c1::registered_for("1TiB").is_err());
}
