//! Kubernetes protobuf encodings of the values the estimator protocol carries as bytes.
//!
//! The `*Bytes` fields of the protocol hold what Go's `Quantity.Marshal()`,
//! `NodeSelector.Marshal()` and `Toleration.Marshal()` produce. Those gogo-generated
//! marshallers write fields in ascending number order and always write scalar strings, even
//! empty ones; optional integers (`tolerationSeconds`) only when set. The generated Rust
//! types of `/proto/k8s.io/...` use proto2 `optional` strings, so filling every string with
//! `Some(..)` reproduces those bytes exactly. The same messages fill the deprecated typed
//! fields, which embed the identical encoding.

use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use prost::Message;

use crate::pb::{core_v1, resource};

/// `resource.Quantity` message holding Go's `String()` of the quantity: the canonical form
/// (`1000m` → `1`, `1.5Gi` → `1536Mi`), as the reference sends it. A string that does not
/// parse (the API server would have refused it) is sent trimmed, as written.
pub fn quantity(q: &Quantity) -> resource::Quantity {
    let text = scheduler_core::quantity::Quantity::from_k8s(q)
        .map(|parsed| parsed.canonical())
        .unwrap_or_else(|_| q.0.trim().to_string());
    resource::Quantity { string: Some(text) }
}

/// Bytes of `Quantity.Marshal()`.
pub fn encode_quantity(q: &Quantity) -> Vec<u8> {
    quantity(q).encode_to_vec()
}

/// `core/v1` `NodeSelector` message.
pub fn node_selector(s: &k8s::NodeSelector) -> core_v1::NodeSelector {
    core_v1::NodeSelector {
        node_selector_terms: s
            .node_selector_terms
            .iter()
            .map(node_selector_term)
            .collect(),
    }
}

fn node_selector_term(t: &k8s::NodeSelectorTerm) -> core_v1::NodeSelectorTerm {
    let requirements = |list: &Option<Vec<k8s::NodeSelectorRequirement>>| {
        list.iter()
            .flatten()
            .map(node_selector_requirement)
            .collect()
    };
    core_v1::NodeSelectorTerm {
        match_expressions: requirements(&t.match_expressions),
        match_fields: requirements(&t.match_fields),
    }
}

fn node_selector_requirement(r: &k8s::NodeSelectorRequirement) -> core_v1::NodeSelectorRequirement {
    core_v1::NodeSelectorRequirement {
        key: Some(r.key.clone()),
        operator: Some(r.operator.clone()),
        values: r.values.clone().unwrap_or_default(),
    }
}

/// Bytes of `NodeSelector.Marshal()`.
pub fn encode_node_selector(s: &k8s::NodeSelector) -> Vec<u8> {
    node_selector(s).encode_to_vec()
}

/// `core/v1` `Toleration` message.
pub fn toleration(t: &k8s::Toleration) -> core_v1::Toleration {
    let text = |v: &Option<String>| Some(v.clone().unwrap_or_default());
    core_v1::Toleration {
        key: text(&t.key),
        operator: text(&t.operator),
        value: text(&t.value),
        effect: text(&t.effect),
        toleration_seconds: t.toleration_seconds,
    }
}

/// Bytes of `Toleration.Marshal()`.
pub fn encode_toleration(t: &k8s::Toleration) -> Vec<u8> {
    toleration(t).encode_to_vec()
}
