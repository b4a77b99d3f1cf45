//! How a copy from page-locked host memory is cut ([`copy_pieces`]): so that each piece lies
//! within one of the HostPinner's registrations (the pipeline registers host buffers in
//! `COPY_PIECE` blocks, from page boundaries).

use crate::pipeline::{COPY_PIECE, PAGE};

/// The pieces `[lo, hi)` (offsets into a buffer at host address `addr` of `len` bytes) a copy is
/// split into: at the buffer's first and last page boundary and at absolute multiples of
/// `COPY_PIECE`, so that each piece lies within one of the HostPinner's registrations.
pub fn copy_pieces(addr: usize, len: usize) -> Vec<(usize, usize)> {
    let end = addr + len;
    let mut cuts = vec![addr, end];
    cuts.push(addr.div_ceil(PAGE) * PAGE);
    cuts.push(end / PAGE * PAGE);
    let mut m = addr.div_ceil(COPY_PIECE) * COPY_PIECE;
    while m < end {
        cuts.push(m);
        m += COPY_PIECE;
    }
    cuts.retain(|&c| c >= addr && c <= end);
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| (w[0] - addr, w[1] - addr))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_pieces_cover_the_buffer_and_never_cross_a_page_or_piece_boundary_inside() {
        for (addr, len) in [
            (0x1000_0010usize, 300_000_000usize),
            (4096, 4096),
            (100, 10),
            (COPY_PIECE - 5, 10),
            (0, 0),
            (7, COPY_PIECE * 3),
        ] {
            let p = copy_pieces(addr, len);
            let mut at = 0;
            for &(lo, hi) in &p {
                assert_eq!(lo, at);
                assert!(hi > lo);
                at = hi;
                let (a, b) = (addr + lo, addr + hi);
                // Within one COPY_PIECE block, and either within one page or page-aligned inside.
                assert_eq!(
                    a / COPY_PIECE,
                    (b - 1) / COPY_PIECE,
                    "piece {a:#x}..{b:#x} crosses a piece boundary"
                );
                let first_page = a / 4096 == addr / 4096;
                let last_page = (b - 1) / 4096 == (addr + len - 1) / 4096;
                if first_page && a % 4096 != 0 {
                    assert_eq!(
                        a / 4096,
                        (b - 1) / 4096,
                        "the head piece leaves the buffer's first page"
                    );
                }
                if last_page && b % 4096 != 0 && !(first_page && a / 4096 == (b - 1) / 4096) {
                    assert_eq!(
                        a / 4096,
                        (b - 1) / 4096,
                        "the tail piece starts before the buffer's last page"
                    );
                }
            }
            assert_eq!(at, len);
        }
    }
}
