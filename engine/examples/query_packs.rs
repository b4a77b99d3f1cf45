//! The host's side passes of the streamed tier's overlapped step, timed on a synthetic witness
//! shaped like a PoRep partition's (45 % zeros, 54 % ones, 1 % other values; `a` over 99 % of
//! the aux, `b` over 25 %):
//!
//!   cargo run --release -p cuzk-engine --example query_packs -- [log2 of the aux, default 24]
//!
//! Prints the witness packing (at synthesis), the three query packs made from it
//! (`QueryPack::queries`, what the overlapped step waits for), and the dense splits with their
//! gather plans (the fallback), in ms; a 32 GiB partition has 2^27 aux.

use std::time::Instant;

use blstrs::Scalar;
use cuzk_engine::density::BitVec;
use cuzk_engine::gather::{side_threads, Gather};
use cuzk_engine::packed_witness::PackedWitness;
use cuzk_engine::prover::splits;
use cuzk_engine::query_pack::QueryPack;
use rand::{Rng, SeedableRng};

fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(24);
    let aux_n = 1usize << log;
    let inputs_n = 40;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(35);
    let class = |rng: &mut rand_chacha::ChaCha8Rng| match rng.gen_range(0..100) {
        0..=44 => Scalar::from(0u64),
        45..=98 => Scalar::from(1u64),
        _ => Scalar::from(rng.gen::<u64>() | 2),
    };
    let inputs: Vec<Scalar> = (0..inputs_n).map(|_| class(&mut rng)).collect();
    let aux: Vec<Scalar> = (0..aux_n).map(|_| class(&mut rng)).collect();
    let bits = |n: usize, p: f64, rng: &mut rand_chacha::ChaCha8Rng| -> BitVec {
        (0..n).map(|_| rng.gen_bool(p)).collect()
    };
    let a_aux = bits(aux_n, 0.99, &mut rng);
    let b_in = bits(inputs_n, 0.5, &mut rng);
    let b_aux = bits(aux_n, 0.25, &mut rng);
    let threads = side_threads();

    let t = Instant::now();
    let packed = PackedWitness::of(&inputs, &aux, threads).expect("fits u32 ranks");
    let pack_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let packs =
        QueryPack::queries(&packed, inputs_n, [&a_aux, &b_in, &b_aux], threads).expect("packs");
    let packs_ms = t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let (l, a, b) = splits(&inputs, aux, [&a_aux, &b_in, &b_aux]);
    let splits_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let plans = [
        Gather::of(&l, threads),
        Gather::of(&a, threads),
        Gather::of(&b, threads),
    ];
    let plans_ms = t.elapsed().as_secs_f64() * 1e3;
    for (p, (s, g)) in packs
        .iter()
        .zip([(&l, &plans[0]), (&a, &plans[1]), (&b, &plans[2])])
    {
        assert_eq!(*p, QueryPack::of_split(s, g), "the two ways disagree");
    }
    println!(
        "query_packs aux=2^{log} threads={threads} witness_pack_ms={pack_ms:.1} query_packs_ms={packs_ms:.1} dense_splits_ms={splits_ms:.1} gather_plans_ms={plans_ms:.1} tails={}/{}/{}",
        packs[0].values.len(),
        packs[1].values.len(),
        packs[2].values.len()
    );
}
