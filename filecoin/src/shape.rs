//! Dispatch on the sector size to the Merkle tree shape, as filecoin-proofs-api's own (private)
//! `with_shape!` does, but with an error instead of a panic for an unknown size.

/// `with_shape!(size, f<G…>, args…)` calls `f::<Tree, G…>(args…)` for the tree shape of `size`
/// bytes, or evaluates to `Err(FilecoinError::SectorSize(size))`.
macro_rules! with_shape {
    ($size:expr, $f:ident $(<$($g:ty),*>)?, $($arg:expr),* $(,)?) => {{
        use filecoin_proofs::constants as c;
        match $size {
            c::SECTOR_SIZE_2_KIB => $f::<c::SectorShape2KiB $($(, $g)*)?>($($arg),*),
            c::SECTOR_SIZE_8_MIB => $f::<c::SectorShape8MiB $($(, $g)*)?>($($arg),*),
            c::SECTOR_SIZE_512_MIB => $f::<c::SectorShape512MiB $($(, $g)*)?>($($arg),*),
            c::SECTOR_SIZE_32_GIB => $f::<c::SectorShape32GiB $($(, $g)*)?>($($arg),*),
            c::SECTOR_SIZE_64_GIB => $f::<c::SectorShape64GiB $($(, $g)*)?>($($arg),*),
            other => Err($crate::FilecoinError::SectorSize(other)),
        }
    }};
}
pub(crate) use with_shape;
