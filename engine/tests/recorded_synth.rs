//! The recorded path gives exactly `synth::synthesize`'s assignment: on every example circuit,
//! on linear combinations with duplicates and zero coefficients, on circuits that `extend`, and
//! in parallel pieces; and a circuit whose shape follows its witness is refused.

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use cuzk_engine::circuits::{Example, MulChain};
use cuzk_engine::recorded::coeff::{self, Class};
use cuzk_engine::recorded::{record, witness, Recording, Witness};
use cuzk_engine::synth::{synthesize, Shape};
use cuzk_engine::EngineError;
use ff::Field;
use rayon::prelude::*;

fn sizes(name: &str) -> usize {
    match name {
        "mulchain" => 8,
        "sha256" => 32,
        "bits" => 4,
        n => Example::default_size(n),
    }
}

/// Records `make(1)` and checks the recording's assignment and the witness-only assignments of
/// `make(1)` and `make(2)` (every row sampled) against `synthesize`.
fn same_as_synthesize<C: Circuit<Scalar> + Clone>(
    what: &str,
    make: impl Fn(u64) -> C,
) -> Recording {
    let (rec, values) = record(make(1), true, 0).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = synthesize(make(1), Shape::default()).unwrap();
    assert_eq!(
        rec.assignment(values.unwrap(), 0).unwrap(),
        want,
        "{what}: recording run"
    );
    let (blank, none) = record(make(1), false, 0).unwrap();
    assert!(none.is_none());
    assert_eq!(
        blank.shape_hash(),
        rec.shape_hash(),
        "{what}: blank recording"
    );
    for seed in [1, 2] {
        let values = witness(&rec, make(seed), 0, 1, 0).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            rec.assignment(values, 0).unwrap(),
            synthesize(make(seed), Shape::default()).unwrap(),
            "{what}: seed {seed}"
        );
    }
    rec
}

#[test]
fn every_example_circuit_gives_synthesizes_assignment() {
    for name in Example::NAMES {
        let rec = same_as_synthesize(name, |seed| Example::new(name, sizes(name), seed).unwrap());
        assert_eq!(
            rec.counts().rows(),
            synthesize(
                Example::new(name, sizes(name), 3).unwrap(),
                Shape::default()
            )
            .unwrap()
            .a
            .len()
        );
    }
}

/// Duplicates, zero and cancelling coefficients, every coefficient class, inputs in B, a
/// variable only in C, an empty row.
#[derive(Clone)]
struct Tricky(Scalar);

impl Circuit<Scalar> for Tricky {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.0))?;
        let p = cs.alloc_input(|| "p", || Ok(self.0.square()))?;
        let y = cs.alloc(|| "y", || Ok(self.0.square()))?;
        let big = Scalar::from(1u64 << 40) + Scalar::from(3u64);
        let k = Scalar::from(12345u64);
        cs.enforce(
            || "dup",
            |l| l + x + x - (Scalar::from(2u64), x) + x,
            |l| l + x,
            |l| l + y,
        );
        cs.enforce(
            || "zero",
            |l| l + (Scalar::ZERO, y) + x,
            |l| l + (Scalar::ZERO, p) + x,
            |l| l + p,
        );
        cs.enforce(
            || "classes",
            |l| l + (big, x) - (big, x) + (k, CS::one()) - (k, CS::one()) + x,
            |l| l + CS::one() + p - p,
            |l| l + x,
        );
        let z = cs.alloc(|| "z", || Ok(self.0 * k))?;
        cs.enforce(|| "small", |l| l + (k, x), |l| l + CS::one(), |l| l + z);
        cs.enforce(
            || "neg",
            |l| l - x,
            |l| l - (big, CS::one()),
            |l| l + (big, x),
        );
        cs.enforce(|| "empty", |l| l, |l| l, |l| l);
        let w = cs.alloc(|| "w", || Ok(self.0 * self.0.square()))?;
        cs.enforce(
            || "input in B",
            |l| l + x,
            |l| l + p,
            |l| l + (big, CS::one()) - (big, CS::one()) + w,
        );
        Ok(())
    }
}

#[test]
fn linear_combinations_follow_synthesize_term_by_term() {
    let rec = same_as_synthesize("tricky", |s| Tricky(Scalar::from(s + 6)));
    let mut seen = [false; 4];
    for m in 0..3 {
        for e in rec.entries(m) {
            seen[coeff::class((e >> 32) as u32) as usize] = true;
        }
    }
    assert_eq!(seen, [true; 4], "every coefficient class recorded");
    assert!(
        rec.row(0, 5).is_empty() && rec.row(2, 5).is_empty(),
        "the empty row stays empty"
    );
}

