//! Sparse Merkle trees: only the leaves that were set and the nodes above them exist; every
//! untouched subtree hashes to its level's precomputed default. Nodes are hashed exactly as
//! storage-proofs' `InclusionPath::root` hashes them (`multi_node(children, height)`, the height
//! counted from 0 within each of the base, sub and top paths), so the paths this tree hands out
//! are `MerkleProof`s that storage-proofs and the PoRep circuit accept.

use std::collections::{BTreeMap, HashMap};

use filecoin_hashers::Hasher;
use merkletree::hash::Algorithm;

use crate::error::FilecoinError;

/// One level of a tree: how many children a node has and the height `multi_node` is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    pub arity: usize,
    pub height: usize,
}

/// The levels of a tree of `nodes` leaves shaped as filecoin-proofs' `(Arity, SubTreeArity,
/// TopTreeArity)`: base levels of `base` arity, then one level of `sub` and one of `top` where
/// those are not 0 (storage-proofs' `from_parts` splits the path the same way).
pub fn shape(nodes: u64, base: usize, sub: usize, top: usize) -> Result<Vec<Level>, FilecoinError> {
    let split = (sub.max(1) * top.max(1)) as u64;
    let bad = || {
        FilecoinError::invalid(
            "sparse tree shape",
            format!("{nodes} leaves do not fill arities {base}/{sub}/{top}"),
        )
    };
    if base < 2 || nodes == 0 || !nodes.is_multiple_of(split) {
        return Err(bad());
    }
    let mut base_leaves = nodes / split;
    let mut levels = Vec::new();
    while base_leaves > 1 {
        if !base_leaves.is_multiple_of(base as u64) {
            return Err(bad());
        }
        levels.push(Level {
            arity: base,
            height: levels.len(),
        });
        base_leaves /= base as u64;
    }
    for a in [sub, top] {
        if a > 0 {
            levels.push(Level {
                arity: a,
                height: 0,
            });
        }
    }
    Ok(levels)
}

/// A Merkle path as storage-proofs' `MerkleProof::from_parts` takes it: per level, from the
/// leaves up, the siblings in order and the position among them.
pub type Path<D> = Vec<(Vec<D>, usize)>;

/// The path of leaf `i` of a tree of `leaves` leaves over `levels`, each sibling read by
/// `node(level, index)`; an error naming `what` when `i` is past the leaves.
pub fn path_of<D>(
    what: &str,
    levels: &[Level],
    leaves: u64,
    i: u64,
    node: impl Fn(usize, u64) -> D,
) -> Result<Path<D>, FilecoinError> {
    if i >= leaves {
        return Err(FilecoinError::invalid(
            what,
            format!("leaf {i} of a tree of {leaves} leaves"),
        ));
    }
    let mut at = i;
    let mut path = Vec::with_capacity(levels.len());
    for (k, l) in levels.iter().enumerate() {
        let a = l.arity as u64;
        let (parent, index) = (at / a, (at % a) as usize);
        let siblings = (0..a)
            .filter(|&c| c as usize != index)
            .map(|c| node(k, parent * a + c))
            .collect();
        path.push((siblings, index));
        at = parent;
    }
    Ok(path)
}

/// A sparse tree of hasher `H`.
pub struct SparseTree<H: Hasher> {
    levels: Vec<Level>,
    /// `defaults[k]`: the value of an untouched node at level `k` (0 = leaves).
    defaults: Vec<H::Domain>,
    /// `nodes[k]`: the nodes of level `k` that exist (below the root).
    nodes: Vec<HashMap<u64, H::Domain>>,
    root: H::Domain,
    leaves: u64,
}

/// `multi_node` of storage-proofs' hash function over `children` at `height`.
pub fn hash_node<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    let mut a = H::Function::default();
    a.multi_node(children, height)
}

