//! Karmada API objects as the scheduler sees them.
//!
//! Three groups are covered:
//! - `cluster.karmada.io/v1alpha1` [`Cluster`](cluster::Cluster), read to build the snapshot;
//! - `work.karmada.io/v1alpha2` [`ResourceBinding`](work::ResourceBinding) and
//!   [`ClusterResourceBinding`](work::ClusterResourceBinding), read and patched;
//! - `policy.karmada.io/v1alpha1` [`Placement`](policy::Placement), embedded in bindings.
//!
//! JSON names follow the reference CRDs exactly. Every struct that the scheduler may
//! re-encode carries an `extra` map (flattened) so that fields this code does not know (a newer
//! CRD, another controller's additions) survive a decode/encode round trip. The scheduler
//! itself only ever writes merge patches of its own fields, so the maps are a second line of
//! defence, not the mechanism.
//!
//! Enumerations of the placement API are strict Rust enums: an unknown value is a decode
//! error whose message names the field path (see [`decode`]).

pub mod cluster;
pub mod decode;
pub mod name;
pub mod policy;
pub mod work;

pub use cluster::Cluster;
pub use decode::{
    DecodeError, SHALLOW_DEPTH, excerpt, from_json_ref, from_json_str, from_json_value,
    from_yaml_str, shallow_value,
};
pub use name::ClusterName;
pub use policy::Placement;
pub use work::{ClusterResourceBinding, ResourceBinding};

/// Re-exported so that users of these types name the same Kubernetes versions.
pub use k8s_openapi;

/// Unknown JSON fields kept verbatim (see the crate documentation).
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// A Kubernetes `ResourceList` (`resource name -> quantity`), ordered for determinism.
pub type ResourceList =
    std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;