/// Pieces made with `CS::new()` and joined with `extend`, as FallbackPoSt does when its system
/// is extensible; each piece uses its own `one` in B and allocates an input.
#[derive(Clone)]
struct Extending(u64);

impl Circuit<Scalar> for Extending {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        assert!(CS::is_extensible());
        let outer = cs.alloc_input(|| "outer", || Ok(Scalar::from(self.0)))?;
        cs.enforce(|| "outer", |l| l + outer, |l| l + CS::one(), |l| l + outer);
        let pieces: Vec<CS> = (0..3u64)
            .into_par_iter()
            .map(|i| {
                let mut p = CS::new();
                p.alloc_input(|| "temp one", || Ok(Scalar::ONE))?;
                let v = Scalar::from(self.0 + i);
                let inp = p.alloc_input(|| "v", || Ok(v.square()))?;
                let mut ns = p.namespace(|| format!("piece_{i}"));
                let a = ns.alloc(|| "a", || Ok(v))?;
                ns.enforce(|| "sq", |l| l + a, |l| l + a, |l| l + inp);
                ns.enforce(|| "one", |l| l + a, |l| l + CS::one(), |l| l + a);
                drop(ns);
                Ok(p)
            })
            .collect::<Result<_, SynthesisError>>()?;
        for p in &pieces {
            cs.extend(p);
        }
        Ok(())
    }
}

#[test]
fn extended_pieces_are_recorded_as_synthesize_joins_them() {
    let rec = same_as_synthesize("extending", Extending);
    assert!(
        rec.mark("piece_1").is_some(),
        "marks of the pieces: {:?}",
        rec.marks()
    );
}

/// Constraint count that follows a witness bit.
#[derive(Clone)]
struct CountFollowsWitness(u64);

impl Circuit<Scalar> for CountFollowsWitness {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(self.0)))?;
        for i in 0..2 + self.0 % 2 {
            cs.enforce(|| format!("r{i}"), |l| l + x, |l| l + CS::one(), |l| l + x);
        }
        Ok(())
    }
}

/// Same counts, but which variable a row uses follows a witness bit.
#[derive(Clone)]
struct StructureFollowsWitness(u64);

impl Circuit<Scalar> for StructureFollowsWitness {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(self.0)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(self.0)))?;
        cs.enforce(|| "same", |l| l + x, |l| l + CS::one(), |l| l + y);
        let v = if self.0.is_multiple_of(2) { x } else { y };
        cs.enforce(|| "follows", |l| l + v, |l| l + CS::one(), |l| l + x);
        Ok(())
    }
}

#[test]
fn a_shape_that_follows_the_witness_is_refused() {
    let (rec, _) = record(CountFollowsWitness(2), true, 0).unwrap();
    assert!(witness(&rec, CountFollowsWitness(4), 0, 0, 0).is_ok());
    let err = witness(&rec, CountFollowsWitness(3), 0, 0, 0).unwrap_err();
    assert!(
        matches!(err, EngineError::RecordingMismatch { .. })
            && err
                .to_string()
                .contains("constraints: 2 recorded, 3 synthesized"),
        "{err}"
    );

    let (rec, _) = record(StructureFollowsWitness(2), true, 0).unwrap();
    assert!(witness(&rec, StructureFollowsWitness(4), 0, 1, 0).is_ok());
    let err = witness(&rec, StructureFollowsWitness(3), 0, 1, 0).unwrap_err();
    assert!(
        err.to_string()
            .contains("constraint 1's A differs from the recording"),
        "{err}"
    );
    // Not sampled: the counts agree, the witness-only path cannot see it (the row check and the
    // sampled full synthesis of cuzk_engine::recorded::cache do; see recorded_file.rs).
    assert!(witness(&rec, StructureFollowsWitness(3), 0, 2, 0).is_ok());
}

/// Independent chains under their own namespaces after a shared prefix, as Filecoin's challenges.
#[derive(Clone)]
struct Chains {
    seed: u64,
    chains: usize,
    len: usize,
}

