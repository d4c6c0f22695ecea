//! ResourceBinding / ClusterResourceBinding decoding as the scheduler does it
//! (`karmada_scheduler::model::binding::Binding::decode`, the store's `decode_cached`, the
//! YAML decoder `simulate` reads files with), then one scheduling pass of the decoded binding
//! against a fixed set of clusters.
//!
//! Input: a JSON object (a binding), or YAML text. The text also goes the watch's way
//! (`RawObject`, then a typed decode from the text), which takes any nesting depth.
//!
//! Checks besides "no panic":
//! - a decoded binding encodes (`to_json`) to a document that decodes to the same binding;
//! - a refused binding names the failing field and keeps the identity that could be read;
//! - scheduling is deterministic and the estimator memos do not change answers: a pass with
//!   a scheduler and snapshot that have seen every earlier input gives the same outcome as a
//!   pass with fresh ones.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use std::sync::LazyLock;

use karmada_api::Cluster;
use karmada_scheduler::model::binding::{Binding, BindingKind, key_of};
use karmada_scheduler::store::{Cached, decode_cached};
use libfuzzer_sys::fuzz_target;
use scheduler_core::schedule::{BindingInput, ScheduleConfig, Scheduler};
use scheduler_core::snapshot::Snapshot;
use serde_json::{Value, json};

fn clusters() -> Vec<Cluster> {
    let enablements = json!([
        {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
        {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]}
    ]);
    let ready = json!([{"type": "Ready", "status": "True", "reason": "ClusterReady",
        "message": "ready", "lastTransitionTime": "2024-01-01T00:00:00Z"}]);
    let docs = [
        json!({
            "metadata": {"name": "member1", "labels": {"env": "prod"}},
            "spec": {"syncMode": "Push", "provider": "aws", "region": "eu-west-1",
                     "zones": ["eu-west-1a", "eu-west-1b"]},
            "status": {"apiEnablements": enablements, "conditions": ready,
                "resourceSummary": {
                    "allocatable": {"cpu": "12", "memory": "48Gi", "pods": "330"},
                    "allocating": {"cpu": "500m"},
                    "allocated": {"cpu": "2500m", "memory": "6Gi", "pods": "21"}}}
        }),
        json!({
            "metadata": {"name": "member2", "labels": {"env": "dev"}},
            "spec": {"syncMode": "Pull", "provider": "gcp", "region": "us-east-1",
                     "zones": ["us-east-1a"],
                     "taints": [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}],
                     "resourceModels": [
                        {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "4"},
                                                {"name": "memory", "min": "0", "max": "16Gi"}]},
                        {"grade": 1, "ranges": [{"name": "cpu", "min": "4", "max": "8"},
                                                {"name": "memory", "min": "16Gi", "max": "64Gi"}]}]},
            "status": {"apiEnablements": enablements, "conditions": ready,
                "resourceSummary": {
                    "allocatable": {"cpu": "40", "memory": "160Gi", "pods": "440",
                                    "nvidia.com/gpu": "4"},
                    "allocatableModelings": [{"grade": 0, "count": 2}, {"grade": 1, "count": 3}]}}
        }),
        json!({
            "metadata": {"name": "member3"},
            "spec": {"syncMode": "Push", "region": "eu-west-1", "zones": ["eu-west-1c"]},
            "status": {"apiEnablements": enablements, "conditions": ready,
                "resourceSummary": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "20"}}}
        }),
    ];
    docs.into_iter()
        .map(|d| karmada_api::from_json_value(d).expect("a valid cluster"))
        .collect()
}

fn scheduler() -> Scheduler {
    let general = scheduler_core::general::GeneralEstimator::new(true);
    Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default())
        .expect("the default plugins")
        .with_estimator(std::sync::Arc::new(general))
}

/// Scheduler and snapshot that live across inputs, as in the daemon.
static WARM: LazyLock<(Scheduler, Snapshot)> =
    LazyLock::new(|| (scheduler(), Snapshot::from_clusters(clusters())));

fn outcome(scheduler: &Scheduler, snapshot: &Snapshot, binding: &Binding) -> String {
    let input = BindingInput {
        snapshot,
        spec: &binding.spec,
        status: &binding.status,
        workload_index: None,
        assumed: None,
    };
    let out = futures::executor::block_on(scheduler.schedule_binding(input, false));
    format!(
        "{:?} {:?} {:?}",
        out.result, out.affinity_name, out.failed_terms
    )
}

fn check(kind: BindingKind, raw: Value) {
    match Binding::decode(kind, &raw) {
        Ok(binding) => {
            let again = Binding::decode(kind, &binding.to_json())
                .unwrap_or_else(|m| panic!("re-encoded binding refused: {}", m.error));
            assert_eq!(again, binding, "decode(encode(b)) != b");
            let _ = (
                binding.key().describe(),
                binding.passes_filter("default-scheduler"),
                binding.applied_placement(),
                binding.result_generation(),
                binding.spec.is_workload(),
            );
            let (scheduler, snapshot) = &*WARM;
            let warm = outcome(scheduler, snapshot, &binding);
            let fresh = outcome(
                &self::scheduler(),
                &Snapshot::from_clusters(clusters()),
                &binding,
            );
            assert_eq!(warm, fresh, "memoised answers differ from fresh ones");
        }
        Err(malformed) => {
            // `path: message`, the path naming the field ("." for the document itself).
            assert!(
                malformed.error.contains(": "),
                "no field path in {:?}",
                malformed.error
            );
            assert_eq!(malformed.key, key_of(kind, &malformed.metadata));
        }
    }
    let text = raw.to_string();
    let lenient =
        karmada_api::shallow_value(&text, karmada_api::SHALLOW_DEPTH).expect("a value's own text");
    match decode_cached(kind, &text, &lenient) {
        Cached::Ok(b) => assert_eq!(b.kind, kind),
        Cached::Malformed(m) => assert!(!m.error.is_empty()),
    }
}

/// The path of the watch: any text the API server could send as an object, nested to any
/// depth, becomes a raw object (or a clear error), and its binding decodes from the text as
/// it decodes from a value wherever a value can hold it.
fn check_text(kind: BindingKind, text: &str) {
    let Ok(object) = component_base::watch::RawObject::from_json(text) else {
        return;
    };
    let decoded = Binding::decode_text(kind, object.json());
    if let Ok(value) = serde_json::from_str::<Value>(object.json()) {
        assert!(
            value.pointer("/metadata/managedFields").is_none(),
            "managed fields kept"
        );
        match (&decoded, Binding::decode(kind, &value)) {
            // Member statuses keep their text as sent: compared as values.
            (Ok(a), Ok(b)) => assert_eq!(
                a.to_json(),
                b.to_json(),
                "text and value decode differently"
            ),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("text and value disagree: {:?} / {:?}", a.is_ok(), b.is_ok()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        check_text(BindingKind::ResourceBinding, text);
    }
    if let Ok(raw) = serde_json::from_slice::<Value>(data) {
        check(BindingKind::ResourceBinding, raw.clone());
        check(BindingKind::ClusterResourceBinding, raw);
    } else if let Ok(text) = std::str::from_utf8(data) {
        // `simulate` reads binding files as YAML through the same typed decoder.
        let _ = karmada_api::from_yaml_str::<karmada_api::ResourceBinding>(text);
        let _ = karmada_api::from_yaml_str::<karmada_api::ClusterResourceBinding>(text);
    }
});
