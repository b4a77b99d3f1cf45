//! The gRPC service served in-process over an engine with a fault plan (CPU backend wrapped in
//! `Faulty`, staging through pinned memory, finite budgets, the SRS kept "resident" on the
//! device as on a GPU), driven by the generated client over the unix socket as Curio would:
//! - a 2 KiB PoRep held at synthesis, then one held in the L MSM (a GPU stage), each cancelled
//!   by `CancelProof`: `AwaitProof` answers CANCELLED while the stage is still held, and every
//!   reservation (VRAM, host, pinned bytes and registrations) returns to its value before;
//! - `EvictSrs` frees the resident copy: the backend's `evict_resident` runs once (on the GPU's
//!   uploader), the VRAM reservation returns to its value before the parameters were loaded,
//!   `freed_bytes` counts host memory and the VRAM given back, and `GetStatus` goes from HOT to
//!   nothing loaded.
#![cfg(feature = "grpc")]

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_actors::daemon::grpc::pb;
use cuzk_actors::daemon::grpc::pb::proving_engine_client::ProvingEngineClient;
use cuzk_actors::daemon::grpc::{GrpcOptions, GrpcServer, Service};
use cuzk_actors::daemon::jobs::JobTable;
use cuzk_actors::daemon::metrics::{Metrics, Readiness, State};
use cuzk_actors::fault::backend::{Faulty, Staging};
use cuzk_actors::fault::{Fault, Faults, Rule, Stage};
use cuzk_actors::resources::pinner::{CountingPin, PinStats};
use cuzk_actors::{Engine, EngineConfig};
use cuzk_engine::backend::Bitmap;
use cuzk_engine::pipeline::{Computed, Staged};
use cuzk_engine::prover::{Prepared, Sums};
use cuzk_engine::{Backend, CpuBackend, EngineError, Pipeline, Timings};
use cuzk_filecoin::request::prover_id_of_miner;
use cuzk_srs::Srs;
use tonic::transport::Channel;

const MINER: u64 = 1234;
/// What the test backend says its resident copy held on the device.
const DEVICE_BYTES: u64 = 4242;

/// A backend that forwards everything and counts `evict_resident` calls (the thread they came on
/// too: the device's uploader).
struct Recording {
    inner: Arc<dyn Pipeline>,
    evicts: AtomicUsize,
    evicted_on: Mutex<Vec<String>>,
}

impl Backend for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn compute_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, EngineError> {
        self.inner.compute_h(a, b, c)
    }
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, EngineError> {
        self.inner.msm_g1(bases, scalars)
    }
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, EngineError> {
        self.inner.msm_g2(bases, scalars)
    }
    fn batch_add_g1(&self, bases: &[G1Affine], bits: &Bitmap) -> Result<G1Projective, EngineError> {
        self.inner.batch_add_g1(bases, bits)
    }
    fn batch_add_g2(&self, bases: &[G2Affine], bits: &Bitmap) -> Result<G2Projective, EngineError> {
        self.inner.batch_add_g2(bases, bits)
    }
}

impl Pipeline for Recording {
    fn stages_on_device(&self) -> bool {
        self.inner.stages_on_device()
    }
    fn stage(&self, p: &Prepared) -> Result<Staged, EngineError> {
        self.inner.stage(p)
    }
    fn staging_bytes(&self) -> usize {
        self.inner.staging_bytes()
    }
    fn stage_through(
        &self,
        p: &Prepared,
        staging: &mut [&mut [u8]],
    ) -> Result<Staged, EngineError> {
        self.inner.stage_through(p, staging)
    }
    fn compute(&self, srs: &Srs, staged: Staged, t: &mut Timings) -> Result<Computed, EngineError> {
        self.inner.compute(srs, staged, t)
    }
    fn compute_then(
        &self,
        srs: &Srs,
        staged: Staged,
        t: &mut Timings,
        launched: &mut dyn FnMut(),
    ) -> Result<Computed, EngineError> {
        self.inner.compute_then(srs, staged, t, launched)
    }
    fn collect(&self, c: Computed, t: &mut Timings) -> Result<Sums, EngineError> {
        self.inner.collect(c, t)
    }
    fn evict_resident(&self) -> Result<u64, EngineError> {
        self.evicts.fetch_add(1, Ordering::SeqCst);
        let name = std::thread::current().name().unwrap_or("").to_string();
        self.evicted_on.lock().unwrap().push(name);
        Ok(DEVICE_BYTES)
    }
}

