//! What the tests that run `cuzk daemon` share: the child process killed on drop, a free TCP
//! port, a gRPC client over the daemon's unix socket, and the request Curio's client builds for a
//! 2 KiB PoRep C2 of the fixture's sector.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Child;

use base64::Engine as _;
use cuzk_actors::daemon::grpc::pb;
use cuzk_actors::daemon::grpc::pb::proving_engine_client::ProvingEngineClient;
use tonic::transport::Channel;

/// A running daemon, killed and reaped when dropped.
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A client of `cuzk.v1.ProvingEngine` over the unix socket at `path` (messages up to 256 MiB).
pub async fn unix_client(path: PathBuf) -> ProvingEngineClient<Channel> {
    let channel = tonic::transport::Endpoint::try_from("http://[::]:50051")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let path = path.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(path).await?,
                ))
            }
        }))
        .await
        .unwrap();
    ProvingEngineClient::new(channel)
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20)
}

/// The request Curio's client builds for a 2 KiB PoRep C2 of the fixture's sector
/// (`{SectorNum, Phase1Out: base64, SectorSize}`, the Go abi's `registered_proof`), for `miner_id`
/// (0: none given).
pub fn curio_porep(f: &super::Fixture, request_id: &str, miner_id: u64) -> pb::SubmitProofRequest {
    let wrapper = serde_json::json!({
        "SectorNum": f.sector.sector_id,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&f.sector.c1_json),
        "SectorSize": 2048,
    });
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5, // abi RegisteredSealProof_StackedDrg2KiBV1_1
        priority: pb::Priority::Normal as i32,
        vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
        sector_number: f.sector.sector_id,
        miner_id,
        ..Default::default()
    }
}
