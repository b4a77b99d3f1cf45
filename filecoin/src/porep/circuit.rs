//! The PoRep partition circuit, cut as filecoin-proofs' `StackedCircuit` is (storage-proofs-porep
//! 19.1 `stacked/circuit/{proof,params,create_label,column,hash}.rs`), with one change: the
//! SHA-256 of a label and of tree D's nodes is `sha256_lean`, the same system built at a fraction
//! of the cost.
//!
//! Every allocation, constraint and namespace is the original's, in the original's order, so the
//! system is the one the parameters were made for: the recording made from filecoin-proofs' own
//! blank circuit is the recording of this one (`tests/kinds.rs`), a proof's assignment equals the
//! original's value for value, and the recorded path's sampled rows, its periodic full synthesis
//! and self-verification keep checking it. [`ChallengeInputs`] are a challenge's private inputs,
//! read from the vanilla proof; `comm_d_inclusion` re-cuts `PoRCircuit`'s binary SHA-256 path on
//! `sha256_lean`.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, num::AllocatedNum, uint32::UInt32};
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::PrimeField;
use filecoin_hashers::{HashFunction, Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof as RawProof};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::{constraint, encode::encode, uint64::UInt64, variables::Root};
use storage_proofs_core::merkle::{DiskStore, MerkleProof, MerkleProofTrait, MerkleTreeWrapper};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::ColumnProof as VanillaColumnProof;
use typenum::{U11, U2};

use super::sha256_lean;

/// A Merkle path as the circuit takes it: each level's siblings and the index in its node.
type PathOpts = Vec<(Vec<Option<Scalar>>, Option<usize>)>;

/// One challenge's private inputs, taken from its vanilla proof (what filecoin-proofs' `From`
/// puts in its circuit `Proof`).
#[derive(Clone, Debug)]
pub struct ChallengeInputs {
    pub data_leaf: Scalar,
    pub challenge: u64,
    pub comm_d_path: PathOpts,
    pub comm_r_last_path: PathOpts,
    pub comm_c_path: PathOpts,
    /// Each DRG parent's column (one value per layer) and its path in tree C.
    pub drg_parents: Vec<(Vec<Scalar>, PathOpts)>,
    /// Each expander parent's column and its path in tree C.
    pub exp_parents: Vec<(Vec<Scalar>, PathOpts)>,
}

