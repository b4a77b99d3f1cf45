//! `cuzk bench cpu`: cuzk's CPU prover and bellperson's `create_proof`, side by side on the same
//! circuits (random field-element witnesses, so the 0/1 split gives cuzk no advantage).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{create_proof, Parameters};
use blstrs::{Bls12, Scalar};
use cuzk_engine::circuits::MulChain;
use cuzk_engine::{CpuBackend, Prover};
use cuzk_srs::{OpenOptions, Srs};
use ff::Field;

use crate::common::{example_params, Result};

#[derive(clap::Args)]
pub struct Args {
    /// log2 of the domain sizes to run.
    #[arg(long, value_delimiter = ',', default_value = "12,16,18")]
    sizes: Vec<u32>,
    /// Runs per prover per size (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long)]
    params_dir: Option<PathBuf>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn to_bellperson(srs: &Srs) -> Parameters<Bls12> {
    Parameters {
        vk: srs.vk().clone(),
        h: Arc::new(srs.h().to_vec()),
        l: Arc::new(srs.l().to_vec()),
        a: Arc::new(srs.a().to_vec()),
        b_g1: Arc::new(srs.b_g1().to_vec()),
        b_g2: Arc::new(srs.b_g2().to_vec()),
    }
}

pub fn run(a: Args) -> Result<()> {
    let dir = a.params_dir.unwrap_or_else(crate::default_params_dir);
    let runs = a.runs.max(1);
    let backend = CpuBackend::new();
    let mut rows = Vec::new();
    println!(
        "threads={} runs={runs} (median)",
        rayon::current_num_threads()
    );
    for &k in &a.sizes {
        let srs = example_params(&dir, "mulchain", k as usize, &OpenOptions::default())?;
        let params = to_bellperson(&srs);
        let prover = Prover::new(&srs, &backend);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let mut identical = true;
        for run in 0..runs {
            let circuit = MulChain::filling_domain(k, 2, run as u64);
            let mut rng = rand::thread_rng();
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let start = Instant::now();
            let batch = prover.prove(vec![circuit.clone()], &[r], &[s])?;
            ours.push(start.elapsed().as_secs_f64() * 1e3);
            let start = Instant::now();
            let proof = create_proof::<Bls12, _, _>(circuit, &params, r, s)?;
            theirs.push(start.elapsed().as_secs_f64() * 1e3);
            let mut bytes = Vec::new();
            proof.write(&mut bytes)?;
            identical &= bytes == batch.to_bytes();
            eprintln!(
                "2^{k} run {run}: cuzk {:.1} ms [{}], bellperson {:.1} ms",
                ours[run],
                batch.timings.line(),
                theirs[run]
            );
        }
        let (o, t) = (median(ours), median(theirs));
        rows.push((k, o, t, identical));
        if !identical {
            return Err(format!("2^{k}: cuzk's proof bytes differ from bellperson's").into());
        }
    }
    println!(
        "{:<6} {:>14} {:>16} {:>8} {:>10}",
        "domain", "cuzk_ms", "bellperson_ms", "ratio", "identical"
    );
    for (k, o, t, same) in &rows {
        println!(
            "2^{:<4} {:>14.1} {:>16.1} {:>8.3} {:>10}",
            k,
            o,
            t,
            o / t,
            if *same { "yes" } else { "NO" }
        );
    }
    let pick = rows
        .iter()
        .find(|r| r.0 == 16)
        .or(rows.last())
        .ok_or("no sizes given")?;
    println!("cpu_vs_bellperson_ratio={:.3}", pick.1 / pick.2);
    Ok(())
}
