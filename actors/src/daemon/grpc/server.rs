//! Serving the service: a runtime of its own, the unix socket (mode 0600, peers of another uid
//! refused) and, optionally, TCP (loopback unless told otherwise; a shared token, when set,
//! required as `authorization: Bearer <token>`), and stopping them: calls in flight are answered
//! first, and the unix socket's file is removed, also when a start is refused halfway.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Status};

use super::authority::AuthorityFix;
use super::pb::proving_engine_server::ProvingEngineServer;
use super::Service;
use crate::log;
use crate::EngineError;

/// Checks `authorization: Bearer <token>` (compared in constant time).
fn check_token(token: &str, req: &Request<()>) -> Result<(), Status> {
    let Some(got) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "this endpoint needs `authorization: Bearer <token>` (grpc.token)",
        ));
    };
    let got = got.to_str().unwrap_or("");
    let got = got.strip_prefix("Bearer ").unwrap_or(got).as_bytes();
    let want = token.as_bytes();
    let diff = got.len() ^ want.len()
        | got
            .iter()
            .zip(want.iter().cycle())
            .fold(0usize, |d, (a, b)| d | usize::from(a ^ b));
    if diff == 0 && !want.is_empty() {
        Ok(())
    } else {
        Err(Status::unauthenticated("wrong token (grpc.token)"))
    }
}

/// Whether a unix-socket peer whose credentials read `peer` (its uid) may talk to a daemon
/// running as uid `me`: only the same uid (the socket is also mode 0600); why not, otherwise.
fn peer_allowed(peer: std::io::Result<u32>, me: u32) -> Result<(), String> {
    match peer {
        Ok(uid) if uid == me => Ok(()),
        Ok(uid) => Err(format!("peer uid {uid} is not the daemon's uid {me}")),
        Err(e) => Err(format!("reading the peer's credentials (SO_PEERCRED): {e}")),
    }
}

/// The running service: its runtime, and where it listens.
pub struct GrpcServer {
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
    /// The serving tasks, awaited (briefly) on stop so that answers in flight go out.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub unix_socket: Option<PathBuf>,
    pub tcp_addr: Option<SocketAddr>,
}

/// The shared-token check of a listener (`None`: none required).
#[derive(Clone)]
struct TokenCheck(Option<String>);

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        match &self.0 {
            Some(t) => check_token(t, &req).map(|()| req),
            None => Ok(req),
        }
    }
}

type Served =
    tonic::service::interceptor::InterceptedService<ProvingEngineServer<Service>, TokenCheck>;

/// Serves `svc` on `incoming` until `stop` turns true.
async fn serve<I, IO, IE>(
    svc: Served,
    incoming: I,
    mut stop: tokio::sync::watch::Receiver<bool>,
    l: slog::Logger,
    what: &'static str,
) where
    I: tokio_stream::Stream<Item = Result<IO, IE>>,
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let r = tonic::transport::Server::builder()
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop.wait_for(|v| *v).await;
        })
        .await;
    if let Err(e) = r {
        slog::error!(l, "gRPC on {} stopped: {}", what, e);
    }
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

