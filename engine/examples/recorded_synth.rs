//! Synthesis time, today's `synthesize` against the recorded path (witness-only synthesis, then
//! the CPU matrix–vector products), on an example circuit:
//!
//! ```text
//! cargo run --release -p cuzk-engine --example recorded_synth -- mulchain 20
//! cargo run --release -p cuzk-engine --example recorded_synth -- sha256 1024
//! ```
//! Each figure is the best of three runs; the assignments are checked equal.

use std::time::Instant;

use cuzk_engine::circuits::Example;
use cuzk_engine::recorded::{record, witness};
use cuzk_engine::synth::{synthesize, Shape};

fn best<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut out = None;
    let mut ms = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let v = f();
        ms = ms.min(t.elapsed().as_secs_f64() * 1e3);
        out = Some(v);
    }
    (ms, out.expect("three runs"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("mulchain", |s| s.as_str());
    let size = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| Example::default_size(name));
    let ex = Example::new(name, size, 1).ok_or(format!("no example {name}"))?;
    // The circuits are built (their witness drawn) before the clock starts.
    let three = || vec![ex.clone(); 3];
    let mut c = three();
    let (synth_ms, want) = best(|| synthesize(c.pop().expect("three"), Shape::default()));
    let want = want?;
    let mut c = three();
    let (record_ms, rec) = best(|| record(c.pop().expect("three"), true, 0));
    let (rec, _) = rec?;
    let mut c = three();
    let (wit_ms, values) = best(|| witness(&rec, c.pop().expect("three"), 0, 0, 0));
    let mut c = three();
    let (sampled_ms, _) = best(|| witness(&rec, c.pop().expect("three"), 0, 1024, 0));
    let values = values?;
    let (clone_ms, _) = best(|| values.clone());
    let (mv_ms, asg) = best(|| rec.assignment(values.clone(), 0));
    let mv_ms = mv_ms - clone_ms;
    if asg? != want {
        return Err("recorded assignment differs from synthesize's".into());
    }
    let c = rec.counts();
    println!(
        "{name} {size}: {} rows, {} aux, entries A/B/C {}/{}/{}, {} general coefficients, recording {:.1} MiB, {} threads",
        c.rows(),
        c.aux,
        c.nnz[0],
        c.nnz[1],
        c.nnz[2],
        c.table,
        rec.bytes() as f64 / (1 << 20) as f64,
        rayon::current_num_threads()
    );
    println!(
        "synthesize {synth_ms:.1} ms | record {record_ms:.1} ms | witness-only {wit_ms:.1} ms (rows sampled 1/1024: {sampled_ms:.1} ms) + products {mv_ms:.1} ms = {:.1} ms",
        wit_ms + mv_ms
    );
    Ok(())
}
