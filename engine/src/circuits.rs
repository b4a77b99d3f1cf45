//! Example circuits: what `cuzk prove` and `cuzk bench` run, and what the tests prove against
//! bellperson. Each is an ordinary `bellperson::Circuit`, written as a user would write one.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, sha256::sha256};
use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `m` multiplications chained through random field elements: `(x_i + p_j) · y_i = x_{i+1}`, where
/// the first `inputs` rows add a public input `p_j`. Every witness value is a random field
/// element, so the 0/1 split gives no advantage. Rows: `m + inputs + 1`.
#[derive(Clone)]
pub struct MulChain {
    pub x0: Scalar,
    pub ys: Vec<Scalar>,
    pub public: Vec<Scalar>,
}

impl MulChain {
    pub fn random(m: usize, inputs: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        MulChain {
            x0: Scalar::random(&mut rng),
            ys: (0..m).map(|_| Scalar::random(&mut rng)).collect(),
            public: (0..inputs).map(|_| Scalar::random(&mut rng)).collect(),
        }
    }

    /// A chain whose rows (constraints plus one per input and `one`) fill a domain of `2^log_n`.
    pub fn filling_domain(log_n: u32, inputs: usize, seed: u64) -> Self {
        Self::random((1usize << log_n) - inputs - 1, inputs, seed)
    }
}

impl Circuit<Scalar> for MulChain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let publics = self
            .public
            .iter()
            .enumerate()
            .map(|(j, p)| cs.alloc_input(|| format!("p{j}"), || Ok(*p)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut x_val = self.x0;
        let mut x = cs.alloc(|| "x0", || Ok(x_val))?;
        for (i, y_val) in self.ys.iter().enumerate() {
            let y = cs.alloc(|| format!("y{i}"), || Ok(*y_val))?;
            let p = publics.get(i).copied();
            let a_val = if p.is_some() {
                x_val + self.public[i]
            } else {
                x_val
            };
            let z_val = a_val * y_val;
            let z = cs.alloc(|| format!("x{}", i + 1), || Ok(z_val))?;
            cs.enforce(
                || format!("mul{i}"),
                |lc| if let Some(p) = p { lc + x + p } else { lc + x },
                |lc| lc + y,
                |lc| lc + z,
            );
            x = z;
            x_val = z_val;
        }
        Ok(())
    }
}

/// Many public inputs, used in A and B alike: `p_i · p_{i+1} = t_i` around a ring of inputs, then
/// `Σ t_i` folded by one more product.
#[derive(Clone)]
pub struct ManyInputs {
    pub public: Vec<Scalar>,
}

impl ManyInputs {
    pub fn random(inputs: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        ManyInputs {
            public: (0..inputs).map(|_| Scalar::random(&mut rng)).collect(),
        }
    }
}

