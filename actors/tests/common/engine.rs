//! An engine on one CPU backend, and waiting on its status, for the actors tests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_actors::{CountingPin, Engine, EngineConfig, Status};
use cuzk_engine::{CpuBackend, Pipeline};

/// An engine with the default configuration over one CPU backend.
pub fn cpu_engine() -> Engine {
    Engine::start(
        EngineConfig::default(),
        vec![Arc::new(CpuBackend::new()) as Arc<dyn Pipeline>],
        Box::new(CountingPin::default()),
    )
    .unwrap()
}

/// The engine's status once `f` holds of it (polled every 5 ms; fails after 120 s naming `what`).
pub fn wait_until(engine: &Engine, what: &str, f: impl Fn(&Status) -> bool) -> Status {
    let start = Instant::now();
    loop {
        let s = engine.status().unwrap();
        if f(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
