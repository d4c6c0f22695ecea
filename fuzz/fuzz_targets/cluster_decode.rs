//! Cluster decoding as the scheduler's watch does it (`karmada_api::from_json_value`), then
//! everything that reads a member cluster's self-reported fields: the general estimator
//! (resource summary, resource models), and a scheduling pass of fixed bindings over a
//! snapshot holding the decoded cluster (taints, labels, API enablements, topology).
//!
//! Input: a JSON object (a Cluster), or YAML text.
//!
//! Checks besides "no panic":
//! - a decoded cluster encodes to a document that decodes to the same cluster;
//! - a refused cluster's error names the failing field;
//! - the estimator and scheduler memos do not change answers: a scheduler and snapshot that
//!   have seen every earlier input answer as fresh ones do.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use std::sync::{Arc, LazyLock};

use karmada_api::Cluster;
use karmada_api::work::{Component, ReplicaRequirements, ResourceBindingSpec};
use libfuzzer_sys::fuzz_target;
use scheduler_core::general::{self, GeneralEstimator};
use scheduler_core::schedule::{BindingInput, ScheduleConfig, Scheduler};
use scheduler_core::snapshot::Snapshot;
use serde_json::{Value, json};

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    karmada_api::from_json_value(v).expect("a valid fixture")
}

/// A second cluster beside the fuzzed one, so that spreading and division have a choice.
fn neighbour() -> Cluster {
    decode(json!({
        "metadata": {"name": "steady"},
        "spec": {"syncMode": "Push", "provider": "aws", "region": "eu-west-1",
                 "zones": ["eu-west-1a"]},
        "status": {
            "apiEnablements": [{"groupVersion": "apps/v1",
                                "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                            "message": "ready", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "resourceSummary": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    }))
}

fn requirements() -> ReplicaRequirements {
    decode(json!({
        "resourceRequest": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1",
                            "ephemeral-storage": "1Gi"},
        "nodeClaim": {"nodeSelector": {"disk": "ssd"},
                      "tolerations": [{"key": "maintenance", "operator": "Exists"}]}
    }))
}

fn components() -> Vec<Component> {
    decode(json!([
        {"name": "leader", "replicas": 1,
         "replicaRequirements": {"resourceRequest": {"cpu": "2", "memory": "4Gi"}}},
        {"name": "worker", "replicas": 3,
         "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "2Gi",
                                                     "nvidia.com/gpu": "1"}}}
    ]))
}

/// Bindings that exercise the placement rules reading cluster fields.
fn bindings() -> Vec<ResourceBindingSpec> {
    let resource = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                          "namespace": "default", "name": "web"});
    let requirements = serde_json::to_value(requirements()).expect("serialises");
    [
        json!({"resource": resource, "replicas": 5, "replicaRequirements": requirements,
               "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                   "replicaDivisionPreference": "Weighted",
                   "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}),
        json!({"resource": resource, "replicas": 7, "replicaRequirements": requirements,
               "placement": {
                   "clusterTolerations": [{"key": "maintenance", "operator": "Exists",
                                           "effect": "NoSchedule"}],
                   "spreadConstraints": [{"spreadByField": "region", "minGroups": 1,
                                          "maxGroups": 2}],
                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                       "replicaDivisionPreference": "Aggregated"}}}),
        json!({"resource": resource, "replicas": 2,
               "placement": {"clusterAffinity": {"labelSelector":
                   {"matchExpressions": [{"key": "env", "operator": "NotIn",
                                          "values": ["dev"]}]}},
                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}),
    ]
    .into_iter()
    .map(decode)
    .collect()
}

fn scheduler() -> Scheduler {
    Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default())
        .expect("the default plugins")
        .with_estimator(Arc::new(GeneralEstimator::new(true)))
}

struct Warm {
    scheduler: Scheduler,
    estimator: GeneralEstimator,
    bindings: Vec<ResourceBindingSpec>,
    requirements: ReplicaRequirements,
    components: Vec<Component>,
}

static WARM: LazyLock<Warm> = LazyLock::new(|| Warm {
    scheduler: scheduler(),
    estimator: GeneralEstimator::new(true),
    bindings: bindings(),
    requirements: requirements(),
    components: components(),
});

fn estimates(estimator: &GeneralEstimator, cluster: &Cluster, warm: &Warm) -> String {
    format!(
        "{} {} {}",
        estimator.max_replicas(cluster, None),
        estimator.max_replicas(cluster, Some(&warm.requirements)),
        estimator.max_component_sets(cluster, &warm.components),
    )
}

fn placements(scheduler: &Scheduler, snapshot: &Snapshot, warm: &Warm) -> String {
    let status = Default::default();
    warm.bindings
        .iter()
        .map(|spec| {
            let input = BindingInput {
                snapshot,
                spec,
                status: &status,
                workload_index: None,
                assumed: None,
            };
            let out = futures::executor::block_on(scheduler.schedule_binding(input, false));
            format!("{:?}", out.result)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check(raw: Value) {
    let cluster: Cluster = match karmada_api::from_json_value(raw) {
        Ok(c) => c,
        Err(e) => {
            assert!(!e.path.is_empty() && !e.message.is_empty(), "{e}");
            return;
        }
    };
    let encoded = serde_json::to_value(&cluster).expect("a decoded cluster serialises");
    let again: Cluster = karmada_api::from_json_value(encoded)
        .unwrap_or_else(|e| panic!("re-encoded cluster refused: {e}"));
    assert_eq!(
        (&again.metadata, &again.spec, &again.status),
        (&cluster.metadata, &cluster.spec, &cluster.status),
        "decode(encode(c)) != c"
    );
    let _ = (cluster.name(), cluster.is_terminating());

    let warm = &*WARM;
    assert_eq!(
        estimates(&warm.estimator, &cluster, warm),
        estimates(&GeneralEstimator::new(true), &cluster, warm),
        "memoised estimates differ from fresh ones"
    );
    let _ = general::model_nodes(&cluster);
    if let Some(rs) = cluster
        .status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
    {
        let _ = general::allowed_pods(rs);
        let _ = general::max_replicas_by_summary(rs, &warm.requirements);
    }

    let snapshot = || Snapshot::from_clusters([cluster.clone(), neighbour()]);
    let first = placements(&warm.scheduler, &snapshot(), warm);
    assert_eq!(
        first,
        placements(&scheduler(), &snapshot(), warm),
        "memoised placements differ from fresh ones"
    );
}

fuzz_target!(|data: &[u8]| {
    if let Ok(raw) = serde_json::from_slice::<Value>(data) {
        check(raw);
    } else if let Ok(text) = std::str::from_utf8(data) {
        // `simulate` reads cluster files as YAML through the same typed decoder.
        let _ = karmada_api::from_yaml_str::<Cluster>(text);
    }
});