impl GrpcServer {
    /// Binds the configured listeners and serves `service` on a runtime of its own.
    pub fn start(service: Service) -> Result<GrpcServer, EngineError> {
        let opts = service.options().clone();
        if opts.unix_socket.is_none() && opts.tcp_listen.is_none() {
            return Err(EngineError::config(
                "grpc",
                "grpc: neither grpc.unix_socket nor grpc.tcp_listen is set",
            ));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cuzk-grpc")
            .enable_all()
            .build()
            .map_err(|e| EngineError::Start(format!("grpc runtime: {e}")))?;
        let rt = runtime.handle().clone();
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        // Filled in as listeners come up; an early return drops it, which stops what runs and
        // removes a socket file already bound.
        let mut started = GrpcServer {
            runtime: Some(runtime),
            stop: Some(stop_tx),
            tasks: Vec::new(),
            unix_socket: None,
            tcp_addr: None,
        };
        let max = opts.max_message_bytes;
        let svc = Arc::new(service);
        let server = |check: TokenCheck| {
            let s = ProvingEngineServer::from_arc(svc.clone())
                .max_decoding_message_size(max)
                .max_encoding_message_size(max);
            tonic::service::interceptor::InterceptedService::new(s, check)
        };
        let l = log::component("grpc");
        if let Some(path) = &opts.unix_socket {
            let io = |detail: String| EngineError::io("grpc.unix_socket", detail);
            if path.exists() {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(io(format!(
                        "grpc.unix_socket {}: another daemon is listening there",
                        path.display()
                    )));
                }
                std::fs::remove_file(path).map_err(|e| {
                    io(format!("removing the stale socket {}: {e}", path.display()))
                })?;
            }
            let listener = {
                let _g = rt.enter();
                tokio::net::UnixListener::bind(path)
                    .map_err(|e| io(format!("grpc.unix_socket {}: {e}", path.display())))?
            };
            started.unix_socket = Some(path.clone());
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| io(format!("chmod 0600 {}: {e}", path.display())))?;
            // The socket's file mode guards it, and each connection's peer uid is checked (as on
            // the control socket): no token there.
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            let peers = l.clone();
            let incoming = tokio_stream::StreamExt::filter_map(
                tokio_stream::wrappers::UnixListenerStream::new(listener),
                move |conn| match conn {
                    Ok(s) => match peer_allowed(s.peer_cred().map(|c| c.uid()), me) {
                        Ok(()) => Some(Ok(AuthorityFix::new(s))),
                        Err(why) => {
                            slog::warn!(
                                peers,
                                "gRPC connection on the unix socket refused: {}",
                                why
                            );
                            None
                        }
                    },
                    Err(e) => Some(Err(e)),
                },
            );
            started.tasks.push(rt.spawn(serve(
                server(TokenCheck(None)),
                incoming,
                stop_rx.clone(),
                l.clone(),
                "the unix socket",
            )));
            slog::info!(l, "gRPC cuzk.v1.ProvingEngine listening"; "unix_socket" => path.display().to_string());
        }
        if let Some(addr) = &opts.tcp_listen {
            let io = |e: std::io::Error| {
                EngineError::io("grpc.tcp_listen", format!("grpc.tcp_listen {addr}: {e}"))
            };
            let listener = {
                let _g = rt.enter();
                let std_l = std::net::TcpListener::bind(addr).map_err(io)?;
                std_l.set_nonblocking(true).map_err(io)?;
                tokio::net::TcpListener::from_std(std_l).map_err(io)?
            };
            let bound = listener.local_addr().map_err(io)?;
            if !is_loopback(&bound) && opts.token.is_none() && !opts.allow_remote {
                return Err(EngineError::config("grpc.tcp_listen", format!(
                    "grpc.tcp_listen {addr} is not a loopback address: set grpc.token (clients then send `authorization: Bearer <token>`), or grpc.allow_remote = true to serve it without one"
                )));
            }
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            started.tasks.push(rt.spawn(serve(
                server(TokenCheck(opts.token.clone())),
                incoming,
                stop_rx.clone(),
                l.clone(),
                "TCP",
            )));
            slog::info!(l, "gRPC cuzk.v1.ProvingEngine listening"; "tcp" => bound.to_string(), "token" => opts.token.is_some());
            started.tcp_addr = Some(bound);
        }
        Ok(started)
    }

    /// Stops serving: no new calls; calls in flight get up to 5 s to be answered (a drain has
    /// waited for their jobs), then are dropped (their jobs go on in the engine). Removes the
    /// unix socket's file.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(rt) = self.runtime.take() {
            let tasks = std::mem::take(&mut self.tasks);
            // Not from inside a runtime (block_on would panic there): then the answers in flight
            // are not waited for.
            if tokio::runtime::Handle::try_current().is_err() {
                rt.block_on(async {
                    let _ = tokio::time::timeout(Duration::from_secs(5), async {
                        for t in tasks {
                            let _ = t.await;
                        }
                    })
                    .await;
                });
            }
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        if let Some(p) = &self.unix_socket {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::peer_allowed;

    #[test]
    fn only_the_daemons_own_uid_may_connect_on_the_unix_socket() {
        assert_eq!(peer_allowed(Ok(1000), 1000), Ok(()));
        assert_eq!(peer_allowed(Ok(0), 0), Ok(()));
        let e = peer_allowed(Ok(1001), 1000).unwrap_err();
        assert!(e.contains("1001") && e.contains("1000"), "{e}");
        // root is not the daemon's uid either: refused like any other.
        assert!(peer_allowed(Ok(0), 1000).is_err());
        let e = peer_allowed(Err(std::io::Error::other("no creds")), 1000).unwrap_err();
        assert!(e.contains("SO_PEERCRED") && e.contains("no creds"), "{e}");
    }
}
