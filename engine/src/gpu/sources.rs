//! The CUDA C++ sources under `cuda-src/`, embedded at build time and assembled into the
//! compilation units ("modules") that NVRTC compiles. NVRTC gets no file system, so each module
//! is its headers concatenated in dependency order, followed by its kernel file.

const COMMON: (&str, &str) = ("common.cuh", include_str!("../../../cuda-src/common.cuh"));
const FIELD: (&str, &str) = ("field.cuh", include_str!("../../../cuda-src/field.cuh"));
const FR: (&str, &str) = ("fr.cuh", include_str!("../../../cuda-src/fr.cuh"));
const FR52: (&str, &str) = ("fr52.cuh", include_str!("../../../cuda-src/fr52.cuh"));
const FP: (&str, &str) = ("fp.cuh", include_str!("../../../cuda-src/fp.cuh"));
const FP2: (&str, &str) = ("fp2.cuh", include_str!("../../../cuda-src/fp2.cuh"));
const CURVE: (&str, &str) = ("curve.cuh", include_str!("../../../cuda-src/curve.cuh"));
const BITREV: (&str, &str) = ("bitrev.cuh", include_str!("../../../cuda-src/bitrev.cuh"));

/// One NVRTC compilation unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Module {
    /// Field arithmetic test kernels (Fr, Fp, Fp2).
    Arith,
    /// NTT passes and twiddle generation.
    Ntt,
    /// Coset scaling, H quotient, bit reversal.
    H,
    /// Pippenger MSM over G1 and G2.
    Msm,
    /// Batch addition and XYZZ folds over G1 and G2.
    BatchAdd,
    /// A recorded witness on the device: the sparse matrix–vector products (a, b, c from the
    /// witness) and the MSM scalar splits.
    Spmv,
    /// Fixed-base multiplication over G1 and G2, for the setup.
    FixedBase,
}

impl Module {
    pub const ALL: [Module; 7] = [
        Module::Arith,
        Module::Ntt,
        Module::H,
        Module::Msm,
        Module::BatchAdd,
        Module::Spmv,
        Module::FixedBase,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Module::Arith => "arith",
            Module::Ntt => "ntt",
            Module::H => "h",
            Module::Msm => "msm",
            Module::BatchAdd => "batch_add",
            Module::Spmv => "spmv",
            Module::FixedBase => "fixed_base",
        }
    }

    fn parts(self) -> Vec<(&'static str, &'static str)> {
        let fields = vec![COMMON, FIELD, FR, FP, FP2];
        let mut parts = match self {
            Module::Ntt | Module::H => vec![COMMON, FIELD, FR, BITREV],
            Module::Spmv => vec![COMMON, FIELD, FR],
            Module::Arith => vec![COMMON, FIELD, FR, FR52, FP, FP2],
            Module::Msm | Module::BatchAdd | Module::FixedBase => {
                let mut v = fields;
                v.push(CURVE);
                v
            }
        };
        parts.push(match self {
            Module::Arith => ("arith.cu", include_str!("../../../cuda-src/arith.cu")),
            Module::Ntt => ("ntt.cu", include_str!("../../../cuda-src/ntt.cu")),
            Module::H => ("h.cu", include_str!("../../../cuda-src/h.cu")),
            Module::Msm => ("msm.cu", include_str!("../../../cuda-src/msm.cu")),
            Module::BatchAdd => (
                "batch_add.cu",
                include_str!("../../../cuda-src/batch_add.cu"),
            ),
            Module::Spmv => ("spmv.cu", include_str!("../../../cuda-src/spmv.cu")),
            Module::FixedBase => (
                "fixed_base.cu",
                include_str!("../../../cuda-src/fixed_base.cu"),
            ),
        });
        if self == Module::Spmv {
            parts.push(("split.cu", include_str!("../../../cuda-src/split.cu")));
            parts.push(("witness.cu", include_str!("../../../cuda-src/witness.cu")));
        }
        parts
    }

    /// The full source NVRTC compiles for this module.
    pub fn source(self) -> String {
        let mut s = String::new();
        for (name, text) in self.parts() {
            s.push_str(&format!("// ---- cuda-src/{name} ----\n"));
            s.push_str(text);
            s.push('\n');
        }
        s
    }
}
