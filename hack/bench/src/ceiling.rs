//! The apiserver's write ceiling: how many status merge-PATCHes of bindings per second it
//! sustains for a tight client (no client-side rate limit, many requests in flight). Each
//! patch changes the object, so each is a real etcd write and a watch event, as a scheduler's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::time::Instant;

use crate::observe::rb_resource;

/// Scheduler name that no scheduler answers to.
pub const NOBODY: &str = "bench-nobody";

/// Patches/s over `duration` with `concurrency` requests in flight, each task patching its own
/// scratch binding in `namespace`.
pub async fn measure(
    client: &Client,
    namespace: &str,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<f64> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &rb_resource());
    let mut names = Vec::new();
    for i in 0..concurrency {
        let name = format!("ceiling-{concurrency}-{i}");
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"propagationpolicy.karmada.io/permanent-id": "ceiling"}},
            "spec": {"schedulerName": NOBODY,
                     "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace,
                                  "name": "ceiling", "uid": "00000000-0000-4000-8000-000000000000"}}
        }))?;
        api.create(&PostParams::default(), &obj).await?;
        names.push(name);
    }
    let count = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + duration;
    let mut tasks = Vec::new();
    for name in names {
        let api = api.clone();
        let count = count.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                n += 1;
                let patch = json!({"status": {"conditions": [{
                    "type": "Scheduled", "status": "True", "reason": "Success",
                    "message": format!("bench write {n}"),
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
                if api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .is_ok()
                {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(count.load(Ordering::Relaxed) as f64 / elapsed)
}
