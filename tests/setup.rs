//! cuzk's fast setup computes bellperson's parameters byte for byte (same seed, same trapdoors,
//! same points), and the proofs against them verify.

use bellperson::Circuit;
use blstrs::Scalar;
use cuzk_e2e::bellperson_params;
use cuzk_engine::circuits::{Bits, COnlyAux, ManyInputs, MulChain, NoAux, Sha256Preimage};
use cuzk_engine::setup::generate;

fn same_bytes<C: Circuit<Scalar> + Clone>(name: &str, c: C) {
    let theirs = bellperson_params(c.clone(), 5);
    let ours = generate(c, 5).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    theirs.write(&mut a).unwrap();
    ours.write(&mut b).unwrap();
    assert_eq!(a.len(), b.len(), "{name}: parameter sizes differ");
    assert!(a == b, "{name}: parameters differ from bellperson's");
}

#[test]
fn fast_setup_equals_bellperson_generator() {
    same_bytes("mulchain", MulChain::random(3000, 3, 1));
    same_bytes("many_inputs", ManyInputs::random(40, 2));
    same_bytes("bits", Bits::random(4, 3));
    same_bytes("no_aux", NoAux::random(4));
    same_bytes("c_only", COnlyAux::random(20, 5));
    same_bytes("sha256", Sha256Preimage::random(8, 6));
}
