//! Decode/encode round trips: no field lost or renamed, unknown fields kept, enums strict.

use std::path::{Path, PathBuf};

use karmada_api::{Cluster, ClusterResourceBinding, DecodeError, ResourceBinding};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Drops what the Go encoder omits too (nulls and empty collections), so that the two sides
/// compare on content. Quantities written as YAML numbers come back as strings.
fn normalise(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Object(m) if m.is_empty() => None,
        Value::Array(a) => Some(Value::Array(a.into_iter().filter_map(normalise).collect())),
        Value::Object(m) => {
            let m: serde_json::Map<_, _> = m
                .into_iter()
                .filter_map(|(k, v)| normalise(v).map(|v| (k, v)))
                .collect();
            if m.is_empty() {
                None
            } else {
                Some(Value::Object(m))
            }
        }
        other => Some(other),
    }
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| {
            let v: Value = serde::Deserialize::deserialize(d).unwrap();
            v
        })
        .collect()
}

/// Decodes `doc` as the kind it names, re-encodes it, and returns the re-encoded value.
fn roundtrip(doc: &Value) -> Value {
    let kind = doc["kind"].as_str().unwrap_or_default();
    match kind {
        "ResourceBinding" => {
            let rb: ResourceBinding = karmada_api::from_json_value(doc.clone()).unwrap();
            serde_json::to_value(rb).unwrap()
        }
        "ClusterResourceBinding" => {
            let crb: ClusterResourceBinding = karmada_api::from_json_value(doc.clone()).unwrap();
            serde_json::to_value(crb).unwrap()
        }
        "Cluster" => {
            let c: Cluster = karmada_api::from_json_value(doc.clone()).unwrap();
            serde_json::to_value(c).unwrap()
        }
        other => panic!("unexpected kind {other}"),
    }
}

fn assert_roundtrip(doc: &Value, origin: &str) {
    let back = roundtrip(doc);
    pretty_assertions::assert_eq!(
        normalise(doc.clone()),
        normalise(back),
        "{origin}: {} {} changed in a round trip",
        doc["kind"],
        doc["metadata"]["name"]
    );
}

#[test]
fn realistic_objects_roundtrip() {
    let mut n = 0;
    for f in [
        "rb-full.yaml",
        "rb-affinities.yaml",
        "crb-dynamic.yaml",
        "cluster-full.yaml",
    ] {
        for doc in documents(&data(f)) {
            assert_roundtrip(&doc, f);
            n += 1;
        }
    }
    assert_eq!(n, 5);
}

#[test]
fn conformance_examples_roundtrip() {
    let dir = repo("tests/conformance/examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let vector: Value = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for obj in vector["objects"].as_array().unwrap() {
            assert_roundtrip(obj, &path.display().to_string());
            n += 1;
        }
    }
    assert!(n >= 15, "only {n} objects found under {}", dir.display());
}

#[test]
fn every_field_of_the_full_binding_is_typed() {
    // The realistic binding must not rely on the catch-all maps: everything in it is a field
    // of the CRD, so each `extra` map stays empty.
    let doc = &documents(&data("rb-full.yaml"))[0];
    let rb: ResourceBinding = karmada_api::from_json_value(doc.clone()).unwrap();
    assert!(rb.spec.extra.is_empty(), "{:?}", rb.spec.extra.keys());
    assert!(rb.status.extra.is_empty(), "{:?}", rb.status.extra.keys());
    let p = rb.spec.placement.as_ref().unwrap();
    assert!(p.extra.is_empty());
    assert_eq!(p.spread_constraints.len(), 3);
    assert_eq!(rb.status.scheduler_observed_affinity_name, "primary");
    assert_eq!(rb.spec.resource.uid, "7c5f1a6e-2d3b-4c8e-9f10-1a2b3c4d5e6f");
}

#[test]
fn unknown_fields_survive() {
    let mut doc = documents(&data("rb-full.yaml"))[0].clone();
    doc["spec"]["futureField"] = serde_json::json!({"a": [1, 2]});
    doc["spec"]["placement"]["futurePlacementKnob"] = Value::String("on".into());
    doc["spec"]["placement"]["clusterAffinity"]["futureSelector"] = serde_json::json!(["x"]);
    doc["spec"]["clusters"][0]["components"] = serde_json::json!([{"name": "web", "replicas": 1}]);
    doc["spec"]["gracefulEvictionTasks"][0]["futureTaskField"] = Value::Bool(true);
    doc["status"]["futureStatus"] = serde_json::json!({"phase": "x"});
    let back = roundtrip(&doc);
    assert_eq!(back["spec"]["futureField"], doc["spec"]["futureField"]);
    assert_eq!(back["spec"]["placement"]["futurePlacementKnob"], "on");
    assert_eq!(
        back["spec"]["placement"]["clusterAffinity"]["futureSelector"][0],
        "x"
    );
    assert_eq!(back["spec"]["clusters"][0]["components"][0]["name"], "web");
    assert_eq!(
        back["spec"]["gracefulEvictionTasks"][0]["futureTaskField"],
        true
    );
    assert_eq!(back["status"]["futureStatus"]["phase"], "x");
    assert_roundtrip(&doc, "with unknown fields");

    let mut cluster = documents(&data("cluster-full.yaml"))[0].clone();
    cluster["spec"]["futureSpec"] = Value::from(1);
    cluster["status"]["futureStatus"] = Value::from("y");
    assert_roundtrip(&cluster, "cluster with unknown fields");
}

