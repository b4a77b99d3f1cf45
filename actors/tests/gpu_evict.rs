//! On a GPU: evicting parameters frees `PipelinedGpu`'s resident bases on the device (the
//! driver's free memory grows by at least their size once the pool is trimmed), the VRAM budget
//! returns to nothing reserved, and status no longer lists them resident. `#[ignore]`d with the
//! reason where there is no GPU; run with `--ignored` on a GPU machine, where a missing GPU is a
//! failure.

use std::sync::Arc;

use cuzk_actors::daemon::settings::{BackendChoice, Residency, Settings};
use cuzk_actors::{Engine, JobSpec};
use cuzk_engine::circuits::MulChain;
use cuzk_engine::Verifier;
use cuzk_srs::Srs;

/// The device's free bytes as the driver reports them.
fn free_bytes() -> u64 {
    let ctx = cudarc::driver::CudaContext::new(0).expect("CUDA context of GPU 0");
    ctx.bind_to_thread().expect("binding GPU 0's context");
    let (free, _total) = cudarc::driver::result::mem_get_info().expect("cuMemGetInfo");
    free as u64
}

#[test]
#[ignore = "needs a CUDA GPU (libcuda): run `make gpu-bundle`, then tests/gpu/run-gpu-tests.sh .gpu on a GPU machine"]
fn evict_frees_the_resident_bases_on_the_gpu() {
    if let Err(why) = cuzk_engine::gpu::probe() {
        panic!("evict_frees_the_resident_bases_on_the_gpu needs a CUDA GPU: {why}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mulchain.params");
    // 2^18 constraints: bases of some 100 MB, well above the pool's noise.
    let m = (1 << 18) - 8;
    let params = cuzk_engine::setup::generate(MulChain::random(m, 2, 0), 5).unwrap();
    cuzk_srs::write_params(&path, &params).unwrap();
    drop(params);

    let mut settings = Settings::load(None).unwrap();
    settings.engine.backend = BackendChoice::Cuda;
    settings.engine.srs_residency = Residency::Device;
    let (engine, devices) = Engine::from_settings(&settings, None).unwrap();
    eprintln!("devices: {devices}");

    let srs: Arc<Srs> = engine.load_srs(&path).unwrap();
    let bases = (std::mem::size_of_val(srs.h())
        + std::mem::size_of_val(srs.l())
        + std::mem::size_of_val(srs.a())
        + std::mem::size_of_val(srs.b_g1())
        + std::mem::size_of_val(srs.b_g2())) as u64;
    let verifier = Verifier::new(srs.vk());
    let out = engine
        .submit(JobSpec::new(
            srs.clone(),
            (0..2).map(|p| MulChain::random(m, 2, 10 + p)).collect(),
        ))
        .unwrap()
        .wait()
        .unwrap();
    for (p, inputs) in out.proofs.iter().zip(&out.public_inputs) {
        assert!(verifier.verify(p, inputs).unwrap());
    }
    drop(srs);
    let st = engine.status().unwrap();
    assert_eq!(st.resident[0].as_deref(), Some(path.as_path()), "{st:?}");
    assert!(st.vram[0].reserved >= bases, "{:?}", st.vram[0]);

    // Until the job's state is gone the loader's handle is not the only one: wait for that.
    let start = std::time::Instant::now();
    while engine.loaded_srs().unwrap()[0].holders > 0 {
        assert!(
            start.elapsed().as_secs() < 30,
            "the finished job still holds the SRS"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let before = free_bytes();
    let freed = engine.evict_srs_freed(&path).unwrap();
    let after = free_bytes();
    eprintln!(
        "evicted: {freed:?}; bases {bases} bytes; driver free {before} -> {after} (+{})",
        after as i64 - before as i64
    );
    assert_eq!(freed.gpus.len(), 1, "{freed:?}");
    assert_eq!(freed.gpus[0].device_bytes, bases, "the bases' bytes freed");
    assert!(freed.gpus[0].reserved >= bases);
    assert!(
        after >= before + bases * 9 / 10,
        "the device memory was not given back: free {before} -> {after}, bases {bases}"
    );
    let st = engine.status().unwrap();
    assert_eq!(st.resident[0], None);
    assert_eq!(st.vram[0].reserved, 0, "{:?}", st.vram[0]);
    // Open again and prove: resident again, proofs verify.
    let srs = engine.load_srs(&path).unwrap();
    let out = engine
        .submit(JobSpec::new(srs.clone(), vec![MulChain::random(m, 2, 99)]))
        .unwrap()
        .wait()
        .unwrap();
    assert!(verifier
        .verify(&out.proofs[0], &out.public_inputs[0])
        .unwrap());
    engine.shutdown();
}
