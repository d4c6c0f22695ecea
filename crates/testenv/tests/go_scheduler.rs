//! Runs the Go karmada-scheduler (v1.18.2) against the local control plane and
//! checks that it fills `spec.clusters` of ResourceBindings: one Divided
//! binding over the two real members (accurate estimator enabled, answered by
//! the real Go estimators), and one Duplicated binding over a set of Clusters
//! the test applies itself.
//!
//! Skipped (with a message) when the Go binaries are absent and KARMADA_E2E is
//! unset; fails instead when KARMADA_E2E=1.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use testenv::{TestEnv, tools_or_skip, wait_for};

/// A Cluster with the status a cluster-status controller would report.
fn extra_cluster(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": {"tier": "edge"}},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1", "provider": "local",
                 "region": "edge", "zones": ["edge-1"]},
        "status": {
            "kubernetesVersion": "v1.35.3",
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
                {"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]}
            ],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                            "message": "cluster is healthy and ready to accept workloads",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "nodeSummary": {"totalNum": 1, "readyNum": 1},
            "resourceSummary": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocated": {"cpu": "0", "memory": "0", "pods": "0"}
            }
        }
    })
}

fn binding(name: &str, replicas: i32, placement: Value) -> Value {
    json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": name,
            "namespace": "default",
            // the Go scheduler only handles bindings with one of these labels
            "labels": {"propagationpolicy.karmada.io/permanent-id": format!("{name}-permanent-id")}
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": name, "uid": format!("{name}-uid")},
            "replicas": replicas,
            "replicaRequirements": {"resourceRequest": {"cpu": "500m", "memory": "512Mi"}},
            "placement": placement
        }
    })
}

fn target_clusters(rb: &DynamicObject) -> Option<BTreeMap<String, i64>> {
    let clusters = rb.data.pointer("/spec/clusters")?.as_array()?;
    if clusters.is_empty() {
        return None;
    }
    Some(
        clusters
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    c["replicas"].as_i64().unwrap_or(0),
                )
            })
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_scheduler_fills_spec_clusters() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("go_scheduler_fills_spec_clusters") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let client = env.client().await?;

    let mut scheduler = env.spawn_go_scheduler(&["--enable-scheduler-estimator=true", "--v=4"])?;
    scheduler.wait_healthy(Duration::from_secs(60)).await?;

    // A set of Clusters of our own (no estimator behind them) ...
    for (name, cpu, mem) in [("edge-1", "8", "16Gi"), ("edge-2", "4", "8Gi")] {
        env.apply_json(&extra_cluster(name, cpu, mem)).await?;
    }
    // ... and the bindings.
    env.apply_json(&binding(
        "divided",
        6,
        json!({
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "replicaScheduling": {"replicaSchedulingType": "Divided",
                                  "replicaDivisionPreference": "Weighted",
                                  "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
        }),
    ))
    .await?;
    env.apply_json(&binding(
        "duplicated",
        2,
        json!({
            "clusterAffinity": {"labelSelector": {"matchLabels": {"tier": "edge"}}},
            "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
        }),
    ))
    .await?;

    let rb_ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
    ));
    let rbs: Api<DynamicObject> = Api::namespaced_with(client, "default", &rb_ar);

    let wait = |name: &'static str| {
        let rbs = rbs.clone();
        async move {
            wait_for(
                &format!("spec.clusters of ResourceBinding default/{name}"),
                Duration::from_secs(90),
                || {
                    let rbs = rbs.clone();
                    async move { Ok(target_clusters(&rbs.get(name).await?)) }
                },
            )
            .await
        }
    };

    let divided = match wait("divided").await {
        Ok(v) => v,
        Err(e) => panic!("{e:#}\nscheduler log:\n{}", scheduler.log_tail(60)),
    };
    println!("divided -> {divided:?}");
    assert_eq!(divided.values().sum::<i64>(), 6, "{divided:?}");
    assert!(
        divided.keys().all(|k| k == "member1" || k == "member2"),
        "{divided:?}"
    );
    // member2's nodes are twice as large, so both get a share.
    assert_eq!(divided.len(), 2, "{divided:?}");

    let duplicated = match wait("duplicated").await {
        Ok(v) => v,
        Err(e) => panic!("{e:#}\nscheduler log:\n{}", scheduler.log_tail(60)),
    };
    println!("duplicated -> {duplicated:?}");
    assert_eq!(
        duplicated,
        BTreeMap::from([("edge-1".to_string(), 2), ("edge-2".to_string(), 2)])
    );

    // The Scheduled condition was written too.
    let rb = rbs.get("divided").await?;
    let scheduled = rb.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Scheduled" && c["status"] == "True");
    assert!(scheduled, "Scheduled condition: {}", rb.data["status"]);

    // The accurate estimator was really asked: the Go scheduler resolved each
    // member's ExternalName Service and called its Go estimator.
    for m in env.members() {
        let log = env.log_tail(&format!("{}-estimator", m.name), 500);
        assert!(
            log.contains("Finish calculating cluster available replicas"),
            "{} estimator was not called; its log:\n{log}\nscheduler log:\n{}",
            m.name,
            scheduler.log_tail(60)
        );
    }

    assert!(scheduler.try_wait()?.is_none(), "scheduler still running");
    drop(scheduler);
    env.stop();
    Ok(())
}
