//! Property tests (proptest) over every input the daemon reads from outside: control frames,
//! gRPC messages (prost decode, then Curio's request conversion), and the Filecoin inputs (C1
//! JSON, bincode vanilla proofs) those carry. Arbitrary and mutated inputs must give a value or an
//! error, never a panic, a hang or an unbounded allocation (a length field alone must not reserve
//! memory). Proptest rather than cargo-fuzz here: these crates pull filecoin-proofs, too costly to
//! build again under a sanitizer on CI's two cores (`srs/fuzz` fuzzes the parameter files).
//! Seeds: a valid frame of every request, Curio's PoRep request around a real 2 KiB C1 output.

use std::sync::OnceLock;

use base64::Engine as _;
use cuzk_actors::daemon::control::proto::{self, Request, Response};
use cuzk_actors::daemon::grpc::{curio, pb};
use cuzk_filecoin::ProofRequest;
use proptest::prelude::*;
use prost::Message;

mod common;

/// A real C1 output (2 KiB sector sealed on the CPU, the shared fixture), sealed once.
fn c1_json() -> &'static [u8] {
    static C1: OnceLock<Vec<u8>> = OnceLock::new();
    C1.get_or_init(|| common::fixture(None).sector.c1_json.clone())
}

fn frame_of(req: &Request) -> Vec<u8> {
    let mut v = Vec::new();
    proto::write(&mut v, req).expect("a valid request encodes");
    v
}

fn sample_requests() -> Vec<Request> {
    vec![
        Request::Status,
        Request::Metrics,
        Request::Cancel {
            job: "0a1b2c3d-7".into(),
        },
        Request::Preload {
            path: "/var/tmp/x.params".into(),
        },
        Request::Pause,
        Request::ProveExample {
            circuit: "mulchain".into(),
            size: 10,
            partitions: 2,
        },
    ]
}

/// Edits: (position as a fraction of the length, new byte); an optional cut.
fn mutate(base: &[u8], edits: &[(u32, u8)], cut: Option<u32>) -> Vec<u8> {
    let mut v = base.to_vec();
    if !v.is_empty() {
        for &(at, b) in edits {
            let i = (at as usize) % v.len();
            v[i] = b;
        }
    }
    if let Some(c) = cut {
        v.truncate((c as usize) % (v.len() + 1));
    }
    v
}

fn read_frame(bytes: &[u8]) {
    let mut r = bytes;
    // Every frame in the stream, as the server reads a connection, until an error or the end.
    for _ in 0..16 {
        match proto::read::<Request>(&mut r) {
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => break,
        }
    }
    let mut r = bytes;
    let _ = proto::read::<Response>(&mut r);
}

/// Curio's request conversion and the Filecoin parse behind it: a value or an error.
fn convert(req: &pb::SubmitProofRequest) {
    if let Ok((pr, _reg)) = curio::to_proof_request(req) {
        let _ = pr.parse();
    }
    let _ = curio::parse_circuit_id(&req.request_id);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn control_frames_of_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        read_frame(&bytes);
    }

    #[test]
    fn control_frames_with_a_valid_header_and_arbitrary_payload(
        payload in proptest::collection::vec(any::<u8>(), 0..512),
        declared in prop_oneof![Just(None), any::<u32>().prop_map(Some)],
    ) {
        // Length and version right, so bincode decoding is reached (or the length lies).
        let len = declared.unwrap_or(payload.len() as u32 + 2);
        let mut f = len.to_be_bytes().to_vec();
        f.extend_from_slice(&proto::VERSION.to_be_bytes());
        f.extend_from_slice(&payload);
        read_frame(&f);
    }

    #[test]
    fn control_frames_mutated_from_valid_ones(
        which in 0usize..6,
        edits in proptest::collection::vec((any::<u32>(), any::<u8>()), 0..6),
        cut in proptest::option::of(any::<u32>()),
    ) {
        let f = frame_of(&sample_requests()[which]);
        read_frame(&mutate(&f, &edits, cut));
    }

    #[test]
    fn grpc_messages_of_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(req) = pb::SubmitProofRequest::decode(&bytes[..]) {
            convert(&req);
        }
        let _ = pb::AwaitProofRequest::decode(&bytes[..]);
    }

    #[test]
    fn curio_requests_with_arbitrary_fields(
        kind in 0i32..6,
        registered in 0u64..20,
        sector_size in prop_oneof![Just(0u64), Just(2048), Just(8 << 20), any::<u64>()],
        priority in -1i32..5,
        vanilla in proptest::collection::vec(any::<u8>(), 0..256),
        vanillas in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..128), 0..3),
        randomness in proptest::collection::vec(any::<u8>(), 0..40),
        comm in proptest::collection::vec(any::<u8>(), 0..40),
        id in "[a-z0-9-]{0,20}",
        partition_index in any::<u32>(),
        miner_id in any::<u64>(),
        deadline_ms in any::<u64>(),
    ) {
        let req = pb::SubmitProofRequest {
            request_id: id,
            proof_kind: kind,
            sector_size,
            registered_proof: registered,
            priority,
            vanilla_proof: vanilla,
            vanilla_proofs: vanillas,
            sector_number: 3,
            miner_id,
            randomness: randomness.clone(),
            partition_index,
            comm_r_old: comm.clone(),
            comm_r_new: comm.clone(),
            comm_d_new: comm,
            deadline_ms,
        };
        convert(&req);
        let mut bytes = Vec::new();
        req.encode(&mut bytes).expect("encode");
        let back = pb::SubmitProofRequest::decode(&bytes[..]).expect("decode what was encoded");
        prop_assert_eq!(back, req);
    }

    #[test]
    fn filecoin_vanilla_proofs_of_arbitrary_bytes(
        kind in 0usize..3,
        registered in 0u64..16,
        proofs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..256), 0..3),
    ) {
        let r = match kind {
            0 => ProofRequest::SnapDeals { registered, vanilla_proofs: proofs, comm_r_old: [1; 32], comm_r_new: [2; 32], comm_d_new: [3; 32] },
            1 => ProofRequest::WindowPoSt { registered, vanilla_proofs: proofs, randomness: [4; 32], prover_id: [5; 32], partition_index: 0 },
            _ => ProofRequest::WinningPoSt { registered, vanilla_proofs: proofs, randomness: [4; 32], prover_id: [5; 32] },
        };
        let _ = r.parse();
    }
}