impl Circuit<Scalar> for ManyInputs {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let k = self.public.len();
        let ps = self
            .public
            .iter()
            .enumerate()
            .map(|(i, p)| cs.alloc_input(|| format!("p{i}"), || Ok(*p)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut sum = Scalar::ZERO;
        let mut ts = Vec::with_capacity(k);
        for i in 0..k {
            let v = self.public[i] * self.public[(i + 1) % k];
            sum += v;
            let t = cs.alloc(|| format!("t{i}"), || Ok(v))?;
            let (a, b) = (ps[i], ps[(i + 1) % k]);
            cs.enforce(|| format!("ring{i}"), |lc| lc + a, |lc| lc + b, |lc| lc + t);
            ts.push(t);
        }
        let sq = cs.alloc(|| "sum²", || Ok(sum.square()))?;
        cs.enforce(
            || "fold",
            |lc| ts.iter().fold(lc, |lc, t| lc + *t),
            |lc| ts.iter().fold(lc, |lc, t| lc + *t),
            |lc| lc + sq,
        );
        Ok(())
    }
}

/// Mostly boolean aux: pairs of 64-bit words decomposed into bits (booleanity and packing
/// constraints), then their XOR and AND bit by bit; the XOR words are public inputs.
#[derive(Clone)]
pub struct Bits {
    pub pairs: Vec<(u64, u64)>,
}

impl Bits {
    pub fn random(pairs: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Bits {
            pairs: (0..pairs).map(|_| (rng.gen(), rng.gen())).collect(),
        }
    }
}

fn alloc_word<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    name: &str,
    w: u64,
) -> Result<Vec<Variable>, SynthesisError> {
    let bits = (0..64)
        .map(|i| {
            let bit = AllocatedBit::alloc(
                cs.namespace(|| format!("{name}.{i}")),
                Some(w >> i & 1 == 1),
            )?;
            Ok(bit.get_variable())
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    let packed = cs.alloc(|| format!("{name}.packed"), || Ok(Scalar::from(w)))?;
    let mut coeff = Scalar::ONE;
    let mut lc = LinearCombination::zero();
    for b in &bits {
        lc = lc + (coeff, *b);
        coeff = coeff.double();
    }
    cs.enforce(
        || format!("{name}.pack"),
        |_| lc,
        |l| l + CS::one(),
        |l| l + packed,
    );
    Ok(bits)
}

impl Circuit<Scalar> for Bits {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (k, (u, v)) in self.pairs.iter().enumerate() {
            let x = u ^ v;
            let out = cs.alloc_input(|| format!("xor{k}"), || Ok(Scalar::from(x)))?;
            let ub = alloc_word(cs, &format!("u{k}"), *u)?;
            let vb = alloc_word(cs, &format!("v{k}"), *v)?;
            let mut xor_lc = LinearCombination::zero();
            let mut coeff = Scalar::ONE;
            for i in 0..64 {
                let (bu, bv) = (u >> i & 1, v >> i & 1);
                let xb = cs.alloc(|| format!("x{k}.{i}"), || Ok(Scalar::from(bu ^ bv)))?;
                let ab = cs.alloc(|| format!("a{k}.{i}"), || Ok(Scalar::from(bu & bv)))?;
                // AND: u·v = a.  XOR: (2u)·v = u + v − x.
                cs.enforce(
                    || format!("and{k}.{i}"),
                    |l| l + ub[i],
                    |l| l + vb[i],
                    |l| l + ab,
                );
                cs.enforce(
                    || format!("xor{k}.{i}"),
                    |l| l + (Scalar::from(2u64), ub[i]),
                    |l| l + vb[i],
                    |l| l + ub[i] + vb[i] - xb,
                );
                xor_lc = xor_lc + (coeff, xb);
                coeff = coeff.double();
            }
            cs.enforce(
                || format!("xor{k}.pack"),
                |_| xor_lc,
                |l| l + CS::one(),
                |l| l + out,
            );
        }
        Ok(())
    }
}

/// Only public inputs, no aux at all: `x·y = z` and `z·y = w` with `x, y, z, w` public.
#[derive(Clone)]
pub struct NoAux {
    pub x: Scalar,
    pub y: Scalar,
}

impl NoAux {
    pub fn random(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        NoAux {
            x: Scalar::random(&mut rng),
            y: Scalar::random(&mut rng),
        }
    }
}

impl Circuit<Scalar> for NoAux {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (xv, yv) = (self.x, self.y);
        let x = cs.alloc_input(|| "x", || Ok(xv))?;
        let y = cs.alloc_input(|| "y", || Ok(yv))?;
        let z = cs.alloc_input(|| "z", || Ok(xv * yv))?;
        let w = cs.alloc_input(|| "w", || Ok(xv * yv * yv))?;
        cs.enforce(|| "xy", |l| l + x, |l| l + y, |l| l + z);
        cs.enforce(|| "zy", |l| l + z, |l| l + y, |l| l + w);
        Ok(())
    }
}

/// Aux variables that appear only in C (never in A or B): `x·y = z`, `x·x = s`, `(z + s)·1 = u`
/// with `z, s` in C only, and `u` public.
#[derive(Clone)]
pub struct COnlyAux {
    pub x: Scalar,
    pub y: Scalar,
    pub rows: usize,
}

impl COnlyAux {
    pub fn random(rows: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        COnlyAux {
            x: Scalar::random(&mut rng),
            y: Scalar::random(&mut rng),
            rows,
        }
    }
}

impl Circuit<Scalar> for COnlyAux {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (xv, yv) = (self.x, self.y);
        let x = cs.alloc_input(|| "x", || Ok(xv))?;
        let y = cs.alloc_input(|| "y", || Ok(yv))?;
        let mut total = Scalar::ZERO;
        let mut only_c = Vec::new();
        for i in 0..self.rows {
            let k = Scalar::from(i as u64 + 1);
            let zv = xv * yv * k;
            let z = cs.alloc(|| format!("z{i}"), || Ok(zv))?;
            cs.enforce(|| format!("xy{i}"), |l| l + (k, x), |l| l + y, |l| l + z);
            total += zv;
            only_c.push(z);
        }
        let s = cs.alloc(|| "s", || Ok(xv.square()))?;
        cs.enforce(|| "xx", |l| l + x, |l| l + x, |l| l + s);
        let u = cs.alloc_input(|| "u", || Ok(total + xv.square()))?;
        // z_i and s appear in C above; this sum puts them in C again (times the constant one in B).
        cs.enforce(
            || "sum",
            |l| l + CS::one(),
            |l| l + u,
            |l| only_c.iter().fold(l, |l, z| l + *z) + s,
        );
        Ok(())
    }
}

/// SHA-256 of a secret preimage, built from bellperson's own gadgets; the digest bits are packed
/// into public inputs.
#[derive(Clone)]
pub struct Sha256Preimage {
    pub preimage: Vec<u8>,
}