/// A vanilla column proof's parts; filecoin-proofs keeps its fields to itself, so they are read
/// through its serde form.
#[derive(Deserialize)]
#[serde(bound = "D: DeserializeOwned, P: DeserializeOwned")]
struct ColumnProofParts<D, P> {
    column: ColumnParts<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
#[serde(bound = "D: DeserializeOwned")]
struct ColumnParts<D> {
    rows: Vec<D>,
}

#[derive(Deserialize)]
struct LabelingParts {
    node: u64,
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

impl ChallengeInputs {
    /// The inputs of one challenge's vanilla proof; `Err` names what could not be read.
    pub fn of<Tree: 'static + MerkleTreeTrait>(p: &RawProof<Tree>) -> Result<Self, String> {
        let column = |cp: &VanillaColumnProof<TreeProof<Tree>>| {
            let parts: ColumnProofParts<Domain<Tree>, TreeProof<Tree>> =
                serde_parts(cp, "a column proof")?;
            Ok::<_, String>((
                parts.column.rows.into_iter().map(Into::into).collect(),
                parts.inclusion_proof.as_options(),
            ))
        };
        let rc = &p.replica_column_proofs;
        let labeling = p
            .labeling_proofs
            .first()
            .ok_or("a challenge proof without labeling proofs")?;
        let node: LabelingParts = serde_parts(labeling, "a labeling proof")?;
        let (_, comm_c_path) = column(&rc.c_x)?;
        Ok(ChallengeInputs {
            data_leaf: p.comm_d_proofs.leaf().into(),
            challenge: node.node,
            comm_d_path: p.comm_d_proofs.as_options(),
            comm_r_last_path: p.comm_r_last_proof.as_options(),
            comm_c_path,
            drg_parents: rc
                .drg_parents
                .iter()
                .map(column)
                .collect::<Result<_, _>>()?,
            exp_parents: rc
                .exp_parents
                .iter()
                .map(column)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The fields filecoin-proofs keeps to itself, read back from a value's serde form.
fn serde_parts<T: Serialize, P: DeserializeOwned>(value: &T, what: &str) -> Result<P, String> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("{what}: {e}"))
}

/// The partition's public values (what `StackedCompound::circuit` puts beside the proofs).
#[derive(Clone, Copy, Debug)]
pub struct Glue {
    pub replica_id: Scalar,
    pub comm_d: Scalar,
    pub comm_r: Scalar,
    pub comm_r_last: Scalar,
    pub comm_c: Scalar,
}

/// `StackedCircuit::synthesize`: the glue, then each challenge in its `challenge_<i>` namespace.
pub fn synthesize<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    glue: &Glue,
    challenges: &[ChallengeInputs],
) -> Result<(), SynthesisError> {
    let replica_id = AllocatedNum::alloc(cs.namespace(|| "replica_id"), || Ok(glue.replica_id))?;
    replica_id.inputize(cs.namespace(|| "replica_id_input"))?;
    let replica_id_bits =
        reverse_bit_numbering(replica_id.to_bits_le(cs.namespace(|| "replica_id_bits"))?);

    let comm_d = AllocatedNum::alloc(cs.namespace(|| "comm_d"), || Ok(glue.comm_d))?;
    comm_d.inputize(cs.namespace(|| "comm_d_input"))?;
    let comm_r = AllocatedNum::alloc(cs.namespace(|| "comm_r"), || Ok(glue.comm_r))?;
    comm_r.inputize(cs.namespace(|| "comm_r_input"))?;
    let comm_r_last = AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || Ok(glue.comm_r_last))?;
    let comm_c = AllocatedNum::alloc(cs.namespace(|| "comm_c"), || Ok(glue.comm_c))?;

    // comm_r = H(comm_c || comm_r_last)
    let hash = <<Tree::Hasher as Hasher>::Function as HashFunction<_>>::hash2_circuit(
        cs.namespace(|| "H_comm_c_comm_r_last"),
        &comm_c,
        &comm_r_last,
    )?;
    constraint::equal(
        cs,
        || "enforce comm_r = H(comm_c || comm_r_last)",
        &comm_r,
        &hash,
    );