struct Rig {
    engine: Arc<Engine>,
    faults: Faults,
    pins: Arc<Mutex<PinStats>>,
    backend: Arc<Recording>,
    _server: GrpcServer,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

fn rig(params: PathBuf) -> Rig {
    let faults = Faults::default();
    let pin = CountingPin::default();
    let pins = pin.stats.clone();
    let faulty = Faulty::new(Arc::new(CpuBackend::new()), 0, &faults).staging(Staging::Pinned);
    let backend = Arc::new(Recording {
        inner: Arc::new(faulty),
        evicts: AtomicUsize::new(0),
        evicted_on: Mutex::new(Vec::new()),
    });
    let cfg = EngineConfig {
        // Finite budgets, so every reservation is counted; the SRS kept resident as on a GPU.
        vram_budget: vec![64 << 30],
        host_budget: 64 << 30,
        srs_resident: true,
        synth_threads: 2,
        ..EngineConfig::default()
    };
    let engine = Arc::new(
        Engine::start_with_faults(
            cfg,
            vec![backend.clone() as Arc<dyn Pipeline>],
            Box::new(pin),
            faults.clone(),
        )
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("grpc.sock");
    let ready = Readiness::default();
    let service = Service::new(
        GrpcOptions {
            unix_socket: Some(socket.clone()),
            tcp_listen: None,
            token: None,
            allow_remote: false,
            max_message_bytes: 256 << 20,
            cancel_on_disconnect: Arc::new(AtomicBool::new(false)),
            filecoin: cuzk_actors::filecoin::FilecoinConfig {
                params_dir: Some(params),
                ..Default::default()
            },
        },
        ready.clone(),
    );
    let jobs = JobTable::new(
        engine.clone(),
        Arc::new(Metrics::default()),
        Duration::from_secs(600),
    );
    service.attach(jobs);
    ready.set(State::Ready);
    let server = GrpcServer::start(service).unwrap();
    Rig {
        engine,
        faults,
        pins,
        backend,
        _server: server,
        socket,
        _dir: dir,
    }
}

async fn client(path: PathBuf) -> ProvingEngineClient<Channel> {
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

/// The request Curio's client builds for a PoRep C2.
fn curio_porep(f: &common::Fixture, request_id: &str) -> pb::SubmitProofRequest {
    let wrapper = serde_json::json!({
        "SectorNum": f.sector.sector_id,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&f.sector.c1_json),
        "SectorSize": 2048,
    });
    pb::SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: 5,
        priority: pb::Priority::Normal as i32,
        vanilla_proof: serde_json::to_vec(&wrapper).unwrap(),
        sector_number: f.sector.sector_id,
        miner_id: MINER,
        ..Default::default()
    }
}

/// Everything a job could leave reserved: per VRAM budget (bytes, reservations), host (bytes,
/// reservations), partitions in flight, pinned (bytes, registrations), pin calls unbalanced.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Held {
    vram: Vec<(u64, usize)>,
    host: (u64, usize),
    in_flight: usize,
    pinned: (usize, usize),
    pin_calls_open: u64,
}

fn held(r: &Rig) -> Held {
    let s = r.engine.status().unwrap();
    // Ask the pinner before taking the stats' lock: its thread takes that lock to count.
    let pinned = r.engine.pinned().unwrap();
    let p = r.pins.lock().unwrap();
    Held {
        vram: s
            .vram
            .iter()
            .map(|v| (v.reserved, v.reservations))
            .collect(),
        host: (s.host.reserved, s.host.reservations),
        in_flight: s.in_flight,
        pinned,
        pin_calls_open: p.registers - p.unregisters,
    }
}

