//! `cuzk daemon`: the engine as a long-running process, controlled over its unix socket.

use std::path::PathBuf;
use std::sync::Arc;

use cuzk_actors::control::server::{ControlServer, ServerOptions};
use cuzk_actors::settings::Settings;
use cuzk_actors::Engine;

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The control socket (default: $XDG_RUNTIME_DIR/cuzk.sock, else /tmp/cuzk-<uid>.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// A config file (see config/cuzk.toml); CUZK_* environment overrides apply too.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where parameters for example circuits (`ctl prove`) are kept.
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Filecoin parameter directory (default $FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    filecoin_params_dir: Option<PathBuf>,
}

pub fn default_socket() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("cuzk.sock");
    }
    // SAFETY: getuid has no preconditions.
    PathBuf::from(format!("/tmp/cuzk-{}.sock", unsafe { libc::getuid() }))
}

pub fn run(a: Args) -> Result<()> {
    let settings = Settings::load(a.config.as_deref())?;
    // No SRS is known yet: residency `auto` keeps SRS sets resident on a GPU.
    let (engine, devices) = Engine::from_settings(&settings, None)?;
    eprintln!("cuzk daemon: {devices}");
    let engine = Arc::new(engine);
    let socket = a.socket.unwrap_or_else(default_socket);
    let opts = ServerOptions {
        example_params_dir: a.params_dir.unwrap_or_else(crate::default_params_dir),
        filecoin: cuzk_actors::filecoin::FilecoinConfig { params_dir: a.filecoin_params_dir, ..Default::default() },
    };
    let server = ControlServer::start(engine.clone(), &socket, opts)?;
    eprintln!("cuzk daemon: listening on {}", socket.display());
    server.wait();
    engine.shutdown();
    eprintln!("cuzk daemon: stopped");
    Ok(())
}
