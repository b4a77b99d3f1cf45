//! Merkle trees over leaves that repeat: the leaves fall into `R` equal regions (contiguous, in
//! order), and within region `g` leaf `i` is `leaf(g, i mod P)` for a period `P` that divides the
//! region. Every node whose leaves lie in one period is one of `R·P/span` values, every node that
//! covers whole periods of one region is one of `R`, and only the few nodes above the regions
//! are computed one by one — a tree of any size costs about `R·P` leaves' hashes, and every
//! leaf, challenged or not, is a real value.
//!
//! SnapDeals needs this rather than a sparse tree: its challenges are drawn from comm_r_new, the
//! root of the new replica's tree, so that tree must be complete before they are known; its
//! leaves are the old replica's plus the new data's times `rho`, which changes with the `h` high
//! bits of the node index — one region per `rho`. Nodes are hashed as
//! [`crate::synth_c1::sparse`] hashes them (`multi_node(children, height)`), and the paths are
//! storage-proofs'.

use filecoin_hashers::Hasher;
use rayon::prelude::*;

use crate::error::FilecoinError;
use crate::synth_c1::sparse::{hash_node, path_of, Level, Path};

/// A tree over region-periodic leaves.
pub struct PeriodicTree<H: Hasher> {
    levels: Vec<Level>,
    /// `spans[k]`: the leaves under one node of level `k` (0 = the leaves, the last = the root).
    spans: Vec<u64>,
    period: u64,
    region: u64,
    leaves: u64,
    /// `nodes[k]`: the distinct values of level `k`, indexed by [`PeriodicTree::key`].
    nodes: Vec<Vec<H::Domain>>,
}

impl<H: Hasher> PeriodicTree<H> {
    /// The tree of `levels` whose leaf `i` is `leaf(i / region, i mod period)`. `period`,
    /// `region` and the leaf count are powers of two, `period <= region <= leaves`.
    pub fn new(
        levels: Vec<Level>,
        period: u64,
        region: u64,
        leaf: impl Fn(u64, u64) -> H::Domain + Sync,
    ) -> Result<Self, FilecoinError> {
        // Leaves under one node of each level, the leaves' own first.
        let mut spans = Vec::with_capacity(levels.len() + 1);
        let mut span = 1u64;
        spans.push(span);
        for l in &levels {
            span = span.saturating_mul(l.arity as u64);
            spans.push(span);
        }
        let leaves = span;
        let pow2 = |v: u64| v.is_power_of_two();
        if !(pow2(period) && pow2(region) && pow2(leaves) && period <= region && region <= leaves)
            || levels.iter().any(|l| !pow2(l.arity as u64))
        {
            return Err(FilecoinError::invalid(
                "periodic tree",
                format!(
                    "period {period}, region {region}, {leaves} leaves, arities {:?}: powers of two \
                     with period <= region <= leaves expected",
                    levels.iter().map(|l| l.arity).collect::<Vec<_>>()
                ),
            ));
        }
        let regions = leaves / region;
        let mut tree = PeriodicTree {
            levels,
            spans,
            period,
            region,
            leaves,
            nodes: Vec::new(),
        };
        let first: Vec<H::Domain> = (0..regions * period)
            .into_par_iter()
            .map(|key| leaf(key / period, key % period))
            .collect();
        tree.nodes.push(first);
        for k in 1..=tree.levels.len() {
            let (arity, height) = (tree.levels[k - 1].arity as u64, tree.levels[k - 1].height);
            let count = tree.distinct(k);
            let below = &tree.nodes[k - 1];
            let level: Vec<H::Domain> = (0..count)
                .into_par_iter()
                .map(|key| {
                    let j = tree.representative(k, key);
                    let children: Vec<H::Domain> = (0..arity)
                        .map(|c| below[tree.key(k - 1, j * arity + c) as usize])
                        .collect();
                    hash_node::<H>(&children, height)
                })
                .collect();
            tree.nodes.push(level);
        }
        Ok(tree)
    }

    /// How many distinct values level `k` has.
    fn distinct(&self, k: usize) -> u64 {
        let (span, regions) = (self.spans[k], self.leaves / self.region);
        if span <= self.period {
            regions * (self.period / span)
        } else if span <= self.region {
            regions
        } else {
            self.leaves / span
        }
    }

    /// The index into `nodes[k]` of node `j` of level `k`.
    fn key(&self, k: usize, j: u64) -> u64 {
        let (span, first) = (self.spans[k], j * self.spans[k]);
        if span <= self.period {
            (first / self.region) * (self.period / span) + (first % self.period) / span
        } else if span <= self.region {
            first / self.region
        } else {
            j
        }
    }

