//! The control socket: a unix socket (mode 0600, peers of another uid refused) speaking
//! length-prefixed, versioned bincode frames. `proto.rs` is the wire format, `server.rs` the
//! daemon side, `client.rs` what `cuzk ctl` uses.

pub mod client;
pub mod proto;
pub mod server;