fn rb_with_placement(placement: Value) -> Value {
    serde_json::json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
            "placement": placement,
        }
    })
}

fn decode_rb(v: Value) -> Result<ResourceBinding, DecodeError> {
    karmada_api::from_json_value(v)
}

#[test]
fn every_placement_enum_value_is_accepted() {
    for t in ["Duplicated", "Divided"] {
        for p in ["Aggregated", "Weighted"] {
            let rb = decode_rb(rb_with_placement(serde_json::json!({
                "replicaScheduling": {
                    "replicaSchedulingType": t,
                    "replicaDivisionPreference": p,
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}
                }
            })))
            .unwrap();
            let s = rb.spec.placement.unwrap().replica_scheduling.unwrap();
            assert_eq!(s.replica_scheduling_type.unwrap().as_str(), t);
            assert_eq!(s.replica_division_preference.unwrap().as_str(), p);
        }
    }
    for f in ["cluster", "region", "zone", "provider"] {
        let rb = decode_rb(rb_with_placement(serde_json::json!({
            "spreadConstraints": [{"spreadByField": f, "minGroups": 1}]
        })))
        .unwrap();
        let sc = &rb.spec.placement.unwrap().spread_constraints[0];
        assert_eq!(sc.spread_by_field.unwrap().as_str(), f);
    }
}

#[test]
fn unknown_enum_values_name_the_field() {
    let cases = [
        (
            serde_json::json!({"replicaScheduling": {"replicaSchedulingType": "Spread"}}),
            "spec.placement.replicaScheduling.replicaSchedulingType",
            "Spread",
        ),
        (
            serde_json::json!({"replicaScheduling": {"replicaDivisionPreference": "Balanced"}}),
            "spec.placement.replicaScheduling.replicaDivisionPreference",
            "Balanced",
        ),
        (
            serde_json::json!({"replicaScheduling": {"weightPreference": {"dynamicWeight": "Cpu"}}}),
            "spec.placement.replicaScheduling.weightPreference.dynamicWeight",
            "Cpu",
        ),
        (
            serde_json::json!({"spreadConstraints": [{"spreadByField": "rack"}]}),
            "spec.placement.spreadConstraints[0].spreadByField",
            "rack",
        ),
    ];
    for (placement, path, value) in cases {
        let err = decode_rb(rb_with_placement(placement)).unwrap_err();
        assert_eq!(err.path, path, "{err}");
        assert!(err.to_string().contains(value), "{err}");
        assert!(err.to_string().starts_with(path), "{err}");
    }
}

