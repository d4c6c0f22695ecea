//! Estimator requests built from a binding, as v1.18.2 builds them.
//!
//! Every request is built once per fan-out as a template without `cluster`; the fan-out then
//! stamps each cluster's name into a clone. Kubernetes values are written twice: in the
//! deprecated typed fields (read by v1.17 estimators) and in the `*Bytes` fields (read by
//! v1.18+ estimators), exactly like the v1.18.2 writer. v1.19 reserves the typed fields and
//! its writer leaves them out; a v1.19 estimator skips them as unknown fields, so writing both
//! keeps every estimator from v1.17 to v1.19 answering (tests/real_estimator.rs).

use std::collections::BTreeMap;

use karmada_api::ResourceList;
use karmada_api::work::{self, ObjectReference};
use scheduler_core::EstimateRequest;

use crate::kubeproto;
use crate::pb::messages as pb;

/// gRPC metadata key carrying the object being scheduled (read by the estimator's logs).
pub const OBJECT_METADATA_KEY: &str = "object";

/// Value of the `object` metadata: `kind=<Kind>, name=<namespace>/<name>`.
pub fn object_metadata(resource: &ObjectReference) -> String {
    format!(
        "kind={}, name={}/{}",
        resource.kind, resource.namespace, resource.name
    )
}

type Resources = (
    BTreeMap<String, crate::pb::resource::Quantity>,
    BTreeMap<String, Vec<u8>>,
);

fn resources(list: &ResourceList) -> Resources {
    let typed = list
        .iter()
        .map(|(k, v)| (k.clone(), kubeproto::quantity(v)))
        .collect();
    let bytes = list
        .iter()
        .map(|(k, v)| (k.clone(), kubeproto::encode_quantity(v)))
        .collect();
    (typed, bytes)
}

/// `NodeClaim` with the node selector copied and affinity/tolerations in both forms.
pub fn node_claim(claim: &work::NodeClaim) -> pb::NodeClaim {
    #[allow(deprecated)]
    pb::NodeClaim {
        node_affinity: claim
            .hard_node_affinity
            .as_ref()
            .map(kubeproto::node_selector),
        node_selector: claim.node_selector.clone(),
        tolerations: claim
            .tolerations
            .iter()
            .map(kubeproto::toleration)
            .collect(),
        node_affinity_bytes: claim
            .hard_node_affinity
            .as_ref()
            .map(kubeproto::encode_node_selector)
            .unwrap_or_default(),
        tolerations_bytes: claim
            .tolerations
            .iter()
            .map(kubeproto::encode_toleration)
            .collect(),
    }
}

/// `ReplicaRequirements` of a single-template workload.
pub fn replica_requirements(r: &work::ReplicaRequirements) -> pb::ReplicaRequirements {
    let (typed, bytes) = resources(&r.resource_request);
    #[allow(deprecated)]
    pb::ReplicaRequirements {
        node_claim: r.node_claim.as_ref().map(node_claim),
        resource_request: typed,
        namespace: r.namespace.clone(),
        priority_class_name: r.priority_class_name.clone(),
        resource_request_bytes: bytes,
    }
}

/// `ComponentReplicaRequirements` of one component.
pub fn component_replica_requirements(
    r: &work::ComponentReplicaRequirements,
) -> pb::ComponentReplicaRequirements {
    let (typed, bytes) = resources(&r.resource_request);
    #[allow(deprecated)]
    pb::ComponentReplicaRequirements {
        node_claim: r.node_claim.as_ref().map(node_claim),
        resource_request: typed,
        priority_class_name: r.priority_class_name.clone(),
        resource_request_bytes: bytes,
    }
}

/// One `Component`.
pub fn component(c: &work::Component) -> pb::Component {
    pb::Component {
        name: c.name.clone(),
        replica_requirements: c
            .replica_requirements
            .as_ref()
            .map(component_replica_requirements),
        replicas: c.replicas,
    }
}

/// One assumed workload as the reference sends it (`toAssumedWorkload`).
pub fn assumed_workload(a: &scheduler_core::AssumedWorkload) -> pb::AssumedWorkload {
    pb::AssumedWorkload {
        namespace: a.namespace.clone(),
        components: a.components.iter().map(component).collect(),
    }
}

/// `MaxAvailableReplicasRequest` without `cluster` and without assumed workloads (which
/// differ per cluster: the fan-out adds each cluster's).
pub fn max_available_replicas(req: &EstimateRequest<'_>) -> pb::MaxAvailableReplicasRequest {
    pb::MaxAvailableReplicasRequest {
        cluster: String::new(),
        replica_requirements: req.replica_requirements.map(replica_requirements),
        assumed_workloads: Vec::new(),
    }
}

/// `MaxAvailableComponentSetsRequest` without `cluster`.
pub fn max_available_component_sets(
    req: &EstimateRequest<'_>,
) -> pb::MaxAvailableComponentSetsRequest {
    pb::MaxAvailableComponentSetsRequest {
        cluster: String::new(),
        components: req.components.iter().map(component).collect(),
        namespace: req.namespace.to_string(),
        assumed_workloads: Vec::new(),
    }
}