    for (i, ch) in challenges.iter().enumerate() {
        challenge::<Tree, _>(
            &mut cs.namespace(|| format!("challenge_{i}")),
            ch,
            &comm_d,
            &comm_c,
            &comm_r_last,
            &replica_id_bits,
        )?;
    }
    Ok(())
}

/// One challenge (`stacked::circuit::params::Proof::synthesize`).
fn challenge<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    ch: &ChallengeInputs,
    comm_d: &AllocatedNum<Scalar>,
    comm_c: &AllocatedNum<Scalar>,
    comm_r_last: &AllocatedNum<Scalar>,
    replica_id: &[Boolean],
) -> Result<(), SynthesisError> {
    if ch.drg_parents.is_empty() || ch.exp_parents.is_empty() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let data_leaf = AllocatedNum::alloc(cs.namespace(|| "data_leaf"), || Ok(ch.data_leaf))?;
    comm_d_inclusion(
        cs.namespace(|| "comm_d_inclusion"),
        &ch.comm_d_path,
        comm_d,
        &data_leaf,
    )?;

    let layers = ch.drg_parents[0].0.len();
    let parent_columns = |cs: &mut CS,
                          kind: &str,
                          parents: &[(Vec<Scalar>, PathOpts)]|
     -> Result<Vec<Vec<AllocatedNum<Scalar>>>, SynthesisError> {
        let mut out = Vec::with_capacity(parents.len());
        for (i, (rows, path)) in parents.iter().enumerate() {
            if rows.len() != layers {
                return Err(SynthesisError::Unsatisfiable);
            }
            let col = {
                let mut cs = cs.namespace(|| format!("{kind}_parent_{i}_num"));
                let mut cs = cs.namespace(|| "column");
                (rows.iter().enumerate())
                    .map(|(r, v)| {
                        AllocatedNum::alloc(cs.namespace(|| format!("column_num_row_{r}")), || {
                            Ok(*v)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?
            };
            let hash = column_hash(
                cs.namespace(|| format!("{kind}_parent_{i}_constraint")),
                &col,
            )?;
            inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
                cs.namespace(|| format!("{kind}_parent_{i}_inclusion")),
                path,
                comm_c,
                &hash,
            )?;
            out.push(col);
        }
        Ok(out)
    };
    let drg = parent_columns(cs, "drg", &ch.drg_parents)?;
    let exp = parent_columns(cs, "exp", &ch.exp_parents)?;

    let node = UInt64::alloc(cs.namespace(|| "challenge"), Some(ch.challenge))?;
    node.pack_into_input(cs.namespace(|| "challenge input"))?;

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut cs = cs.namespace(|| format!("labeling_{layer}"));
        let mut parents = Vec::new();
        for col in &drg {
            let bits = col[layer - 1]
                .to_bits_le(cs.namespace(|| format!("drg_parent_{}_bits", parents.len())))?;
            parents.push(reverse_bit_numbering(bits));
        }
        // Expander parents from layer 2 on, one layer behind (they hold no first-layer value).
        if layer > 1 {
            for col in &exp {
                let bits = col[layer - 2]
                    .to_bits_le(cs.namespace(|| format!("exp_parent_{}_bits", parents.len())))?;
                parents.push(reverse_bit_numbering(bits));
            }
        }
        // The hashing order repeats the parents up to 37.
        let mut expanded = parents.clone();
        if layer > 1 {
            expanded.extend_from_slice(&parents);
            expanded.extend_from_slice(&parents[..9.min(parents.len())]);
        } else {
            for _ in 0..5 {
                expanded.extend_from_slice(&parents);
            }
            expanded.push(parents[0].clone());
        }
        let label = label(
            cs.namespace(|| "create_label"),
            replica_id,
            &expanded,
            layer as u32,
            &node,
        )?;
        labels.push(label);
    }

    // The encoding, keyed by the last label, and its inclusion in tree R.
    let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
    let encoded = encode(cs.namespace(|| "encode_node"), key, &data_leaf)?;
    inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
        cs.namespace(|| "comm_r_last_data_inclusion"),
        &ch.comm_r_last_path,
        comm_r_last,
        &encoded,
    )?;

    // The challenged column's hash, and its inclusion in tree C.
    let column = column_hash(cs.namespace(|| "c_x_column_hash"), &labels)?;
    inclusion::<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity, _>(
        cs.namespace(|| "c_x_inclusion"),
        &ch.comm_c_path,
        comm_c,
        &column,
    )
}

/// A node's label (`create_label_circuit`): SHA-256 over replica id | layer | node | 37 parents,
/// packed into a field element.
fn label<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    replica_id: &[Boolean],
    parents: &[Vec<Boolean>],
    layer: u32,
    node: &UInt64,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    if !(32..=256).contains(&replica_id.len()) || parents.len() != 37 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut data = Vec::with_capacity(39 * 256);
    data.extend_from_slice(replica_id);
    data.resize(256, Boolean::constant(false));
    data.extend(UInt32::constant(layer).into_bits_be());
    data.extend(node.to_bits_be());
    data.resize(512, Boolean::constant(false));
    for parent in parents {
        data.extend_from_slice(parent);
        let padded = data.len().div_ceil(256) * 256;
        data.resize(padded, Boolean::constant(false));
    }
    if data.len() != 39 * 256 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let hash = sha256_lean::sha256(cs.namespace(|| "hash"), &data)?;
    let bits = reverse_bit_numbering(hash);
    multipack::pack_bits(
        cs.namespace(|| "result_num"),
        &bits[0..Scalar::CAPACITY as usize],
    )
}

