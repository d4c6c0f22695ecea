//! Compiles the estimator protocol (`/proto`) without a `protoc` binary: `protox` parses the
//! files into a descriptor set and `tonic-prost-build` generates messages, client and server.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_root = manifest.join("../../proto");
    let service = proto_root.join("pkg/estimator/service/service.proto");

    println!("cargo:rerun-if-changed={}", proto_root.display());
    let fds = protox::compile([&service], [&proto_root])?;
    for file in &fds.file {
        println!(
            "cargo:rerun-if-changed={}",
            proto_root.join(file.name()).display()
        );
    }

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // Deterministic map order: the same request always has the same bytes.
        .btree_map(".")
        // Buffers sized for the protocol's small messages (see src/codec.rs).
        .codec_path("crate::codec::EstimatorCodec")
        .include_file("estimator_protocol.rs")
        .compile_fds(fds)?;
    Ok(())
}
