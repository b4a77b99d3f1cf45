//! One bit of the lean gadget ([`Bit`], bellpepper's `Boolean` without its value) and the bit
//! operations on it: `AllocatedBit::{alloc, xor, and, and_not, nor}` and `Boolean::{xor, and,
//! sha256_ch, sha256_maj}`, mirrored case for case (which operand bits are constants, allocated
//! or negated decides what is allocated and constrained, in which order and by which
//! combinations).

use bellperson::gadgets::boolean::Boolean;
use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// A bit, bellpepper's `Boolean` without its value, in one word: `0` and `1` the constants false
/// and true; otherwise bit 1 is set, bit 0 says `Not`, bit 2 an input variable, and the
/// variable's index is above. Negation is `^ 1` for all three kinds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Bit(u64);

pub(super) const FALSE: Bit = Bit(0);
pub(super) const TRUE: Bit = Bit(1);

impl Bit {
    pub(super) fn constant(v: bool) -> Bit {
        Bit(v as u64)
    }

    pub(super) fn is(var: Variable) -> Bit {
        match var.get_unchecked() {
            Index::Aux(i) => Bit((i as u64) << 3 | 2),
            Index::Input(i) => Bit((i as u64) << 3 | 6),
        }
    }

    pub(super) fn of(b: &Boolean) -> Bit {
        match b {
            Boolean::Constant(v) => Bit::constant(*v),
            Boolean::Is(v) => Bit::is(v.get_variable()),
            Boolean::Not(v) => Bit::is(v.get_variable()).not(),
        }
    }

    #[inline(always)]
    pub(super) fn is_constant(self) -> bool {
        self.0 & 2 == 0
    }

    /// A `Not` (for an allocated bit).
    #[inline(always)]
    pub(super) fn negated(self) -> bool {
        self.0 & 1 == 1
    }

    #[inline(always)]
    pub(super) fn not(self) -> Bit {
        Bit(self.0 ^ 1)
    }

    /// The variable of an allocated bit.
    #[inline(always)]
    pub(super) fn var(self) -> Variable {
        let i = (self.0 >> 3) as usize;
        Variable::new_unchecked(if self.0 & 4 == 0 {
            Index::Aux(i)
        } else {
            Index::Input(i)
        })
    }

    /// `Boolean::lc`.
    pub(super) fn lc(self, one: Variable, coeff: Scalar) -> LinearCombination<Scalar> {
        if self.is_constant() {
            if self == TRUE {
                LinearCombination::zero() + (coeff, one)
            } else {
                LinearCombination::zero()
            }
        } else if self.negated() {
            LinearCombination::zero() + (coeff, one) - (coeff, self.var())
        } else {
            LinearCombination::zero() + (coeff, self.var())
        }
    }
}

const SCALARS: [Scalar; 2] = [Scalar::ZERO, Scalar::ONE];

/// An allocated bit's value, as bellpepper's closures give it.
#[inline(always)]
pub(super) fn scalar(v: Option<bool>) -> Result<Scalar, SynthesisError> {
    match v {
        Some(b) => Ok(SCALARS[b as usize]),
        None => Err(SynthesisError::AssignmentMissing),
    }
}

/// `AllocatedBit::alloc`.
#[inline(always)]
pub(super) fn alloc_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    v: Option<bool>,
) -> Result<Variable, SynthesisError> {
    let var = cs.alloc(|| "boolean", || scalar(v))?;
    cs.enforce(
        || "boolean constraint",
        |lc| lc + CS::one() - var,
        |lc| lc + var,
        |lc| lc,
    );
    Ok(var)
}

/// `AllocatedBit::xor` of the variables of `a` and `b`, its value `v`.
#[inline(always)]
fn alloc_xor<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "xor result", || scalar(v))?;
    cs.enforce(
        || "xor constraint",
        |lc| lc + a.var() + a.var(),
        |lc| lc + b.var(),
        |lc| lc + a.var() + b.var() - r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::and`.
#[inline(always)]
fn alloc_and<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "and result", || scalar(v))?;
    cs.enforce(
        || "and constraint",
        |lc| lc + a.var(),
        |lc| lc + b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::and_not`: `a and not b`, of the variables.
#[inline(always)]
fn alloc_and_not<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "and not result", || scalar(v))?;
    cs.enforce(
        || "and not constraint",
        |lc| lc + a.var(),
        |lc| lc + CS::one() - b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

/// `AllocatedBit::nor`.
#[inline(always)]
fn alloc_nor<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    let r = cs.alloc(|| "nor result", || scalar(v))?;
    cs.enforce(
        || "nor constraint",
        |lc| lc + CS::one() - a.var(),
        |lc| lc + CS::one() - b.var(),
        |lc| lc + r,
    );
    Ok(Bit::is(r))
}

