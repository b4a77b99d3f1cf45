//! The synthetic sector's data and its comm_d tree (SHA-256, binary, as filecoin-proofs builds
//! it over the Fr32-padded data).
//!
//! comm_d must be known before the challenges are (the replica id, from which they are drawn,
//! hashes comm_d), so the data cannot be chosen at the challenged nodes afterwards. It is
//! periodic instead: leaf `i` is `leaf(i mod P)` for a block of `P` pseudo-random leaves drawn
//! from the seed. Every aligned block of `P` leaves then has the same root, and the tree above
//! the blocks has one value per level — a sector of any size costs `2P` hashes, and every leaf,
//! challenged or not, is real non-zero data.

use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::Domain;
use sha2::{Digest, Sha256};

use super::sparse::hash_node;
use crate::error::FilecoinError;

/// Leaves in one period of the data (or the whole sector, if smaller).
pub const PERIOD: u64 = 256;

/// The data layer and its tree.
pub struct DataTree {
    /// The period's leaves.
    block: Vec<Sha256Domain>,
    /// The period's tree, level by level (`block_levels[0]` = the leaves, the last = its root).
    block_levels: Vec<Vec<Sha256Domain>>,
    /// Above the blocks: `above[j]` is every node `j` levels above a block root (`above[0]` =
    /// the block root).
    above: Vec<Sha256Domain>,
    nodes: u64,
}

/// An Fr-safe 32-byte value from SHA-256 (the top two bits cleared, as `bytes_into_fr_repr_safe`).
pub fn fr_safe_sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0x3f;
    out
}

impl DataTree {
    /// The data of a sector of `nodes` leaves (a power of two), drawn from `seed`.
    pub fn new(nodes: u64, seed: &[u8; 32]) -> Result<Self, FilecoinError> {
        if !nodes.is_power_of_two() || nodes < 2 {
            return Err(FilecoinError::invalid(
                "synthetic data",
                format!("{nodes} nodes: not a power of two"),
            ));
        }
        let period = PERIOD.min(nodes);
        let mut block = Vec::with_capacity(period as usize);
        for i in 0..period {
            let b = fr_safe_sha256(&[b"cuzk synth-c1 data", seed, &i.to_le_bytes()]);
            block.push(
                Sha256Domain::try_from_bytes(&b)
                    .map_err(|e| FilecoinError::invalid("synthetic data leaf", e))?,
            );
        }
        let mut block_levels = vec![block.clone()];
        while block_levels.last().map(Vec::len) != Some(1) {
            let h = block_levels.len() - 1;
            let next = block_levels[h]
                .chunks(2)
                .map(|c| hash_node::<Sha256Hasher>(c, h))
                .collect();
            block_levels.push(next);
        }
        let mut above = vec![block_levels.last().expect("the block root")[0]];
        let block_height = block_levels.len() - 1;
        for j in 0..(nodes / period).trailing_zeros() as usize {
            let r = above[j];
            above.push(hash_node::<Sha256Hasher>(&[r, r], block_height + j));
        }
        Ok(DataTree {
            block,
            block_levels,
            above,
            nodes,
        })
    }

    pub fn root(&self) -> Sha256Domain {
        *self.above.last().expect("the root")
    }

    pub fn leaf(&self, i: u64) -> Sha256Domain {
        self.block[(i % self.block.len() as u64) as usize]
    }

    /// The binary path of leaf `i` (siblings and positions from the leaves up).
    pub fn path(&self, i: u64) -> Result<super::sparse::Path<Sha256Domain>, FilecoinError> {
        if i >= self.nodes {
            return Err(FilecoinError::invalid(
                "comm_d path",
                format!("leaf {i} of {} nodes", self.nodes),
            ));
        }
        let period = self.block.len() as u64;
        let mut path = Vec::new();
        let mut at = (i % period) as usize;
        for level in &self.block_levels[..self.block_levels.len() - 1] {
            path.push((vec![level[at ^ 1]], at & 1));
            at >>= 1;
        }
        let mut b = i / period;
        for r in &self.above[..self.above.len() - 1] {
            path.push((vec![*r], (b & 1) as usize));
            b >>= 1;
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the tree hashed in full over the periodic leaves.
    #[test]
    fn periodic_data_tree_equals_the_full_tree() {
        for nodes in [64u64, 1024] {
            let t = DataTree::new(nodes, &[7; 32]).unwrap();
            let mut layer: Vec<Sha256Domain> = (0..nodes).map(|i| t.leaf(i)).collect();
            let mut h = 0;
            while layer.len() > 1 {
                layer = layer
                    .chunks(2)
                    .map(|c| hash_node::<Sha256Hasher>(c, h))
                    .collect();
                h += 1;
            }
            assert_eq!(t.root(), layer[0], "{nodes} nodes");
            for i in [1, nodes / 2 + 3, nodes - 1] {
                let mut v = t.leaf(i);
                for (h, (s, idx)) in t.path(i).unwrap().into_iter().enumerate() {
                    let mut n = s;
                    n.insert(idx, v);
                    v = hash_node::<Sha256Hasher>(&n, h);
                }
                assert_eq!(v, t.root(), "path of leaf {i} of {nodes}");
            }
        }
    }
}