/// A column's Poseidon hash (`hash_single_column`): 2 or 11 layers.
fn column_hash<CS: ConstraintSystem<Scalar>>(
    cs: CS,
    column: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    match column.len() {
        2 => neptune::circuit::poseidon_hash::<CS, Scalar, U2>(
            cs,
            column.to_vec(),
            &*POSEIDON_CONSTANTS_2,
        ),
        11 => neptune::circuit::poseidon_hash::<CS, Scalar, U11>(
            cs,
            column.to_vec(),
            &*POSEIDON_CONSTANTS_11,
        ),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// `leaf` is in tree D (binary, SHA-256) of root `root` by `path`: `enforce_inclusion` of
/// `PoRCircuit` over a `Sha256Hasher` tree of arity 2, its node hash (`hash_multi_leaf_circuit`)
/// on `sha256_lean`.
fn comm_d_inclusion<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    path: &PathOpts,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    {
        let mut cs = cs.namespace(|| "base");
        for (i, (siblings, index)) in path.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("merkle tree hash {i}"));
            let bit =
                AllocatedBit::alloc(cs.namespace(|| "index bit 0"), index.map(|x| x & 1 == 1))?;
            let bit = Boolean::from(bit);
            index_bits.push(bit.clone());
            let siblings = (siblings.iter().enumerate())
                .map(|(k, v)| {
                    AllocatedNum::alloc(cs.namespace(|| format!("path element {k}")), || {
                        v.ok_or(SynthesisError::AssignmentMissing)
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if siblings.len() != 1 {
                return Err(SynthesisError::Unsatisfiable);
            }
            let pair = insert(cs, &cur, std::slice::from_ref(&bit), &siblings)?;
            // The node's hash: both children's bits, each byte's bits reversed, then SHA-256.
            let mut cs = cs.namespace(|| "computation of commitment hash");
            let mut bits = Vec::with_capacity(512);
            for (k, child) in pair.iter().enumerate() {
                let mut b = child.to_bits_le(cs.namespace(|| format!("{k}_num_into_bits")))?;
                b.resize(b.len().div_ceil(8) * 8, Boolean::constant(false));
                bits.extend(
                    b.chunks_exact(8)
                        .flat_map(|byte| byte.iter().rev())
                        .cloned(),
                );
            }
            let hash = sha256_lean::sha256(cs.namespace(|| "hash"), &bits)?;
            let le: Vec<Boolean> = (hash.chunks(8))
                .flat_map(|byte| byte.iter().rev())
                .take(Scalar::CAPACITY as usize)
                .cloned()
                .collect();
            cur = multipack::pack_bits(cs.namespace(|| "pack_le"), &le)?;
        }
    }
    multipack::pack_into_inputs(cs.namespace(|| "path"), &index_bits)?;
    constraint::equal(&mut cs, || "enforce root is correct", &cur, root);
    Ok(())
}

/// `leaf` is in the tree of root `root` by `path` (`enforce_inclusion`).
fn inclusion<H, U, V, W, CS>(
    cs: CS,
    path: &PathOpts,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + filecoin_hashers::PoseidonArity,
    V: 'static + filecoin_hashers::PoseidonArity,
    W: 'static + filecoin_hashers::PoseidonArity,
    CS: ConstraintSystem<Scalar>,
{
    let path = AuthPath::<H, U, V, W>::from(path.clone());
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs,
        Root::from_allocated::<CS>(leaf.clone()),
        path,
        Root::from_allocated::<CS>(root.clone()),
        true,
    )
}
