//! `cuzk ctl`: talk to a running daemon.

use std::path::PathBuf;

use cuzk_actors::control::client::call;
use cuzk_actors::control::proto::{Request, Response};

use crate::common::Result;

#[derive(clap::Args)]
pub struct Args {
    /// The daemon's control socket (default as for `cuzk daemon`).
    #[arg(long)]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Queues, in-flight partitions, budgets, pinned memory (JSON).
    Status,
    /// Per-stage totals (JSON).
    Metrics,
    Cancel { job: u64 },
    /// Open a parameter file and keep it loaded.
    Preload { path: String },
    /// Drop a parameter file (refused while a job holds it).
    Evict { path: String },
    /// Stop dispatching to the GPUs.
    Pause,
    Resume,
    /// Prove an example circuit (submit, then wait unless --no-wait).
    Prove {
        #[arg(long, default_value = "sha256")]
        circuit: String,
        #[arg(long)]
        size: Option<usize>,
        #[arg(short, long, default_value_t = 2)]
        partitions: usize,
        #[arg(long)]
        no_wait: bool,
    },
    Wait { job: u64 },
    /// Finish the jobs in flight, then stop.
    Drain,
    /// Stop now.
    Shutdown,
}

fn print(r: Response) -> Result<()> {
    match r {
        Response::Ok(s) | Response::Json(s) => println!("{s}"),
        Response::Submitted { job } => println!("submitted job {job}"),
        Response::Done { job, proof_bytes, wall_ms } => println!("job {job} done: {proof_bytes} proof bytes, {wall_ms} ms"),
        Response::Error(e) => return Err(e.into()),
    }
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    let socket = a.socket.unwrap_or_else(crate::daemon::default_socket);
    let req = match a.cmd {
        Cmd::Status => Request::Status,
        Cmd::Metrics => Request::Metrics,
        Cmd::Cancel { job } => Request::Cancel { job },
        Cmd::Preload { path } => Request::Preload { path },
        Cmd::Evict { path } => Request::Evict { path },
        Cmd::Pause => Request::Pause,
        Cmd::Resume => Request::Resume,
        Cmd::Wait { job } => Request::Wait { job },
        Cmd::Drain => Request::Drain,
        Cmd::Shutdown => Request::Shutdown,
        Cmd::Prove { circuit, size, partitions, no_wait } => {
            let size = size.unwrap_or_else(|| cuzk_engine::circuits::Example::default_size(&circuit));
            let r = call(&socket, &Request::ProveExample { circuit, size, partitions })?;
            let Response::Submitted { job } = r else { return print(r) };
            println!("submitted job {job}");
            if no_wait {
                return Ok(());
            }
            Request::Wait { job }
        }
    };
    print(call(&socket, &req)?)
}