impl<H: Hasher> SparseTree<H> {
    /// The tree over `leaves` (index → value; every other leaf is `default_leaf`).
    pub fn new(
        levels: Vec<Level>,
        leaves: BTreeMap<u64, H::Domain>,
        default_leaf: H::Domain,
    ) -> Result<Self, FilecoinError> {
        let total: u64 = levels.iter().map(|l| l.arity as u64).product();
        if let Some((&i, _)) = leaves.range(total..).next() {
            return Err(FilecoinError::invalid(
                "sparse tree",
                format!("leaf {i} of a tree of {total} leaves"),
            ));
        }
        let mut defaults = vec![default_leaf];
        for l in &levels {
            let below = *defaults.last().expect("the leaf default is there");
            defaults.push(hash_node::<H>(&vec![below; l.arity], l.height));
        }
        let mut nodes: Vec<HashMap<u64, H::Domain>> = vec![leaves.into_iter().collect()];
        for (k, l) in levels.iter().enumerate() {
            let below = &nodes[k];
            let mut parents: Vec<u64> = below.keys().map(|i| i / l.arity as u64).collect();
            parents.sort_unstable();
            parents.dedup();
            let mut level = HashMap::with_capacity(parents.len());
            for p in parents {
                let children: Vec<H::Domain> = (0..l.arity as u64)
                    .map(|c| *below.get(&(p * l.arity as u64 + c)).unwrap_or(&defaults[k]))
                    .collect();
                level.insert(p, hash_node::<H>(&children, l.height));
            }
            nodes.push(level);
        }
        let top = nodes.pop().expect("the root level is there");
        let root = *top.get(&0).unwrap_or(&defaults[levels.len()]);
        Ok(SparseTree {
            levels,
            defaults,
            nodes,
            root,
            leaves: total,
        })
    }

    pub fn root(&self) -> H::Domain {
        self.root
    }

    pub fn leaf(&self, i: u64) -> H::Domain {
        *self.nodes[0].get(&i).unwrap_or(&self.defaults[0])
    }

    /// The path of leaf `i` from the leaves up: at each level the siblings in order and the
    /// leaf's position among its parent's children (storage-proofs' `(hashes, index)`).
    pub fn path(&self, i: u64) -> Result<Path<H::Domain>, FilecoinError> {
        path_of("sparse tree path", &self.levels, self.leaves, i, |k, j| {
            *self.nodes[k].get(&j).unwrap_or(&self.defaults[k])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::Domain;

    /// Against a tree hashed in full: same root, and each path recomputes it.
    #[test]
    fn sparse_tree_equals_the_full_tree() {
        type H = PoseidonHasher;
        let levels = shape(8 * 8 * 2, 8, 0, 2).unwrap();
        assert_eq!(levels.len(), 3);
        let mut rng = rand::thread_rng();
        let zero = <H as Hasher>::Domain::default();
        let mut full = vec![zero; 128];
        let mut set = BTreeMap::new();
        for i in [0u64, 5, 63, 64, 127] {
            let v = <H as Hasher>::Domain::random(&mut rng);
            full[i as usize] = v;
            set.insert(i, v);
        }
        let tree = SparseTree::<H>::new(levels.clone(), set, zero).unwrap();
        let mut layer = full;
        for l in &levels {
            layer = layer
                .chunks(l.arity)
                .map(|c| hash_node::<H>(c, l.height))
                .collect();
        }
        assert_eq!(tree.root(), layer[0]);
        for i in [5u64, 64, 100] {
            let mut h = tree.leaf(i);
            for (l, (sibs, idx)) in levels.iter().zip(tree.path(i).unwrap()) {
                let mut nodes = sibs.clone();
                nodes.insert(idx, h);
                h = hash_node::<H>(&nodes, l.height);
            }
            assert_eq!(h, tree.root(), "path of leaf {i}");
        }
        assert!(tree.path(128).is_err());
        assert!(shape(100, 8, 0, 0).is_err());
    }
}