/// Waits until everything is back to `base` (releases are messages: they may trail the answer).
async fn back_to(r: &Rig, base: &Held, what: &str) {
    let start = Instant::now();
    loop {
        let now = held(r);
        if now == *base {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: a reservation leaked: now {now:?}, before {base:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn grpc_cancel_mid_synthesis_and_mid_gpu_releases_everything_and_evict_frees_the_resident_copy() {
    let f = common::fixture(Some(prover_id_of_miner(MINER)));
    let r = rig(f.params.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = client(r.socket.clone()).await;
        let before_load = held(&r);
        assert_eq!(before_load.vram, vec![(0, 0)]);

        // Loaded, not yet on a GPU: WARM.
        c.preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap();
        let st = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.loaded_srs.len(), 1, "{:?}", st.loaded_srs);
        assert_eq!(
            (st.loaded_srs[0].circuit_id.as_str(), st.loaded_srs[0].tier),
            ("porep-2k", pb::srs_status::Tier::Warm as i32)
        );
        // What the dispatcher reserves for the parameters resident on a GPU (one worker).
        let path = r.engine.loaded_srs().unwrap()[0].path.clone();
        let resident = {
            let srs = r.engine.load_srs(&path).unwrap();
            cuzk_actors::resources::tier::Dims::of(&srs).resident(1)
        };
        assert!(resident > 0);
        let base = held(&r);
        assert_eq!(
            base.vram,
            vec![(0, 0)],
            "nothing reserved before a dispatch"
        );

        // Held at synthesis, then at H (on the device, once dispatched): each cancelled through
        // gRPC and answered CANCELLED while the stage is still held; then every reservation of
        // the job is back. After the device stage only the parameters' residency stays.
        for (i, stage) in [Stage::Synthesis, Stage::H].into_iter().enumerate() {
            let gate = r.faults.add(Rule::new(stage, Fault::Block).partition(0));
            let s = c
                .submit_proof(curio_porep(&f, &format!("held-{i}")))
                .await
                .unwrap()
                .into_inner();
            let faults = r.faults.clone();
            let site = tokio::task::spawn_blocking(move || {
                faults.wait_held(gate, Duration::from_secs(300))
            })
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("never held at {stage}"));
            // The daemon's id is this run's prefix, a dash, and the engine's job number.
            let job = site.key.map(|k| k.job.to_string()).unwrap_or_default();
            assert!(
                s.job_id.ends_with(&format!("-{job}")) && !job.is_empty(),
                "{stage}: job {job} is not gRPC's {}",
                s.job_id
            );
            let during = held(&r);
            assert_eq!(during.in_flight, 1, "{stage}: {during:?}");
            if stage == Stage::Synthesis {
                assert!(during.host.1 >= 1, "{stage}: its host memory: {during:?}");
            } else {
                // Its device reservation and the residency (its host memory went after upload).
                assert_eq!(during.vram[0].1, 2, "{stage}: {during:?}");
                let st = c
                    .get_status(pb::GetStatusRequest {})
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(
                    st.loaded_srs[0].tier,
                    pb::srs_status::Tier::Hot as i32,
                    "resident on a GPU: HOT"
                );
            }
            let cancel = c
                .cancel_proof(pb::CancelProofRequest {
                    job_id: s.job_id.clone(),
                })
                .await
                .unwrap()
                .into_inner();
            assert!(cancel.was_running, "{stage}");
            let a = c
                .await_proof(pb::AwaitProofRequest {
                    job_id: s.job_id.clone(),
                    timeout_ms: 30_000,
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(
                a.status,
                pb::await_proof_response::Status::Cancelled as i32,
                "{stage}: {a:?}"
            );
            assert!(
                a.proof.is_empty() && a.error_message.contains("cancelled"),
                "{stage}: {a:?}"
            );
            r.faults.release(gate);
            r.faults.clear();
            let want = if stage == Stage::Synthesis {
                base.clone()
            } else {
                Held {
                    vram: vec![(resident, 1)],
                    ..base.clone()
                }
            };
            back_to(&r, &want, &format!("cancelled at {stage}")).await;
            // The gRPC view agrees: no job in progress, no holder, the pinned bytes as before.
            let st = c
                .get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner();
            assert!(
                st.queues.iter().all(|q| q.pending + q.in_progress == 0),
                "{stage}: {:?}",
                st.queues
            );
            assert!(
                st.loaded_srs.iter().all(|s| s.ref_count == 0),
                "{stage}: {:?}",
                st.loaded_srs
            );
            assert_eq!(st.pinned_memory_bytes, base.pinned.0 as u64, "{stage}");
            let vram = st.budgets.iter().find(|b| b.name == "vram0").unwrap();
            assert_eq!(vram.reserved_bytes, want.vram[0].0, "{stage}");
        }
        assert_eq!(
            r.backend.evicts.load(Ordering::SeqCst),
            0,
            "nothing evicted yet"
        );
        assert_eq!(
            r.engine.status().unwrap().resident,
            vec![Some(path.clone())]
        );

        // Evict: the host handle, the VRAM reservation and the backend's device copy.
        let e = c
            .evict_srs(pb::EvictSrsRequest {
                circuit_id: "porep-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(r.engine.loaded_srs().unwrap().is_empty());
        assert!(e.was_loaded);
        let host = e.freed_bytes.checked_sub(resident);
        assert!(
            host.is_some_and(|h| h > 100 << 20),
            "host bytes plus the VRAM reservation {resident}: {e:?}"
        );
        assert_eq!(
            r.backend.evicts.load(Ordering::SeqCst),
            1,
            "evict_resident once"
        );
        let on = r.backend.evicted_on.lock().unwrap().clone();
        assert!(
            on.len() == 1 && !on[0].starts_with("cuzk-grpc"),
            "freed on the GPU's uploader, not on a gRPC thread: {on:?}"
        );
        assert_eq!(
            held(&r),
            before_load,
            "everything as before the parameters were loaded"
        );
        assert_eq!(r.engine.status().unwrap().resident, vec![None]);
        let st = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(st.loaded_srs.is_empty(), "{:?}", st.loaded_srs);
        assert!(
            st.budgets.iter().all(|b| b.reserved_bytes == 0),
            "{:?}",
            st.budgets
        );

        // Loaded again: WARM, nothing on the GPU until a job is dispatched.
        c.preload_srs(pb::PreloadSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap();
        let st = c
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(st.loaded_srs[0].tier, pb::srs_status::Tier::Warm as i32);
        assert_eq!(held(&r).vram, vec![(0, 0)]);
    });
}

/// Evict with nothing resident anywhere (an engine that keeps no SRS on its devices): only the
/// host handle goes, the backend is not asked, and a second evict says it is not loaded.
#[test]
fn evict_without_residency_asks_no_backend() {
    let backend = Arc::new(Recording {
        inner: Arc::new(CpuBackend::new()),
        evicts: AtomicUsize::new(0),
        evicted_on: Mutex::new(Vec::new()),
    });
    let engine = Engine::start(
        EngineConfig::default(),
        vec![backend.clone() as Arc<dyn Pipeline>],
        Box::new(CountingPin::default()),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mulchain.params");
    let params =
        cuzk_engine::setup::generate(cuzk_engine::circuits::MulChain::random(64, 2, 0), 3).unwrap();
    cuzk_srs::write_params(&path, &params).unwrap();
    engine.load_srs(&path).unwrap();
    let freed = engine.evict_srs_freed(&path).unwrap();
    assert!(freed.host_bytes > 0 && freed.gpus.is_empty(), "{freed:?}");
    assert_eq!(freed.total(), freed.host_bytes);
    assert_eq!(backend.evicts.load(Ordering::SeqCst), 0);
    let e = engine.evict_srs(&path).unwrap_err();
    assert!(
        matches!(&e, cuzk_actors::EngineError::Srs { path: p, detail } if *p == path && detail.contains("not loaded")),
        "{e:?}"
    );
}
