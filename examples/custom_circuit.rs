//! Prove a custom bellperson circuit with cuzk: "I know x such that x³ + x + 5 = y".
//!
//! Run: `cargo run --release -p cuzk-examples --bin custom-circuit`
//!
//! The steps a user takes: write the circuit against bellperson's `Circuit` trait, get parameters
//! (here a local setup, written once as a Filecoin-format `.params` file), open them with
//! cuzk-srs, prove a batch of partitions with a backend, and verify.

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_engine::{setup, CpuBackend, Prover, Verifier};
use cuzk_srs::{OpenOptions, Srs};
use ff::Field;

/// x³ + x + 5 = y, with x secret and y public.
#[derive(Clone)]
struct Cubic {
    x: Scalar,
}

impl Circuit<Scalar> for Cubic {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x_val = self.x;
        let x = cs.alloc(|| "x", || Ok(x_val))?;
        let x2 = cs.alloc(|| "x²", || Ok(x_val.square()))?;
        cs.enforce(|| "x·x = x²", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3 = cs.alloc(|| "x³", || Ok(x_val.square() * x_val))?;
        cs.enforce(|| "x²·x = x³", |lc| lc + x2, |lc| lc + x, |lc| lc + x3);
        let y_val = x_val.square() * x_val + x_val + Scalar::from(5u64);
        let y = cs.alloc_input(|| "y", || Ok(y_val))?;
        cs.enforce(
            || "(x³ + x + 5)·1 = y",
            |lc| lc + x3 + x + (Scalar::from(5u64), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + y,
        );
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("cuzk-example");
    let params = dir.join("cubic.params");
    // Parameters: a local setup the first time, then the same file (and its decode cache).
    let (srs, generated) = setup::open_or_generate(
        &params,
        Cubic { x: Scalar::ONE },
        1,
        &OpenOptions::default(),
    )?;
    println!(
        "parameters {} ({})",
        params.display(),
        if generated { "generated" } else { "reused" }
    );

    // Three partitions, three secrets, one batch.
    let circuits: Vec<Cubic> = [3u64, 4, 5]
        .iter()
        .map(|&x| Cubic { x: Scalar::from(x) })
        .collect();
    let backend = CpuBackend::new();
    let batch = Prover::new(&srs, &backend).prove_random(circuits, &mut rand::thread_rng())?;

    let verifier = Verifier::new(srs.vk());
    for (i, (proof, inputs)) in batch.proofs.iter().zip(&batch.public_inputs).enumerate() {
        println!(
            "partition {i}: y = {:?}, verifies: {}",
            inputs[0],
            verifier.verify(proof, inputs)?
        );
    }
    // A wrong public input must not verify.
    let wrong = [Scalar::from(36u64)];
    assert!(
        !verifier.verify(&batch.proofs[0], &wrong)?,
        "a wrong y verified"
    );
    println!(
        "{} proof bytes; {}",
        batch.to_bytes().len(),
        batch.timings.line()
    );

    // Reopening the same file maps its decode cache instead of decoding again.
    let again = Srs::open(&params, &OpenOptions::default())?;
    println!("reopened: {:?}", again.origin());
    Ok(())
}
