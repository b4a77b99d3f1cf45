//! cuzk's proofs are byte-identical to bellperson's `create_proof` for the same circuit,
//! parameters, `r` and `s`; they verify; random `r, s` verify; a wrong public input fails.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_e2e::{bellperson_proof, params_in, proof_bytes};
use cuzk_engine::circuits::{Bits, COnlyAux, ManyInputs, MulChain, NoAux, Sha256Preimage};
use cuzk_engine::{CpuBackend, Prover, Verifier};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn check<C: Circuit<Scalar> + Clone + Send>(name: &str, circuit: C, partitions: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (params, srs) = params_in(dir.path(), name, circuit.clone());
    let backend = CpuBackend::new();
    let prover = Prover::new(&srs, &backend);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let r_s: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
    let s_s: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();

    let ours = prover
        .prove(vec![circuit.clone(); partitions], &r_s, &s_s)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut theirs = Vec::new();
    for i in 0..partitions {
        theirs.extend(proof_bytes(&bellperson_proof(
            circuit.clone(),
            &params,
            r_s[i],
            s_s[i],
        )));
    }
    assert_eq!(ours.to_bytes().len(), 192 * partitions, "{name}: wire size");
    assert_eq!(
        ours.to_bytes(),
        theirs,
        "{name}: proof bytes differ from bellperson's"
    );

    let verifier = Verifier::new(srs.vk());
    for (p, inputs) in ours.proofs.iter().zip(&ours.public_inputs) {
        assert!(
            verifier.verify(p, inputs).unwrap(),
            "{name}: proof does not verify"
        );
    }

    let random = prover.prove_random(vec![circuit], &mut rng).unwrap();
    let (proof, inputs) = (&random.proofs[0], &random.public_inputs[0]);
    assert!(
        verifier.verify(proof, inputs).unwrap(),
        "{name}: random-r,s proof does not verify"
    );
    assert_ne!(
        proof_bytes(proof),
        theirs[..192].to_vec(),
        "{name}: random r, s gave the fixed proof"
    );
    if !inputs.is_empty() {
        let mut wrong = inputs.clone();
        wrong[0] += Scalar::ONE;
        assert!(
            !verifier.verify(proof, &wrong).unwrap(),
            "{name}: verified with a wrong public input"
        );
    }
}

#[test]
fn large_random_witness_2p16_constraints() {
    check("mulchain", MulChain::random(1 << 16, 3, 1), 1);
}

#[test]
fn many_public_inputs() {
    check("many_inputs", ManyInputs::random(40, 2), 2);
}

#[test]
fn mostly_boolean_aux() {
    check("bits", Bits::random(8, 3), 2);
}

#[test]
fn no_aux_at_all() {
    check("no_aux", NoAux::random(4), 2);
}

#[test]
fn aux_never_in_a_or_b() {
    check("c_only", COnlyAux::random(50, 5), 1);
}

#[test]
fn sha256_preimage_from_bellperson_gadgets() {
    check("sha256", Sha256Preimage::random(32, 6), 1);
}

/// A circuit that, like filecoin's FallbackPoSt, synthesizes pieces in systems of their own and
/// extends its own with them, using each piece's temporary `one` in B and an input per piece.
#[derive(Clone)]
struct Extending {
    pieces: Vec<(Scalar, Scalar)>,
}

fn piece<CS: bellperson::ConstraintSystem<Scalar>>(
    cs: &mut CS,
    (x, y): (Scalar, Scalar),
) -> Result<(), bellperson::SynthesisError> {
    use bellperson::gadgets::num::AllocatedNum;
    let a = AllocatedNum::alloc(cs.namespace(|| "a"), || Ok(x))?;
    let b = AllocatedNum::alloc(cs.namespace(|| "b"), || Ok(y))?;
    let p = a.mul(cs.namespace(|| "a*b"), &b)?;
    p.inputize(cs.namespace(|| "p"))?;
    // (a + 1) * (b + 1) = p + a + b + 1: `one` in A and in B.
    cs.enforce(
        || "one in b",
        |lc| lc + a.get_variable() + CS::one(),
        |lc| lc + b.get_variable() + CS::one(),
        |lc| lc + p.get_variable() + a.get_variable() + b.get_variable() + CS::one(),
    );
    Ok(())
}

impl Circuit<Scalar> for Extending {
    fn synthesize<CS: bellperson::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        for xy in self.pieces {
            if CS::is_extensible() {
                let mut sub = CS::new();
                sub.alloc_input(|| "temp one", || Ok(Scalar::ONE))?;
                piece(&mut sub, xy)?;
                cs.extend(&sub);
            } else {
                piece(cs, xy)?;
            }
        }
        Ok(())
    }
}

#[test]
fn pieces_synthesized_apart_and_extended() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let pieces = (0..5)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .collect();
    check("extending", Extending { pieces }, 2);
}
