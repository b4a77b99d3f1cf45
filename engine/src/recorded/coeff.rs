//! Coefficient classes of a recorded entry: most coefficients of real circuits are 1 or −1 (no
//! field product at all), many are small integers (packing, XOR's 2: inline, with no table
//! lookup; ±2 is a doubling), and the rest are general field elements kept once each in a side
//! table.
//!
//! A code is one `u32`: bit 31 set → general, bits 0..31 index the table; otherwise bit 30 is the
//! sign and bits 0..30 the magnitude `k ≥ 1` (so `1` is +1 and `NEG | 1` is −1).

use std::sync::OnceLock;

use blstrs::Scalar;
use ff::{Field, PrimeField};

pub const TABLE: u32 = 1 << 31;
pub const NEG: u32 = 1 << 30;
pub const SMALL_MAX: u32 = NEG - 1;
pub const ONE: u32 = 1;
pub const MINUS_ONE: u32 = NEG | 1;

/// The class of a code, for statistics and for a kernel's dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    One,
    MinusOne,
    Small,
    General,
}

pub fn class(code: u32) -> Class {
    match code {
        ONE => Class::One,
        MINUS_ONE => Class::MinusOne,
        c if c & TABLE != 0 => Class::General,
        _ => Class::Small,
    }
}

/// The magnitude of `c` if it is an integer in `1..=SMALL_MAX`.
fn small(c: &Scalar) -> Option<u32> {
    let repr = c.to_repr();
    if repr[4..].iter().any(|&b| b != 0) {
        return None;
    }
    let k = u32::from_le_bytes([repr[0], repr[1], repr[2], repr[3]]);
    (1..=SMALL_MAX).contains(&k).then_some(k)
}

/// The code of a non-zero coefficient, or `None` when it must go to the side table.
pub fn inline_code(c: &Scalar) -> Option<u32> {
    if *c == Scalar::ONE {
        return Some(ONE);
    }
    if let Some(k) = small(c) {
        return Some(k);
    }
    small(&-*c).map(|k| NEG | k)
}

/// The field value of a code (`table` resolves general codes; `None` if the index is out of it).
pub fn value(code: u32, table: &[Scalar]) -> Option<Scalar> {
    if code & TABLE != 0 {
        return table.get((code & !TABLE) as usize).copied();
    }
    let k = small_scalar(code & SMALL_MAX);
    Some(if code & NEG != 0 { -k } else { k })
}

/// `acc += v · coefficient(code)`, with no product for ±1 and ±2. General codes must index
/// `table` (a `Recording` checks every code when it is built or opened).
#[inline]
pub fn accumulate(acc: &mut Scalar, v: Scalar, code: u32, table: &[Scalar]) {
    match code {
        ONE => *acc += v,
        MINUS_ONE => *acc -= v,
        c if c & TABLE != 0 => {
            if let Some(t) = table.get((c & !TABLE) as usize) {
                *acc += v * t;
            }
        }
        c => {
            let k = c & SMALL_MAX;
            let t = if k == 2 {
                v.double()
            } else {
                v * small_scalar(k)
            };
            if c & NEG != 0 {
                *acc -= t
            } else {
                *acc += t
            }
        }
    }
}

/// `k` as a field element; the first 1024 come from a table built once.
#[inline]
fn small_scalar(k: u32) -> Scalar {
    static SMALL: OnceLock<Vec<Scalar>> = OnceLock::new();
    let t = SMALL.get_or_init(|| (0..1024u64).map(Scalar::from).collect());
    t.get(k as usize)
        .copied()
        .unwrap_or_else(|| Scalar::from(k as u64))
}

/// Whether a code is well formed for a table of `table_len` entries.
pub fn valid(code: u32, table_len: usize) -> bool {
    if code & TABLE != 0 {
        ((code & !TABLE) as usize) < table_len
    } else {
        code & SMALL_MAX != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip() {
        let table = [Scalar::from(1u64 << 40)];
        for (c, want) in [
            (Scalar::ONE, Some(ONE)),
            (-Scalar::ONE, Some(MINUS_ONE)),
            (Scalar::from(2u64), Some(2)),
            (-Scalar::from(SMALL_MAX as u64), Some(NEG | SMALL_MAX)),
            (Scalar::from(SMALL_MAX as u64 + 1), None),
            (table[0], None),
        ] {
            assert_eq!(inline_code(&c), want, "{c:?}");
            if let Some(code) = want {
                assert_eq!(value(code, &table), Some(c));
                let v = Scalar::from(12345u64);
                let mut acc = Scalar::from(7u64);
                accumulate(&mut acc, v, code, &table);
                assert_eq!(acc, Scalar::from(7u64) + v * c);
            }
        }
        assert_eq!(value(TABLE, &table), Some(table[0]));
        assert!(!valid(TABLE | 1, 1) && valid(TABLE, 1) && !valid(0, 1) && !valid(NEG, 1));
        assert_eq!(class(NEG | 5), Class::Small);
    }
}
