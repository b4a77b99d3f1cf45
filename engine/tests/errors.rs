//! Bad circuits and bad calls give clear errors, never a proof and never a panic.

use cuzk_engine::circuits::{MulChain, NoAux, Unsatisfied};
use cuzk_engine::setup::generate;
use cuzk_engine::{CpuBackend, EngineError, Prover};
use cuzk_srs::Srs;

#[test]
fn an_unsatisfied_witness_names_the_first_bad_row() {
    let circuit = Unsatisfied { good_rows: 10 };
    let srs = Srs::from_parameters(&generate(circuit.clone(), 1).unwrap());
    let backend = CpuBackend::new();
    let err = Prover::new(&srs, &backend)
        .prove_random(vec![circuit], &mut rand::thread_rng())
        .unwrap_err();
    match &err {
        EngineError::Unsatisfied {
            circuit: 0,
            row: 10,
            ..
        } => {}
        other => panic!("expected row 10 unsatisfied, got {other}"),
    }
    assert!(err.to_string().contains("constraint 10"), "{err}");
}

#[test]
fn a_circuit_that_does_not_fit_the_parameters() {
    let srs = Srs::from_parameters(&generate(MulChain::random(20, 2, 1), 1).unwrap());
    let backend = CpuBackend::new();
    let prover = Prover::new(&srs, &backend);
    let err = prover
        .prove_random(vec![MulChain::random(20, 3, 1)], &mut rand::thread_rng())
        .unwrap_err();
    assert!(
        matches!(err, EngineError::ShapeMismatch { circuit: 0, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("inputs"), "{err}");
    let err = prover
        .prove_random(vec![NoAux::random(1)], &mut rand::thread_rng())
        .unwrap_err();
    assert!(matches!(err, EngineError::ShapeMismatch { .. }), "{err}");
    // Second partition of a batch is the odd one out: the error names it.
    let err = prover
        .prove_random(
            vec![MulChain::random(20, 2, 1), MulChain::random(21, 2, 1)],
            &mut rand::thread_rng(),
        )
        .unwrap_err();
    assert!(
        matches!(err, EngineError::ShapeMismatch { circuit: 1, .. }),
        "{err}"
    );
}

#[test]
fn randomness_must_match_the_partition_count() {
    let srs = Srs::from_parameters(&generate(NoAux::random(1), 1).unwrap());
    let backend = CpuBackend::new();
    let err = Prover::new(&srs, &backend)
        .prove(vec![NoAux::random(1)], &[], &[])
        .unwrap_err();
    assert!(err.to_string().contains("1 circuits but 0 r"), "{err}");
}