proptest! {
    // Each case parses a real C1 output; fewer cases.
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn c1_json_mutated_from_a_real_one(
        edits in proptest::collection::vec((any::<u32>(), any::<u8>()), 0..4),
        cut in proptest::option::of(any::<u32>()),
    ) {
        let c1 = mutate(c1_json(), &edits, cut);
        let _ = ProofRequest::PoRep { c1_json: c1.clone(), prover_id: None, sector_id: None }.parse();
        // The same bytes inside Curio's request: base64 inside a JSON envelope.
        let wrapper = serde_json::json!({
            "SectorNum": 3,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&c1),
            "SectorSize": 2048,
        });
        let req = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: 5,
            vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
            sector_number: 3,
            miner_id: 1000,
            ..Default::default()
        };
        convert(&req);
    }

    #[test]
    fn curio_porep_envelopes_mutated(
        edits in proptest::collection::vec((any::<u32>(), any::<u8>()), 0..4),
        cut in proptest::option::of(any::<u32>()),
    ) {
        let wrapper = serde_json::json!({
            "SectorNum": 3,
            "Phase1Out": base64::engine::general_purpose::STANDARD.encode(b"{\"registered_proof\":\"StackedDrg2KiBV1_1\"}"),
            "SectorSize": 2048,
        });
        let env = mutate(&serde_json::to_vec(&wrapper).unwrap(), &edits, cut);
        let req = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: 5,
            vanilla_proof: env,
            sector_number: 3,
            ..Default::default()
        };
        convert(&req);
    }
}

/// The real C1 output is accepted as it is (the mutations above start from a valid input), and a
/// frame declaring 128 MiB with no bytes behind it is refused without reserving them.
#[test]
fn seeds_are_valid_and_a_length_alone_reserves_nothing() {
    let parsed = ProofRequest::PoRep {
        c1_json: c1_json().to_vec(),
        prover_id: None,
        sector_id: None,
    }
    .parse();
    assert!(parsed.is_ok(), "the real C1 output: {:?}", parsed.err());
    for req in sample_requests() {
        let f = frame_of(&req);
        let back: Request = proto::read(&mut &f[..]).unwrap().unwrap();
        assert_eq!(back, req);
    }
    let mut f = proto::MAX_FRAME.to_be_bytes().to_vec();
    f.extend_from_slice(&proto::VERSION.to_be_bytes());
    assert!(proto::read::<Request>(&mut &f[..]).is_err());
}

/// A payload whose string claims 2^61 bytes is refused without allocating them (bincode's
/// limit; before it, a 14-byte frame like this one aborted the process).
#[test]
fn a_length_inside_the_payload_reserves_nothing() {
    let ok = frame_of(&Request::Preload { path: "x".into() });
    let payload = &ok[6..];
    assert_eq!(
        &payload[payload.len() - 2..],
        &[1, b'x'],
        "the string's encoding"
    );
    let mut p = payload[..payload.len() - 2].to_vec();
    p.push(0xFD); // a varint's u64 marker
    p.extend_from_slice(&(1u64 << 61).to_le_bytes());
    p.push(b'x');
    let mut f = ((p.len() + 2) as u32).to_be_bytes().to_vec();
    f.extend_from_slice(&proto::VERSION.to_be_bytes());
    f.extend_from_slice(&p);
    let err = proto::read::<Request>(&mut &f[..]).unwrap_err();
    assert!(err.to_string().contains("undecodable"), "{err}");
}