#[test]
fn wrong_types_name_the_field() {
    let cases = [
        (
            serde_json::json!({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": "two"}]}),
            "spec.placement.spreadConstraints[0].maxGroups",
        ),
        (
            serde_json::json!({"replicaScheduling": {"weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["a"]}, "weight": "heavy"}]}}}),
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
        ),
        (
            serde_json::json!({"clusterAffinity": {"clusterNames": "member1"}}),
            "spec.placement.clusterAffinity.clusterNames",
        ),
        (
            serde_json::json!({"clusterTolerations": {"key": "a"}}),
            "spec.placement.clusterTolerations",
        ),
    ];
    for (placement, path) in cases {
        let err = decode_rb(rb_with_placement(placement)).unwrap_err();
        assert_eq!(err.path, path, "{err}");
    }
    let mut bad = rb_with_placement(serde_json::json!({}));
    bad["spec"]["replicas"] = Value::from("three");
    assert_eq!(decode_rb(bad).unwrap_err().path, "spec.replicas");
}

#[test]
fn absent_and_empty_cluster_affinities_differ() {
    let none = decode_rb(rb_with_placement(serde_json::json!({}))).unwrap();
    assert!(none.spec.placement.unwrap().cluster_affinities.is_none());
    let empty = decode_rb(rb_with_placement(
        serde_json::json!({"clusterAffinities": []}),
    ))
    .unwrap();
    assert_eq!(
        empty.spec.placement.unwrap().cluster_affinities,
        Some(vec![])
    );
}

#[test]
fn crd_is_fresh() {
    let committed =
        std::fs::read_to_string(repo("manifests/crds/cluster.karmada.io_clusters.yaml"))
            .expect("manifests/crds/cluster.karmada.io_clusters.yaml is missing");
    assert!(
        committed == karmada_api::cluster::crd_yaml(),
        "manifests/crds/cluster.karmada.io_clusters.yaml is stale: regenerate it with \
         `cargo run -q -p karmada-api --example gen-crd > manifests/crds/cluster.karmada.io_clusters.yaml`"
    );
}

/// `spec.clusters` entries are decoded by hand (compact in memory): known fields typed, the
/// rest kept, errors with their path.
#[test]
fn target_cluster_entries() {
    let mut doc = rb_with_placement(serde_json::json!({}));
    doc["spec"]["clusters"] = serde_json::json!([
        {"name": "m1", "replicas": 2},
        {"name": "m2"},
        {"replicas": 1, "name": "m3", "future": {"k": "v"}}
    ]);
    let rb = decode_rb(doc.clone()).unwrap();
    let c = &rb.spec.clusters;
    assert_eq!((c[0].name.as_str(), c[0].replicas), ("m1", 2));
    assert!(c[0].extra.is_none() && c[1].extra.is_none());
    assert_eq!(c[1].replicas, 0);
    assert_eq!(c[2].extra.as_ref().unwrap()["future"]["k"], "v");
    let back = serde_json::to_value(&rb).unwrap();
    assert_eq!(
        back["spec"]["clusters"],
        serde_json::json!([
            {"name": "m1", "replicas": 2},
            {"name": "m2"},
            {"name": "m3", "replicas": 1, "future": {"k": "v"}}
        ])
    );

    doc["spec"]["clusters"] =
        serde_json::json!([{"name": "m1"}, {"name": "m2", "replicas": "two"}]);
    let err = decode_rb(doc.clone()).unwrap_err().to_string();
    assert!(err.starts_with("spec.clusters[1].replicas: "), "{err}");
    doc["spec"]["clusters"] = serde_json::json!([{"replicas": 1}]);
    let err = decode_rb(doc).unwrap_err().to_string();
    assert!(err.contains("missing field `name`"), "{err}");
}

/// Objects of both API versions decode: a v1.19 `spec.clusters[].components` is typed and
/// written back as it came (omitted when absent, as v1.18 objects have it), and every
/// `purgeMode` of either version (v1.18's deprecated `Immediately`/`Graciously`, which v1.19's
/// CRD no longer admits but etcd may still hold) is kept as written.
#[test]
fn v1_18_and_v1_19_objects_decode() {
    let mut doc = rb_with_placement(serde_json::json!({}));
    doc["spec"]["clusters"] = serde_json::json!([
        {"name": "m1", "components": [
            {"name": "jobmanager", "replicas": 1},
            {"name": "taskmanager", "replicas": 0}
        ]},
        {"name": "m2", "replicas": 2}
    ]);
    doc["spec"]["gracefulEvictionTasks"] = serde_json::json!([
        {"fromCluster": "a", "purgeMode": "Immediately", "reason": "r", "producer": "TaintManager"},
        {"fromCluster": "b", "purgeMode": "Graciously", "reason": "r", "producer": "TaintManager"},
        {"fromCluster": "c", "purgeMode": "Directly", "reason": "r", "producer": "TaintManager"},
        {"fromCluster": "d", "purgeMode": "Gracefully", "reason": "r", "producer": "TaintManager"},
        {"fromCluster": "e", "purgeMode": "Never", "reason": "r", "producer": "TaintManager"}
    ]);
    let rb = decode_rb(doc.clone()).unwrap();
    let c = &rb.spec.clusters;
    let components = c[0].components();
    assert_eq!(components.len(), 2);
    assert_eq!(
        (components[1].name.as_str(), components[1].replicas),
        ("taskmanager", 0)
    );
    assert!(c[1].components().is_empty() && c[1].extra.is_none());
    let modes: Vec<&str> = rb
        .spec
        .graceful_eviction_tasks
        .iter()
        .map(|t| t.purge_mode.as_str())
        .collect();
    assert_eq!(
        modes,
        [
            "Immediately",
            "Graciously",
            "Directly",
            "Gracefully",
            "Never"
        ]
    );
    let back = serde_json::to_value(&rb).unwrap();
    assert_eq!(back["spec"]["clusters"], doc["spec"]["clusters"]);
    assert_eq!(
        back["spec"]["gracefulEvictionTasks"],
        doc["spec"]["gracefulEvictionTasks"]
    );

    doc["spec"]["clusters"] = serde_json::json!([{"name": "m1", "components": [{"replicas": 1}]}]);
    let err = decode_rb(doc).unwrap_err().to_string();
    assert!(err.starts_with("spec.clusters[0].components"), "{err}");
}