impl Sha256Preimage {
    pub fn random(len: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Sha256Preimage {
            preimage: (0..len).map(|_| rng.gen()).collect(),
        }
    }

    /// The public inputs a verifier needs: the digest bits packed as bellperson's `multipack` does.
    pub fn public_inputs(digest: &[u8]) -> Vec<Scalar> {
        multipack::compute_multipacking(&multipack::bytes_to_bits(digest))
    }
}

impl Circuit<Scalar> for Sha256Preimage {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = multipack::bytes_to_bits(&self.preimage);
        let input = bits
            .iter()
            .enumerate()
            .map(|(i, b)| {
                Ok(Boolean::from(AllocatedBit::alloc(
                    cs.namespace(|| format!("bit{i}")),
                    Some(*b),
                )?))
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &input)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

/// A circuit that claims a wrong product (to test that unsatisfied witnesses are refused).
#[derive(Clone)]
pub struct Unsatisfied {
    pub good_rows: usize,
}

impl Circuit<Scalar> for Unsatisfied {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let two = Scalar::from(2u64);
        let x = cs.alloc(|| "x", || Ok(two))?;
        for i in 0..self.good_rows {
            cs.enforce(|| format!("ok{i}"), |l| l + x, |l| l + CS::one(), |l| l + x);
        }
        let bad = cs.alloc(|| "bad", || Ok(Scalar::from(5u64)))?;
        cs.enforce(|| "2·2=5", |l| l + x, |l| l + x, |l| l + bad);
        Ok(())
    }
}

/// `y = x²` with `y` a public input: a wrong `y` keeps the shape and breaks row 0 (the
/// recorded path's row checks are tested with it).
#[derive(Clone)]
pub struct Square {
    pub x: Scalar,
    pub y: Scalar,
}

impl Circuit<Scalar> for Square {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.x))?;
        let y = cs.alloc_input(|| "y", || Ok(self.y))?;
        cs.enforce(|| "x·x = y", |l| l + x, |l| l + x, |l| l + y);
        Ok(())
    }
}

/// The example circuits by name, as one type (what `cuzk prove` and `cuzk bench` pick from).
#[derive(Clone)]
pub enum Example {
    MulChain(MulChain),
    ManyInputs(ManyInputs),
    Bits(Bits),
    NoAux(NoAux),
    COnlyAux(COnlyAux),
    Sha256(Sha256Preimage),
}

impl Example {
    /// Seed of the local setup for the examples (fixed, so a parameter file is reused by every
    /// tool that proves examples: `cuzk prove`, `bench`, the daemon).
    pub const SETUP_SEED: u64 = 0x5eed;

    /// The parameter file of example `name` at `size` inside `dir`.
    pub fn params_path(dir: &std::path::Path, name: &str, size: usize) -> std::path::PathBuf {
        dir.join(format!("{name}-{size}.params"))
    }

    pub const NAMES: [&'static str; 6] = [
        "mulchain",
        "many-inputs",
        "bits",
        "no-aux",
        "c-only",
        "sha256",
    ];

    /// The example `name` at `size` (its meaning per circuit: log2 of the domain for `mulchain`,
    /// inputs for `many-inputs`, word pairs for `bits`, rows for `c-only`, preimage bytes for
    /// `sha256`), with a witness drawn from `seed`. Same name and size ⇒ same shape, so the
    /// partitions of a proof (different seeds) share one parameter set.
    pub fn new(name: &str, size: usize, seed: u64) -> Option<Example> {
        Some(match name {
            "mulchain" => Example::MulChain(MulChain::filling_domain(size as u32, 2, seed)),
            "many-inputs" => Example::ManyInputs(ManyInputs::random(size, seed)),
            "bits" => Example::Bits(Bits::random(size, seed)),
            "no-aux" => Example::NoAux(NoAux::random(seed)),
            "c-only" => Example::COnlyAux(COnlyAux::random(size, seed)),
            "sha256" => Example::Sha256(Sha256Preimage::random(size, seed)),
            _ => return None,
        })
    }

    /// A reasonable size for each example.
    pub fn default_size(name: &str) -> usize {
        match name {
            "mulchain" => 16,
            "many-inputs" => 40,
            "bits" => 64,
            "c-only" => 100,
            "sha256" => 64,
            _ => 0,
        }
    }
}

impl Circuit<Scalar> for Example {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Example::MulChain(c) => c.synthesize(cs),
            Example::ManyInputs(c) => c.synthesize(cs),
            Example::Bits(c) => c.synthesize(cs),
            Example::NoAux(c) => c.synthesize(cs),
            Example::COnlyAux(c) => c.synthesize(cs),
            Example::Sha256(c) => c.synthesize(cs),
        }
    }
}
