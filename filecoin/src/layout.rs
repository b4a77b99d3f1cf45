//! The parameter layout a registered proof's circuit needs, counted from its blank circuit: what
//! cuzk expects of a `.params` file before any is opened (and what a setup must produce).

use bellperson::Circuit;
use blstrs::Scalar;
use serde::Serialize;

use crate::error::FilecoinError;
use crate::params;
use crate::registered::Registered;
use crate::sink::BlankSink;

/// Counts of a circuit in bellperson's conventions (`one` and the input rows included) and the
/// section sizes of the parameter file it is proved against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CircuitLayout {
    /// Rows of A, B, C: the circuit's constraints plus one per input.
    pub constraints: u64,
    /// Public inputs, `one` included (= `n_ic`).
    pub inputs: u64,
    /// Aux variables (= `n_l`).
    pub aux: u64,
    /// The evaluation domain (`n_h + 1`).
    pub domain: u64,
    /// Inputs, and aux variables appearing in A (= `n_a`).
    pub a: u64,
    /// Inputs and aux variables appearing in B (= `n_b1 = n_b2`).
    pub b: u64,
}

impl CircuitLayout {
    /// Bytes of the `.params` file: the verifying key, the counts and every point section.
    pub fn params_bytes(&self) -> u64 {
        let (g1, g2) = (96u64, 192u64);
        3 * g1
            + 3 * g2
            + 6 * 4
            + g1 * (self.inputs + self.domain - 1 + self.aux + self.a + self.b)
            + g2 * self.b
    }

    /// The layout of an opened parameter set, for comparison.
    pub fn of_srs(srs: &cuzk_srs::Srs) -> CircuitLayout {
        CircuitLayout {
            constraints: 0,
            inputs: srs.num_inputs() as u64,
            aux: srs.l().len() as u64,
            domain: srs.domain_size() as u64,
            a: srs.a().len() as u64,
            b: srs.b_g1().len() as u64,
        }
    }

    /// Whether `srs` has exactly this layout (the constraint count is not in a parameter file;
    /// the domain stands for it).
    pub fn matches(&self, srs: &cuzk_srs::Srs) -> bool {
        CircuitLayout {
            constraints: 0,
            ..*self
        } == CircuitLayout::of_srs(srs)
    }
}

/// Counts `registered`'s blank circuit (single-threaded, no witness; tens of seconds at 32 GiB).
pub fn of(registered: Registered) -> Result<CircuitLayout, FilecoinError> {
    params::blank(registered, Count)?
}

struct Count;

impl BlankSink for Count {
    type Out = Result<CircuitLayout, FilecoinError>;
    fn take<C: Circuit<Scalar> + Clone + Send + 'static>(self, blank: C) -> Self::Out {
        let l = cuzk_engine::r1cs::layout(blank)
            .map_err(|source| cuzk_engine::EngineError::Synthesis { circuit: 0, source })?;
        Ok(CircuitLayout {
            constraints: l.constraints as u64,
            inputs: l.inputs as u64,
            aux: l.aux as u64,
            domain: (l.constraints as u64).next_power_of_two(),
            a: l.a as u64,
            b: l.b as u64,
        })
    }
}
