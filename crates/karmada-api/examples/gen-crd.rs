//! Prints the `Cluster` CRD generated from the Rust type.
//!
//! `cargo run -q -p karmada-api --example gen-crd > manifests/crds/cluster.karmada.io_clusters.yaml`
//! (the test `crd_is_fresh` fails when the committed file differs).

fn main() {
    print!("{}", karmada_api::cluster::crd_yaml());
}