    /// A node of level `k` whose index into `nodes[k]` is `key`.
    fn representative(&self, k: usize, key: u64) -> u64 {
        let span = self.spans[k];
        if span <= self.period {
            let per = self.period / span;
            (key / per) * (self.region / span) + key % per
        } else if span <= self.region {
            key * (self.region / span)
        } else {
            key
        }
    }

    pub fn root(&self) -> H::Domain {
        self.nodes[self.levels.len()][0]
    }

    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// Node `j` of level `k` (0 = the leaves).
    pub fn node(&self, k: usize, j: u64) -> Result<H::Domain, FilecoinError> {
        if k > self.levels.len() || j >= self.leaves / self.spans[k] {
            return Err(FilecoinError::invalid(
                "periodic tree node",
                format!(
                    "node {j} of level {k}: the tree has {} levels above {} leaves",
                    self.levels.len(),
                    self.leaves
                ),
            ));
        }
        Ok(self.nodes[k][self.key(k, j) as usize])
    }

    pub fn leaf(&self, i: u64) -> Result<H::Domain, FilecoinError> {
        self.node(0, i)
    }

    /// The path of leaf `i` from the leaves up (siblings in order and the position among them),
    /// as storage-proofs' `MerkleProof::from_parts` takes it.
    pub fn path(&self, i: u64) -> Result<Path<H::Domain>, FilecoinError> {
        path_of(
            "periodic tree path",
            &self.levels,
            self.leaves,
            i,
            |k, j| self.nodes[k][self.key(k, j) as usize],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth_c1::sparse::shape;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use filecoin_hashers::Domain;
    use rand::SeedableRng;

    /// Every node, root and path against the tree hashed in full over the same leaves.
    fn equals_the_full_tree<H: Hasher>(levels: Vec<Level>, period: u64, region: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(period ^ region);
        let leaves: u64 = levels.iter().map(|l| l.arity as u64).product();
        let values: Vec<H::Domain> = (0..(leaves / region) * period)
            .map(|_| H::Domain::random(&mut rng))
            .collect();
        let tree = PeriodicTree::<H>::new(levels.clone(), period, region, |g, m| {
            values[(g * period + m) as usize]
        })
        .unwrap();
        let mut layer: Vec<H::Domain> = (0..leaves)
            .map(|i| values[((i / region) * period + i % period) as usize])
            .collect();
        for (k, l) in levels.iter().enumerate() {
            for (j, v) in layer.iter().enumerate() {
                assert_eq!(tree.node(k, j as u64).unwrap(), *v, "node {j} of level {k}");
            }
            layer = layer
                .chunks(l.arity)
                .map(|c| hash_node::<H>(c, l.height))
                .collect();
        }
        assert_eq!(tree.root(), layer[0]);
        for i in [
            0,
            1,
            period + 3,
            region - 1,
            (region + 5) % leaves,
            leaves - 1,
        ] {
            let mut h = tree.leaf(i).unwrap();
            for (l, (sibs, idx)) in levels.iter().zip(tree.path(i).unwrap()) {
                let mut n = sibs;
                n.insert(idx, h);
                h = hash_node::<H>(&n, l.height);
            }
            assert_eq!(h, tree.root(), "path of leaf {i}");
        }
        assert!(tree.path(leaves).is_err());
        assert!(tree.node(levels.len(), 1).is_err());
    }

    #[test]
    fn periodic_trees_equal_the_full_trees() {
        // Octrees with a sub-tree level; regions that are, and are not, a node's span.
        equals_the_full_tree::<PoseidonHasher>(shape(8 * 8 * 8 * 2, 8, 2, 0).unwrap(), 8, 64);
        equals_the_full_tree::<PoseidonHasher>(shape(8 * 8 * 8 * 8, 8, 0, 0).unwrap(), 16, 128);
        equals_the_full_tree::<PoseidonHasher>(shape(64, 8, 0, 0).unwrap(), 32, 32);
        equals_the_full_tree::<PoseidonHasher>(shape(8 * 8 * 8 * 2, 8, 2, 0).unwrap(), 4, 1024);
        // Binary (comm_d's shape), one region.
        equals_the_full_tree::<Sha256Hasher>(shape(1024, 2, 0, 0).unwrap(), 64, 1024);
        assert!(
            PeriodicTree::<Sha256Hasher>::new(shape(64, 2, 0, 0).unwrap(), 64, 32, |_, _| {
                Default::default()
            })
            .is_err()
        );
    }
}
