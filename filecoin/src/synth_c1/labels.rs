//! The labels of the nodes the proofs open, and the replica at the challenged nodes.
//!
//! The circuit checks only that each challenged node's label on each layer is derived from its
//! parents' labels (base parents on the same layer, expansion parents on the layer below,
//! repeated to `TOTAL_PARENTS`, as `LabelingProof` and the circuit take them) and that the
//! replica leaf is the data leaf encoded with the last layer's label. So a parent that is not
//! itself challenged gets free labels (drawn from the rng), and the challenged nodes' labels are
//! computed layer by layer, in node order within a layer: a base parent is always an earlier node
//! (so a challenged base parent's label on this layer already exists), an expansion parent's is
//! on the layer below.

use std::collections::{BTreeMap, BTreeSet};

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{Domain, Hasher};
use rand::RngCore;
use storage_proofs_core::drgraph::BASE_DEGREE;
use storage_proofs_porep::stacked::TOTAL_PARENTS;

use super::data::fr_safe_sha256;
use crate::error::FilecoinError;

/// Labels of every opened node, and how each challenged node's were made.
pub struct Labels<H: Hasher> {
    /// Node → its labels on layers 1..=layers (its column).
    pub columns: BTreeMap<u64, Vec<H::Domain>>,
    /// Challenged node → per layer, the parents' labels its label hashes (`TOTAL_PARENTS`).
    pub labeling: BTreeMap<u64, Vec<Vec<H::Domain>>>,
}

/// storage-proofs' label: SHA-256 of the replica id, the layer (u32 BE) and the node (u64 BE)
/// in a 64-byte block, then the parents' labels; Fr-safe.
pub fn label<D: Domain>(replica_id: &D, layer: u32, node: u64, parents: &[D]) -> D {
    let mut head = [0u8; 64];
    head[..32].copy_from_slice(replica_id.as_ref());
    head[32..36].copy_from_slice(&layer.to_be_bytes());
    head[36..44].copy_from_slice(&node.to_be_bytes());
    let mut parts: Vec<&[u8]> = vec![&head];
    parts.extend(parents.iter().map(|p| p.as_ref()));
    D::try_from_bytes(&fr_safe_sha256(&parts)).expect("an Fr-safe label is a domain element")
}

/// The encoding of `data` under `key` (storage-proofs' `encode`: their sum in Fr).
pub fn encode<D: Domain, E: Domain>(key: D, data: E) -> D {
    let (k, d): (Fr, Fr) = (key.into(), data.into());
    (k + d).into()
}

/// Assigns the labels of `parents`' nodes (free) and computes the challenged nodes' labels.
pub fn assign<H: Hasher>(
    replica_id: &H::Domain,
    layers: usize,
    parents: &BTreeMap<u64, Vec<u32>>,
    rng: &mut impl RngCore,
) -> Result<Labels<H>, FilecoinError> {
    let challenged: BTreeSet<u64> = parents.keys().copied().collect();
    let mut columns: BTreeMap<u64, Vec<H::Domain>> = BTreeMap::new();
    for ps in parents.values() {
        for &p in ps {
            let p = u64::from(p);
            if !challenged.contains(&p) && !columns.contains_key(&p) {
                let col = (0..layers)
                    .map(|_| H::Domain::from(Fr::random(&mut *rng)))
                    .collect();
                columns.insert(p, col);
            }
        }
    }
    for (&c, ps) in parents {
        if let Some(&p) = ps[..BASE_DEGREE].iter().find(|&&p| u64::from(p) >= c) {
            return Err(FilecoinError::invalid(
                "synthetic labels",
                format!("base parent {p} of node {c} is not an earlier node"),
            ));
        }
        columns.insert(c, Vec::with_capacity(layers));
    }
    let mut labeling: BTreeMap<u64, Vec<Vec<H::Domain>>> = BTreeMap::new();
    for layer in 1..=layers {
        for (&c, ps) in parents {
            let at =
                |node: u32, layer: usize| -> H::Domain { columns[&u64::from(node)][layer - 1] };
            let mut own: Vec<H::Domain> = ps[..BASE_DEGREE].iter().map(|&p| at(p, layer)).collect();
            if layer > 1 {
                own.extend(ps[BASE_DEGREE..].iter().map(|&p| at(p, layer - 1)));
            }
            let repeated: Vec<H::Domain> =
                own.iter().copied().cycle().take(TOTAL_PARENTS).collect();
            let l = label(replica_id, layer as u32, c, &repeated);
            columns.get_mut(&c).expect("inserted above").push(l);
            labeling.entry(c).or_default().push(repeated);
        }
    }
    Ok(Labels { columns, labeling })
}
