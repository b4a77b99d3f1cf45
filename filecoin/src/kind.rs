//! The four proof kinds a storage node asks for, and their default scheduling order.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProofKind {
    PoRep,
    SnapDeals,
    WindowPoSt,
    WinningPoSt,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRep,
        ProofKind::SnapDeals,
        ProofKind::WindowPoSt,
        ProofKind::WinningPoSt,
    ];

    /// Scheduling rank, higher first: a WinningPoSt misses its block if it waits, a WindowPoSt
    /// its deadline; PoRep and SnapDeals have hours.
    pub fn default_rank(self) -> u8 {
        match self {
            ProofKind::WinningPoSt => 2,
            ProofKind::WindowPoSt => 1,
            ProofKind::PoRep | ProofKind::SnapDeals => 0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProofKind::PoRep => "porep",
            ProofKind::SnapDeals => "snap",
            ProofKind::WindowPoSt => "window-post",
            ProofKind::WinningPoSt => "winning-post",
        }
    }
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
