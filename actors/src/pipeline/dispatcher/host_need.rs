//! The host bytes a partition reserves at admission, by how it synthesizes (`Synthesis`) and
//! where its products and scalar splits are computed: the one formula `admission.rs` reserves.

use crate::pipeline::job::Synthesis;
use crate::resources::tier::Dims;

/// Host bytes a partition holds once prepared, by how it synthesizes.
pub(super) fn host_need(
    dims: &Dims,
    how: Synthesis,
    splits_on_device: bool,
    streams: bool,
    products_on_host: bool,
) -> u64 {
    match how {
        // The check records the circuit again beside the witness: the recording's sections,
        // which grow by doubling (up to twice their size while they grow), then goes on as a
        // witness-only partition does.
        Synthesis::Checked { recording } => {
            2 * recording
                + host_need(
                    dims,
                    Synthesis::Recorded,
                    splits_on_device,
                    streams,
                    products_on_host,
                )
        }
        // Its products (and splits) are computed on the synthesis thread.
        Synthesis::Recorded if products_on_host => dims.host_products(),
        // A streamed partition's compute also holds one of a, b, c or the queries' scalars
        // beside its witness.
        Synthesis::Recorded if splits_on_device && streams => dims.host_streamed(),
        Synthesis::Recorded if splits_on_device => dims.host_witness(),
        Synthesis::Recorded => dims.host_recorded(),
        Synthesis::Unrecorded { .. } | Synthesis::Full => dims.host(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_the_full_check_falls_on_reserves_a_second_recording_beside_its_own_need() {
        let dims = Dims {
            n: 1 << 27,
            aux: 130_169_893,
            a: 129_300_000,
            b: 33_200_000,
            recording: None,
        };
        let recording = 9_560_000_000;
        for (splits, streams, products) in [
            (true, true, false),
            (true, false, false),
            (false, false, false),
            (false, false, true),
        ] {
            let own = host_need(&dims, Synthesis::Recorded, splits, streams, products);
            let checked = host_need(
                &dims,
                Synthesis::Checked { recording },
                splits,
                streams,
                products,
            );
            assert_eq!(
                checked,
                own + 2 * recording,
                "{splits} {streams} {products}"
            );
        }
    }
}
