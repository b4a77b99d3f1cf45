//! `cuzk ctl`: talk to a running daemon. Job ids are the daemon's (`<run>-<n>`, as gRPC's): `ctl
//! prove` prints the id it was given, `ctl wait` and `ctl cancel` take it back; an id from before
//! the daemon restarted is refused as not found, naming the restart.

use std::path::PathBuf;

use cuzk_actors::daemon::control::client::call;
use cuzk_actors::daemon::control::proto::{Request, Response};

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
    /// Prometheus text: jobs by kind, queues, stage histograms, budgets, pinned memory, SRS.
    Metrics,
    /// Readiness probe: prints the state; exit 0 ready, 1 starting, 3 draining, 2 no daemon.
    Ready,
    /// Re-read the config (this file, else the daemon's) and apply the live-changeable keys.
    Reload {
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Cancel a job by its id (`<run>-<n>`, as `ctl prove` printed it).
    Cancel {
        job: String,
    },
    /// Open a parameter file and keep it loaded.
    Preload {
        path: String,
    },
    /// Drop a parameter file (refused while a job holds it).
    Evict {
        path: String,
    },
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
    /// Wait for a job by its id (`<run>-<n>`, as `ctl prove` printed it) and print how it ended.
    Wait {
        job: String,
        /// Write the proof bytes here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prove a Filecoin proof from its inputs (submit, then wait for the proof).
    ProveFilecoin {
        /// Write the proof bytes here.
        #[arg(long, global = true)]
        out: Option<PathBuf>,
        #[command(subcommand)]
        kind: crate::filecoin_args::Kind,
    },
    /// Prove a circuit kind the daemon's embedding program registered, from an input file.
    ProveCustom {
        #[arg(long)]
        kind: String,
        /// The kind's input bytes.
        #[arg(long)]
        input: PathBuf,
        /// Write the proof bytes here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Finish the jobs in flight, then stop.
    Drain,
    /// Stop now.
    Shutdown,
}

fn print(r: Response, out: Option<&PathBuf>) -> Result<()> {
    match r {
        Response::Ok(s) | Response::Json(s) => println!("{s}"),
        Response::Submitted { job } => println!("submitted job {job}"),
        Response::Proof {
            job,
            proof,
            partitions,
            wall_ms,
            queue_ms,
            prove_ms,
        } => {
            if let Some(path) = out {
                std::fs::write(path, &proof).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            println!("job {job} done: {} proof bytes, {partitions} partition(s), wall {wall_ms} ms (queue {queue_ms}, prove {prove_ms})", proof.len());
        }
        Response::Error(e) => return Err(e.into()),
    }
    Ok(())
}

/// Submits `req` and, unless `no_wait`, waits for the proof.
fn submit_and_wait(
    socket: &std::path::Path,
    req: Request,
    no_wait: bool,
    out: Option<&PathBuf>,
) -> Result<()> {
    let r = call(socket, &req)?;
    let Response::Submitted { job } = r else {
        return print(r, out);
    };
    println!("submitted job {job}");
    if no_wait {
        return Ok(());
    }
    print(call(socket, &Request::Wait { job })?, out)
}

/// `ctl ready`: prints the state and returns the exit code a systemd unit or a script polls
/// (0 ready, 1 starting, 3 draining, 2 no daemon answering).
fn ready(socket: &std::path::Path) -> i32 {
    match call(socket, &Request::Ready) {
        Ok(Response::Ok(state)) => {
            println!("{state}");
            match state.as_str() {
                "ready" => 0,
                "starting" => 1,
                _ => 3,
            }
        }
        Ok(other) => {
            println!("down: unexpected answer {other:?}");
            2
        }
        Err(e) => {
            println!("down: {e}");
            2
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    let socket = a.socket.unwrap_or_else(crate::daemon::default_socket);
    let req = match a.cmd {
        Cmd::Ready => std::process::exit(ready(&socket)),
        Cmd::Reload { config } => Request::Reload {
            path: config.map(|p| p.display().to_string()),
        },
        Cmd::Status => Request::Status,
        Cmd::Metrics => Request::Metrics,
        Cmd::Cancel { job } => Request::Cancel { job },
        Cmd::Preload { path } => Request::Preload { path },
        Cmd::Evict { path } => Request::Evict { path },
        Cmd::Pause => Request::Pause,
        Cmd::Resume => Request::Resume,
        Cmd::Wait { job, out } => {
            return print(call(&socket, &Request::Wait { job })?, out.as_ref())
        }
        Cmd::ProveFilecoin { out, kind } => {
            return submit_and_wait(
                &socket,
                Request::Prove(kind.request()?),
                false,
                out.as_ref(),
            )
        }
        Cmd::ProveCustom { kind, input, out } => {
            let input = std::fs::read(&input).map_err(|e| format!("{}: {e}", input.display()))?;
            return submit_and_wait(
                &socket,
                Request::ProveCustom { kind, input },
                false,
                out.as_ref(),
            );
        }
        Cmd::Drain => Request::Drain,
        Cmd::Shutdown => Request::Shutdown,
        Cmd::Prove {
            circuit,
            size,
            partitions,
            no_wait,
        } => {
            let size =
                size.unwrap_or_else(|| cuzk_engine::circuits::Example::default_size(&circuit));
            return submit_and_wait(
                &socket,
                Request::ProveExample {
                    circuit,
                    size,
                    partitions,
                },
                no_wait,
                None,
            );
        }
    };
    print(call(&socket, &req)?, None)
}
