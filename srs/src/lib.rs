//! cuzk-srs: Filecoin Groth16 parameter files.
