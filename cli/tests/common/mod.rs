//! What the cli tests share: the Filecoin fixture of the actors tests (parameters from cuzk's
//! seeded dev setup, a 2 KiB sector sealed on the CPU: `actors/tests/common/mod.rs`, included
//! here as it is), and the daemon helpers (`daemon.rs`).
#![allow(dead_code)]

#[path = "../../../actors/tests/common/mod.rs"]
mod fixture;
pub use fixture::*;

pub mod daemon;
