//! `cuzk bench synth --c1 FILE`: a PoRep partition's witness synthesis on the CPU, the way the
//! engine runs it once the shape is recorded, against filecoin-proofs' own circuit: each round
//! synthesizes partition 0 witness-only on one thread with filecoin-proofs' `StackedCircuit`
//! (bellpepper's SHA-256 gadget), then with cuzk's cut (`porep_circuit`, lean SHA-256), then
//! cuzk's cut with the challenges on all threads. The three witnesses must be equal. Last line:
//! `synth_reference_ms=… synth_lean_ms=… synth_parallel_ms=… threads=…` (medians).

use std::path::PathBuf;
use std::time::Instant;

use blstrs::Scalar;
use cuzk_engine::recorded::{witness, RecordOptions, Recording, Values};
use cuzk_engine::EngineError;
use cuzk_filecoin::request::Parsed;
use cuzk_filecoin::{CircuitSink, Partitions, ProofRequest};

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The C1 output (`SealCommitPhase1Output` JSON).
    #[arg(long)]
    c1: PathBuf,
    /// Rounds (each: one synthesis of each kind).
    #[arg(short = 'n', long, default_value_t = 3)]
    rounds: usize,
}

/// What a sink does with partition 0.
enum Run<'a> {
    Record,
    Witness(&'a Recording),
    Parallel(&'a Recording),
}

struct Sink<'a>(Run<'a>);

type Out = std::result::Result<(Option<Recording>, Values, f64), EngineError>;

impl CircuitSink for Sink<'_> {
    type Out = Out;
    fn take<C: bellperson::Circuit<Scalar> + Send + 'static>(self, parts: Partitions<C>) -> Out {
        let mut circuits = parts.circuits.into_iter();
        let Some(c) = circuits.next() else {
            return Err(EngineError::Other("a request without partitions".into()));
        };
        let every = RecordOptions::default().sample_rows;
        let start = Instant::now();
        let (rec, values) = match self.0 {
            Run::Record => {
                let (rec, values) = cuzk_engine::recorded::record(c, true, 0)?;
                let values = values.ok_or(EngineError::Other("no values recorded".into()))?;
                (Some(rec), values)
            }
            Run::Witness(rec) => (None, witness(rec, c, 0, every, 0)?),
            Run::Parallel(rec) => {
                let w = parts
                    .parallel_witness
                    .ok_or(EngineError::Other("no parallel witness".into()))?;
                (None, w(c, rec, 0)?)
            }
        };
        Ok((rec, values, start.elapsed().as_secs_f64() * 1e3))
    }
}

pub fn run(a: Args) -> Result<()> {
    let c1_json = std::fs::read(&a.c1).map_err(|e| format!("{}: {e}", a.c1.display()))?;
    let request = ProofRequest::PoRep {
        c1_json,
        prover_id: None,
        sector_id: None,
    };
    let parsed = request.parse()?;
    let Parsed::PoRep(input) = parsed.clone() else {
        return Err("not a PoRep request".into());
    };
    let (rec, recorded, record_ms) = parsed.clone().build(Sink(Run::Record))??;
    let rec = rec.ok_or("no recording")?;
    let c = rec.counts();
    println!(
        "partition 0: {} constraints, {} aux; recorded in {record_ms:.1} ms",
        c.circuit_rows, c.aux
    );
    let threads = rayon::current_num_threads();
    let (mut reference, mut lean, mut parallel) = (vec![], vec![], vec![]);
    for round in 0..a.rounds {
        let (_, r, r_ms) = input.clone().build_reference(Sink(Run::Witness(&rec)))??;
        let (_, l, l_ms) = parsed.clone().build(Sink(Run::Witness(&rec)))??;
        let (_, p, p_ms) = parsed.clone().build(Sink(Run::Parallel(&rec)))??;
        if r != recorded || l != recorded || p != recorded {
            return Err("the witnesses differ (reference, lean, parallel)".into());
        }
        println!(
            "round {round}: reference {r_ms:.1} ms, lean {l_ms:.1} ms (one thread each), lean on {threads} threads {p_ms:.1} ms"
        );
        reference.push(r_ms);
        lean.push(l_ms);
        parallel.push(p_ms);
    }
    println!(
        "synth_reference_ms={:.1} synth_lean_ms={:.1} synth_parallel_ms={:.1} threads={threads}",
        median(&mut reference),
        median(&mut lean),
        median(&mut parallel)
    );
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