fn not(v: Option<bool>) -> Option<bool> {
    v.map(|v| !v)
}

/// `Boolean::xor`; `v` is the value of `a xor b`.
#[inline(always)]
pub(super) fn xor_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a == FALSE {
        return Ok(b);
    }
    if b == FALSE {
        return Ok(a);
    }
    if a == TRUE {
        return Ok(b.not());
    }
    if b == TRUE {
        return Ok(a.not());
    }
    match (a.negated(), b.negated()) {
        // a xor (not b) = not (a xor b), the `Is` operand first.
        (false, true) => Ok(alloc_xor(cs, a, b, not(v))?.not()),
        (true, false) => Ok(alloc_xor(cs, b, a, not(v))?.not()),
        // (not a) xor (not b) = a xor b.
        _ => alloc_xor(cs, a, b, v),
    }
}

/// `Boolean::and`; `v` is the value of `a and b`.
#[inline(always)]
pub(super) fn and_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a == FALSE || b == FALSE {
        return Ok(FALSE);
    }
    if a == TRUE {
        return Ok(b);
    }
    if b == TRUE {
        return Ok(a);
    }
    match (a.negated(), b.negated()) {
        (false, true) => alloc_and_not(cs, a, b, v),
        (true, false) => alloc_and_not(cs, b, a, v),
        (true, true) => alloc_nor(cs, a, b, v),
        (false, false) => alloc_and(cs, a, b, v),
    }
}

/// `Boolean::sha256_ch`: `(a and b) xor (not a and c)`, its value `v`.
#[inline(always)]
pub(super) fn ch_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    c: Bit,
    v: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a.is_constant() && b.is_constant() && c.is_constant() {
        let (a, b, c) = (a == TRUE, b == TRUE, c == TRUE);
        return Ok(Bit::constant((a & b) ^ (!a & c)));
    }
    if a == FALSE {
        return Ok(c);
    }
    if b == FALSE {
        return and_bit(cs, a.not(), c, v);
    }
    if c == FALSE {
        return and_bit(cs, a, b, v);
    }
    if c == TRUE {
        return Ok(and_bit(cs, a, b.not(), not(v))?.not());
    }
    if b == TRUE {
        return Ok(and_bit(cs, a.not(), c.not(), not(v))?.not());
    }
    // `a` true or allocated, `b` and `c` allocated.
    let ch = cs.alloc(|| "ch", || scalar(v))?;
    let one = CS::one();
    cs.enforce(
        || "ch computation",
        |_| b.lc(one, Scalar::ONE) - &c.lc(one, Scalar::ONE),
        |_| a.lc(one, Scalar::ONE),
        |lc| lc + ch - &c.lc(one, Scalar::ONE),
    );
    Ok(Bit::is(ch))
}

/// `Boolean::sha256_maj`: `(a and b) xor (a and c) xor (b and c)`, its value `v`; `bc` is the
/// value of `b and c`.
#[inline(always)]
pub(super) fn maj_bit<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    a: Bit,
    b: Bit,
    c: Bit,
    v: Option<bool>,
    bc: Option<bool>,
) -> Result<Bit, SynthesisError> {
    if a.is_constant() && b.is_constant() && c.is_constant() {
        let (a, b, c) = (a == TRUE, b == TRUE, c == TRUE);
        return Ok(Bit::constant((a & b) ^ (a & c) ^ (b & c)));
    }
    if a == FALSE {
        return and_bit(cs, b, c, v);
    }
    if b == FALSE {
        return and_bit(cs, a, c, v);
    }
    if c == FALSE {
        return and_bit(cs, a, b, v);
    }
    if c == TRUE {
        return Ok(and_bit(cs, a.not(), b.not(), not(v))?.not());
    }
    if b == TRUE {
        return Ok(and_bit(cs, a.not(), c.not(), not(v))?.not());
    }
    if a == TRUE {
        return Ok(and_bit(cs, b.not(), c.not(), not(v))?.not());
    }
    let maj = cs.alloc(|| "maj", || scalar(v))?;
    let bc = and_bit(&mut cs.namespace(|| "b and c"), b, c, bc)?;
    let one = CS::one();
    cs.enforce(
        || "maj computation",
        |_| {
            bc.lc(one, Scalar::ONE) + &bc.lc(one, Scalar::ONE)
                - &b.lc(one, Scalar::ONE)
                - &c.lc(one, Scalar::ONE)
        },
        |_| a.lc(one, Scalar::ONE),
        |_| bc.lc(one, Scalar::ONE) - maj,
    );
    Ok(Bit::is(maj))
}