impl Chains {
    fn prefix<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
    ) -> Result<(bellperson::Variable, Scalar), SynthesisError> {
        let k = Scalar::from(self.seed + 2);
        let p = cs.alloc_input(|| "k", || Ok(k))?;
        let s = cs.alloc(|| "k²", || Ok(k.square()))?;
        cs.enforce(|| "square", |l| l + p, |l| l + p, |l| l + s);
        Ok((s, k.square()))
    }
    fn chain<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        i: usize,
        s: bellperson::Variable,
        sv: Scalar,
    ) -> Result<(), SynthesisError> {
        let (mut x, mut xv) = (s, sv);
        for j in 0..self.len {
            let yv = xv * Scalar::from((i * 31 + j) as u64 + 1);
            let y = cs.alloc(|| format!("y{j}"), || Ok(yv))?;
            let c = Scalar::from((i * 31 + j) as u64 + 1);
            cs.enforce(
                || format!("m{j}"),
                |l: LinearCombination<Scalar>| l + (c, x),
                |l| l + CS::one(),
                |l| l + y,
            );
            (x, xv) = (y, yv);
        }
        let out = cs.alloc_input(|| "out", || Ok(xv))?;
        cs.enforce(|| "out", |l| l + x, |l| l + CS::one(), |l| l + out);
        Ok(())
    }
    fn suffix<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        s: bellperson::Variable,
    ) -> Result<(), SynthesisError> {
        cs.enforce(|| "tail", |l| l + s, |l| l + CS::one(), |l| l + s);
        Ok(())
    }
}

impl Circuit<Scalar> for Chains {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (s, sv) = self.prefix(cs)?;
        for i in 0..self.chains {
            self.chain(&mut cs.namespace(|| format!("chain_{i}")), i, s, sv)?;
        }
        self.suffix(cs, s)
    }
}

#[test]
fn independent_pieces_synthesize_in_parallel_into_one_witness() {
    let circuit = |seed| Chains {
        seed,
        chains: 5,
        len: 40,
    };
    let (rec, _) = record(circuit(1), false, 0).unwrap();
    let marks: Vec<_> = (0..5)
        .map(|i| rec.mark(&format!("chain_{i}")).unwrap())
        .collect();
    let tiles = rec.tiling(&marks).unwrap();
    assert_eq!(tiles.len(), 11);
    assert_eq!(tiles[1].aux.len(), 40);

    let c = circuit(7);
    let mut w = Witness::for_recording(&rec);
    let mut pieces = w.pieces(&tiles).unwrap().into_iter();
    let mut first = pieces.next().unwrap();
    let (s, sv) = c.prefix(&mut first).unwrap();
    let rest: Vec<_> = pieces.collect();
    first.finish(0).unwrap();
    let (chains, mut tail): (Vec<_>, Vec<_>) =
        rest.into_iter().enumerate().partition(|(j, _)| j % 2 == 0);
    chains
        .into_par_iter()
        .try_for_each(|(j, mut p)| {
            c.chain(&mut p, j / 2, s, sv).unwrap();
            p.finish(0)
        })
        .unwrap();
    let (_, mut last) = tail.pop().unwrap();
    for (_, p) in tail {
        p.finish(0).unwrap(); // the empty glue between chains
    }
    c.suffix(&mut last, s).unwrap();
    last.finish(0).unwrap();
    let asg = rec.assignment(w.into_values(), 0).unwrap();
    assert_eq!(asg, synthesize(circuit(7), Shape::default()).unwrap());

    // A piece that allocates past its range, or stops short, is an error, not a witness.
    let mut w = Witness::for_recording(&rec);
    let mut pieces = w.pieces(&tiles).unwrap();
    let short = pieces.remove(1);
    let err = short.finish(0).unwrap_err();
    assert!(err.to_string().contains("40 aux"), "{err}");
    let mut p = pieces.remove(0);
    assert!(c.chain(&mut p, 0, s, sv).is_err());
    assert!(p.finish(0).is_err());
    // Ranges that do not tile are refused.
    let mut w = Witness::for_recording(&rec);
    assert!(w.pieces(&tiles[1..]).is_err());
}

#[test]
fn mulchain_counts_and_classes() {
    let (rec, _) = record(MulChain::random(100, 2, 1), false, 0).unwrap();
    let c = rec.counts();
    assert_eq!((c.inputs, c.aux, c.circuit_rows, c.table), (3, 201, 100, 0));
    assert!(rec
        .entries(1)
        .iter()
        .all(|e| coeff::class((e >> 32) as u32) == Class::One));
}

#[test]
fn a_recordings_device_bytes_count_its_matrices_table_and_query_gathers() {
    for name in Example::NAMES {
        let (rec, _) = record(Example::new(name, sizes(name), 1).unwrap(), false, 0).unwrap();
        let [qa, qb] = cuzk_engine::gpu::spmv::query_columns(&rec).unwrap();
        let matrices: usize = (0..3)
            .map(|m| 8 * (rec.row_ptr(m).len() + rec.entries(m).len()))
            .sum();
        let exact = matrices + 32 * rec.table().len() + 4 * (qa.len() + qb.len());
        assert_eq!(
            rec.device_bytes(),
            exact as u64 + 9 * (2 << 20),
            "{name}: the nine device buffers and their rounding"
        );
    }
}
