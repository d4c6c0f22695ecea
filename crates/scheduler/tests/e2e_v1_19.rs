//! End to end on a real control plane serving Karmada v1.19's CRDs (`manifests/karmada-crds`):
//! the daemon at its default flags (v1.19.0's: the priority queue) does what v1.19.0 does where
//! v1.18.2 differed, beside the Go v1.18.2 scheduler for contrast:
//!
//! - a WorkloadRebalancer-style reschedule (`spec.rescheduleTriggeredAt` later than
//!   `status.lastScheduledTime`) of bindings last placed by their second `clusterAffinities`
//!   term starts again at the first term (ours: the first term's cluster; Go v1.18.2: stays;
//!   ours with `--feature-gates=PriorityBasedScheduling=false` would stay too);
//! - with `MultiplePodTemplatesScheduling`, a two-component binding placed on one cluster gets
//!   `spec.clusters[].components`, which the v1.19 CRD keeps;
//! - bindings carrying v1.19's `purgeMode` values are scheduled, the evicted cluster avoided.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testenv::{TestEnv, tools_or_skip, wait_for};

use common::*;

fn affinity_placement() -> Value {
    json!({
        "clusterAffinities": [
            {"affinityName": "primary", "labelSelector": {"matchLabels": {"v119-test": "primary"}}},
            {"affinityName": "backup", "clusterNames": ["member2"]}
        ],
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
    })
}

fn names(rb: &kube::api::DynamicObject) -> Vec<String> {
    clusters_of(rb)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_does_what_v1_19_does() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("the_daemon_does_what_v1_19_does") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    let mut go = env.spawn_go_scheduler(&["--scheduler-name=go-scheduler"])?;
    go.wait_healthy(std::time::Duration::from_secs(60)).await?;
    // Default flags, plus the alpha gate that the component result needs.
    let ours = OurScheduler::start(
        &env,
        &["--feature-gates=MultiplePodTemplatesScheduling=true"],
    )
    .await?;
    let rbs = rb_api(&env).await?;
    let crbs = crb_api(&env).await?;
    let clusters = cluster_api(&env).await?;

    // 1. Placed by the second term: nothing matches the first one yet.
    for (name, scheduler) in [
        ("rebalanced-rs", "default-scheduler"),
        ("rebalanced-go", "go-scheduler"),
    ] {
        rbs.create(
            &PostParams::default(),
            &serde_json::from_value(binding(name, 1, affinity_placement(), scheduler))?,
        )
        .await?;
    }
    let mut crb = cluster_binding("rebalanced-crb", affinity_placement(), "default-scheduler");
    crb["spec"]["replicas"] = json!(0);
    crbs.create(&PostParams::default(), &serde_json::from_value(crb)?)
        .await?;
    for (api, name) in [
        (&rbs, "rebalanced-rs"),
        (&rbs, "rebalanced-go"),
        (&crbs, "rebalanced-crb"),
    ] {
        let b = wait_scheduled(api, name)
            .await
            .map_err(|e| ours.explain(e))?;
        assert_eq!(names(&b), ["member2"], "{name}");
        assert_eq!(
            b.data.pointer("/status/schedulerObservingAffinityName"),
            Some(&json!("backup")),
            "{name}"
        );
    }
    // member1 now matches the first term; a cluster change alone resumes at the observed term.
    clusters
        .patch(
            "member1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"v119-test": "primary"}}})),
        )
        .await?;
    // The rebalancer's request: a trigger later than the last schedule (second precision),
    // whatever the label change led to.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    for (api, name) in [
        (&rbs, "rebalanced-rs"),
        (&rbs, "rebalanced-go"),
        (&crbs, "rebalanced-crb"),
    ] {
        patch_spec(api, name, json!({"rescheduleTriggeredAt": now})).await?;
    }
    for (api, name, want) in [
        (&rbs, "rebalanced-rs", "member1"),
        (&crbs, "rebalanced-crb", "member1"),
        (&rbs, "rebalanced-go", "member2"),
    ] {
        let b = wait_for(&format!("{name} rescheduled"), WAIT, || async {
            let b = api.get(name).await?;
            let last = b
                .data
                .pointer("/status/lastScheduledTime")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            Ok((last >= now).then_some(b))
        })
        .await
        .map_err(|e| ours.explain(e))?;
        assert_eq!(
            names(&b),
            [want],
            "{name} (v1.19: first term again; Go v1.18.2: stays)"
        );
    }

    // 2. Two components on exactly one cluster.
    let mut multi = binding(
        "flink-rs",
        0,
        json!({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
               "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        "default-scheduler",
    );
    let spec = multi["spec"].as_object_mut().expect("spec");
    spec.remove("replicas");
    spec.remove("replicaRequirements");
    spec.insert(
        "components".into(),
        json!([
            {"name": "jobmanager", "replicas": 1,
             "replicaRequirements": {"resourceRequest": {"cpu": "100m", "memory": "128Mi"}}},
            {"name": "taskmanager", "replicas": 2,
             "replicaRequirements": {"resourceRequest": {"cpu": "100m", "memory": "128Mi"}}}
        ]),
    );
    rbs.create(&PostParams::default(), &serde_json::from_value(multi)?)
        .await?;
    let b = wait_scheduled(&rbs, "flink-rs")
        .await
        .map_err(|e| ours.explain(e))?;
    let targets = clusters_of(&b);
    let targets = targets.as_array().expect("spec.clusters");
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(
        targets[0]["components"],
        json!([{"name": "jobmanager", "replicas": 1}, {"name": "taskmanager", "replicas": 2}]),
        "{targets:?}"
    );

    // 3. v1.19's purge modes: scheduled, the cluster being evicted from is avoided.
    for (i, mode) in ["Directly", "Gracefully", "Never"].iter().enumerate() {
        let name = format!("purge-{}", mode.to_lowercase());
        let mut b = binding(
            &name,
            1,
            json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                   "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
            "default-scheduler",
        );
        b["spec"]["gracefulEvictionTasks"] = json!([{
            "fromCluster": "member1", "purgeMode": mode, "reason": "TaintUntolerated",
            "producer": "TaintManager", "replicas": i
        }]);
        rbs.create(&PostParams::default(), &serde_json::from_value(b)?)
            .await?;
        let b = wait_scheduled(&rbs, &name)
            .await
            .map_err(|e| ours.explain(e))?;
        assert_eq!(names(&b), ["member2"], "{name}");
    }

    ours.shutdown().await?;
    go.kill();
    Ok(())
}
