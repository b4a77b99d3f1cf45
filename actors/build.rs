//! Compiles `proto/cuzk/v1/engine.proto` (the gRPC service Curio's cuzk client speaks) with the
//! pure-Rust protox compiler into tonic/prost code: no system `protoc` is needed.

fn main() {
    println!("cargo:rerun-if-changed=proto/cuzk/v1/engine.proto");
    #[cfg(feature = "grpc")]
    {
        let fds = match protox::compile(["cuzk/v1/engine.proto"], ["proto"]) {
            Ok(f) => f,
            Err(e) => panic!("proto/cuzk/v1/engine.proto: {e}"),
        };
        if let Err(e) = tonic_prost_build::configure()
            .build_server(true)
            .build_client(true)
            .compile_fds(fds)
        {
            panic!("generating the gRPC code: {e}");
        }
    }
}
