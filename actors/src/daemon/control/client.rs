//! The control client: one request, one response.

use std::os::unix::net::UnixStream;
use std::path::Path;

use super::proto::{read, write, Request, Response};

pub fn call(socket: &Path, req: &Request) -> Result<Response, String> {
    let mut s = UnixStream::connect(socket)
        .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
    write(&mut s, req).map_err(|e| e.to_string())?;
    read(&mut s)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the daemon closed the connection without answering".to_string())
}
