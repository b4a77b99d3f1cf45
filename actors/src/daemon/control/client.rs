//! The control client: one request, one response.

use std::os::unix::net::UnixStream;
use std::path::Path;

use super::proto::{read, write, Request, Response};
use crate::EngineError;

/// Sends `req` to the daemon listening on `socket` and returns its answer; a socket that cannot
/// be reached, a frame that cannot be written or read, or a daemon that hangs up without
/// answering is an [`EngineError::Io`] about that socket.
pub fn call(socket: &Path, req: &Request) -> Result<Response, EngineError> {
    let io =
        |detail: String| EngineError::io(format!("control socket {}", socket.display()), detail);
    let mut s = UnixStream::connect(socket)
        .map_err(|e| io(format!("connecting to {}: {e}", socket.display())))?;
    write(&mut s, req).map_err(|e| io(e.to_string()))?;
    read(&mut s)
        .map_err(|e| io(e.to_string()))?
        .ok_or_else(|| io("the daemon closed the connection without answering".to_string()))
}
