//! Member-cluster workloads as a karmada-scheduler-estimator sees them, made by hand: the
//! member clusters of the local control plane run no controller manager, kubelet or
//! scheduler, so a Deployment's ReplicaSet and Pods (and the Pods' scheduling conditions) are
//! written directly.
//!
//! The estimator counts a Deployment's unschedulable replicas from the Pods of its newest
//! ReplicaSet (owned by the Deployment, same template) whose `PodScheduled` condition is
//! `False` with reason `Unschedulable` since longer than the threshold asked.

use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use kube::Client;
use serde_json::{Value, json};

use crate::apply_value;

/// One Pod of [`deployment_with_pods`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Not schedulable since this long.
    UnschedulableFor(Duration),
    /// Scheduled (and so not counted).
    Scheduled,
}

fn rfc3339(ago: Duration) -> String {
    let t = SystemTime::now()
        .checked_sub(ago)
        .unwrap_or(SystemTime::UNIX_EPOCH)
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    k8s_openapi::jiff::Timestamp::from_second(t)
        .map(|ts| ts.to_string())
        .unwrap_or_default()
}

fn uid_of(o: &kube::api::DynamicObject) -> anyhow::Result<String> {
    o.metadata.uid.clone().context("object without uid")
}

/// Creates (or updates) in the member cluster behind `client`: the namespace and its
/// `default` ServiceAccount, a Deployment `name` (selector `app=<name>`), its ReplicaSet and
/// one Pod per entry of `pods`, in that state. Returns the Deployment's UID.
pub async fn deployment_with_pods(
    client: &Client,
    namespace: &str,
    name: &str,
    pods: &[PodState],
) -> anyhow::Result<String> {
    apply_value(
        client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await?;
    apply_value(
        client,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": namespace}}),
    )
    .await?;
    let labels = json!({"app": name});
    let template = json!({
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    });
    let deployment = apply_value(
        client,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": pods.len(), "selector": {"matchLabels": labels},
                         "template": template}}),
    )
    .await?;
    let deployment_uid = uid_of(&deployment)?;
    let owner = |kind: &str, name: &str, uid: &str| {
        json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid,
                "controller": true, "blockOwnerDeletion": true}])
    };
    let rs_name = format!("{name}-rs");
    let replica_set = apply_value(
        client,
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": rs_name, "namespace": namespace, "labels": labels,
                             "ownerReferences": owner("Deployment", name, &deployment_uid)},
                "spec": {"replicas": pods.len(), "selector": {"matchLabels": labels},
                         "template": template}}),
    )
    .await?;
    let rs_uid = uid_of(&replica_set)?;
    for (i, state) in pods.iter().enumerate() {
        let condition = match state {
            PodState::UnschedulableFor(age) => json!({
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient cpu.",
                "lastTransitionTime": rfc3339(*age)}),
            PodState::Scheduled => json!({
                "type": "PodScheduled", "status": "True",
                "lastTransitionTime": rfc3339(Duration::from_secs(60))}),
        };
        let mut pod: Value = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{rs_name}-{i}"), "namespace": namespace,
                         "labels": labels, "ownerReferences": owner("ReplicaSet", &rs_name, &rs_uid)},
            "spec": template["spec"].clone(),
            "status": {"phase": "Pending", "conditions": [condition]}
        });
        if *state == PodState::Scheduled {
            pod["status"]["phase"] = json!("Running");
        }
        apply_value(client, &pod)
            .await
            .with_context(|| format!("creating pod {i} of {namespace}/{name}"))?;
    }
    Ok(deployment_uid)
}
