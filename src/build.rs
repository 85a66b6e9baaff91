//! Generates the gRPC services and messages of both A2A versions from the
//! vendored protos (`src/a2a/grpc/proto/`) at build time. protox compiles
//! them in Rust, so the build needs no `protoc`. tonic and prost write the
//! messages, clients and servers; pbjson writes their ProtoJSON (serde),
//! so that a gRPC message and the JSON the other bindings carry are one
//! conversion apart. The well-known types are pbjson's, for the same reason.

use std::path::PathBuf;

const PROTOS: [&str; 2] = ["lf/a2a/v1/a2a.proto", "a2a/v1/a2a.proto"];
const INCLUDE: &str = "src/a2a/grpc/proto";
const PACKAGES: [&str; 2] = [".lf.a2a.v1", ".a2a.v1"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={INCLUDE}");
    println!("cargo:rerun-if-changed=src/build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(PROTOS, [INCLUDE])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_well_known_types(true)
        // A request that does not decode is the client's error
        // (INVALID_ARGUMENT), not tonic-prost's INTERNAL.
        .codec_path("crate::a2a::grpc::codec::ProstCodec")
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_fds(descriptors.clone())?;
    let encoded = prost::Message::encode_to_vec(&descriptors);
    // For server reflection (`src/ingress/grpc/reflection.rs`).
    std::fs::write(out.join("a2a_descriptors.bin"), &encoded)?;
    pbjson_build::Builder::new()
        .register_descriptors(&encoded)?
        .out_dir(&out)
        .build(&PACKAGES)?;
    Ok(())
}
