//! The apiserver's write ceiling: how many status merge-PATCHes of bindings per second it
//! sustains for a tight client (no client-side rate limit, many requests in flight). Each
//! patch changes the object, so each is a real etcd write and a watch event, as a scheduler's.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use estimator_client::pb::EstimatorClient;
use estimator_client::request::OBJECT_METADATA_KEY;
use estimator_client::transport::Channel;

use k8s_openapi::api::core::v1::{Event as KubeEvent, ObjectReference};
use karmada_api::policy::APPLIED_PLACEMENT_ANNOTATION;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testenv::estimator::{Call, PerCluster, bare_client};
use tokio::time::Instant;

use crate::jobs::{in_flight, normal_event};
use crate::observe::binding_api;
use crate::plane::{cpu_since, cpu_snapshot, log};
use crate::workload::BindingTemplate;

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
    let api = binding_api(client, Some(namespace));
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

/// What a scheduler wrote for one binding, to be written again by [`replay`].
pub struct BindingWrites {
    pub namespace: Option<String>,
    pub name: String,
    /// The binding as created (spec without placement result), scheduler `NOBODY`.
    pub create: Value,
    /// Merge patch of metadata and spec: the applied-placement annotation and `spec.clusters`.
    pub spec_patch: Value,
    /// Merge patch of the status subresource: conditions, generation, affinity name.
    pub status_patch: Value,
    /// Involved objects of the events (the binding and its template).
    pub events: Vec<ObjectReference>,
}

impl BindingWrites {
    /// The writes a scheduler made for `done` (the binding as it stands once scheduled),
    /// addressed to a fresh copy named `name`.
    pub fn from_scheduled(done: &Value, name: &str) -> BindingWrites {
        let namespace = done["metadata"]["namespace"].as_str().map(str::to_string);
        let mut create = json!({
            "apiVersion": done["apiVersion"], "kind": done["kind"],
            "metadata": {"name": name, "labels": done["metadata"]["labels"]},
            "spec": done["spec"].clone(),
        });
        if let Some(ns) = &namespace {
            create["metadata"]["namespace"] = json!(ns);
        }
        if let Some(spec) = create["spec"].as_object_mut() {
            spec.remove("clusters");
            spec.insert("schedulerName".into(), json!(NOBODY));
        }
        let annotation = done["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION].clone();
        let spec_patch = json!({
            "metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: annotation}},
            "spec": {"clusters": done["spec"]["clusters"]},
        });
        let mut status = done["status"].clone();
        if let Some(s) = status.as_object_mut() {
            s.retain(|k, _| {
                matches!(
                    k.as_str(),
                    "conditions"
                        | "schedulerObservedGeneration"
                        | "lastScheduledTime"
                        | "schedulerObservingAffinityName"
                )
            });
        }
        let binding_ref = ObjectReference {
            api_version: done["apiVersion"].as_str().map(str::to_string),
            kind: done["kind"].as_str().map(str::to_string),
            name: Some(name.to_string()),
            namespace: namespace.clone(),
            ..Default::default()
        };
        let r = &done["spec"]["resource"];
        let template_ref = ObjectReference {
            api_version: r["apiVersion"].as_str().map(str::to_string),
            kind: r["kind"].as_str().map(str::to_string),
            name: r["name"].as_str().map(str::to_string),
            namespace: r["namespace"].as_str().map(str::to_string),
            uid: r["uid"].as_str().map(str::to_string),
            ..Default::default()
        };
        BindingWrites {
            namespace,
            name: name.to_string(),
            create,
            spec_patch,
            status_patch: json!({ "status": status }),
            events: vec![binding_ref, template_ref],
        }
    }
}

/// The estimator calls a scheduler made, to be made again by a bare client ([`replay`]): a
/// connected client per cluster of the stub ([`PerCluster`]), and each binding's share of the
/// recorded calls.
pub struct EstimatorCalls {
    /// Per cluster name.
    clients: HashMap<String, EstimatorClient<Channel>>,
    /// Per binding (in the order of the writes): the calls it makes, all at once, before its
    /// writes.
    per_binding: Vec<Vec<Call>>,
}

impl EstimatorCalls {
    /// Connects to every port (untimed, as a scheduler is connected before its batch) and
    /// deals `recorded` out to `bindings` bindings in arrival order: binding `i` gets the
    /// calls `i·N/B .. (i+1)·N/B` (the scheduler's fan-outs arrive together, so a binding's
    /// share is mostly whole fan-outs).
    pub async fn connect(
        stub: &PerCluster,
        recorded: Vec<Call>,
        bindings: usize,
    ) -> anyhow::Result<EstimatorCalls> {
        use futures::StreamExt as _;
        let connected: Vec<anyhow::Result<EstimatorClient<Channel>>> = futures::stream::iter(
            stub.ports()
                .into_iter()
                .map(|port| bare_client(std::net::SocketAddr::from(([127, 0, 0, 1], port)))),
        )
        .buffered(32)
        .collect()
        .await;
        let clients = stub
            .clusters()
            .iter()
            .cloned()
            .zip(connected)
            .map(|(cluster, client)| client.map(|c| (cluster, c)))
            .collect::<anyhow::Result<HashMap<_, _>>>()?;
        let n = recorded.len();
        let b = bindings.max(1);
        let mut per_binding: Vec<Vec<Call>> = vec![Vec::new(); b];
        for (k, call) in recorded.into_iter().enumerate() {
            per_binding[k * b / n.max(1)].push(call);
        }
        Ok(EstimatorCalls {
            clients,
            per_binding,
        })
    }

    /// Calls in all.
    pub fn len(&self) -> usize {
        self.per_binding.iter().map(Vec::len).sum()
    }

    /// Distinct calls (cluster, method and request bytes): what coalescing identical
    /// requests could save at most.
    pub fn distinct(&self) -> usize {
        use prost::Message as _;
        let mut seen = std::collections::HashSet::new();
        for c in self.per_binding.iter().flatten() {
            let bytes = [
                c.replicas_request.as_ref().map(|m| m.encode_to_vec()),
                c.sets_request.as_ref().map(|m| m.encode_to_vec()),
                c.unschedulable_request.as_ref().map(|m| m.encode_to_vec()),
            ];
            seen.insert((c.cluster.as_str(), c.method, bytes));
        }
        seen.len()
    }

    /// Makes binding `i`'s calls at once, as a fan-out does; the number that failed.
    async fn fan_out(&self, i: usize) -> usize {
        let Some(calls) = self.per_binding.get(i) else {
            return 0;
        };
        let failed = futures::future::join_all(calls.iter().map(|c| {
            let mut client = self.clients[&c.cluster].clone();
            async move {
                if let Some(m) = &c.replicas_request {
                    client.max_available_replicas(request(c, m)).await.is_err()
                } else if let Some(m) = &c.sets_request {
                    client
                        .max_available_component_sets(request(c, m))
                        .await
                        .is_err()
                } else if let Some(m) = &c.unschedulable_request {
                    client
                        .get_unschedulable_replicas(request(c, m))
                        .await
                        .is_err()
                } else {
                    false
                }
            }
        }))
        .await;
        failed.into_iter().filter(|f| *f).count()
    }
}

/// The recorded call `c` with its message `m` as a request: its `object` metadata, and the
/// schedulers' default estimator timeout.
fn request<T: Clone>(c: &Call, m: &T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(m.clone());
    if let Some(o) = c.object.as_deref().and_then(|o| o.parse().ok()) {
        r.metadata_mut().insert(OBJECT_METADATA_KEY, o);
    }
    r.set_timeout(Duration::from_secs(3));
    r
}

/// The fastest any scheduler could go on this apiserver with these results: creates the
/// copies (untimed), then writes every binding's PATCHes and Events as fast as `concurrency`
/// bindings in flight allow, each binding's writes in order (as a scheduler must). With
/// `calls`, each binding first makes its share of them, all at once: the whole work of a
/// scheduler's batch, estimator calls included, with no decision to make. Returns bindings
/// done per second. The copies are deleted afterwards.
pub async fn replay(
    client: &Client,
    writes: &[BindingWrites],
    calls: Option<&EstimatorCalls>,
    concurrency: usize,
) -> anyhow::Result<f64> {
    use futures::StreamExt as _;
    let api_of = |ns: &Option<String>| binding_api(client, ns.as_deref());
    in_flight(
        writes.iter().map(|w| {
            let api = api_of(&w.namespace);
            async move {
                let obj: DynamicObject = serde_json::from_value(w.create.clone())?;
                api.create(&PostParams::default(), &obj).await?;
                Ok(())
            }
        }),
        32,
    )
    .await?;

    let start = Instant::now();
    let failed_calls = AtomicU64::new(0);
    let done = futures::stream::iter(writes.iter().enumerate().map(|(i, w)| {
        let api = api_of(&w.namespace);
        let failed_calls = &failed_calls;
        async move {
            if let Some(calls) = calls {
                let failed = calls.fan_out(i).await;
                failed_calls.fetch_add(failed as u64, Ordering::Relaxed);
            }
            api.patch(
                &w.name,
                &PatchParams::default(),
                &Patch::Merge(&w.spec_patch),
            )
            .await?;
            api.patch_status(
                &w.name,
                &PatchParams::default(),
                &Patch::Merge(&w.status_patch),
            )
            .await?;
            for involved in &w.events {
                let ns = involved
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_string());
                let events: Api<KubeEvent> = Api::namespaced(client.clone(), &ns);
                let ev = normal_event(
                    involved.clone(),
                    "bench-ceiling-",
                    "ScheduleBindingSucceed",
                    "Binding has been scheduled successfully.",
                    NOBODY,
                );
                events.create(&PostParams::default(), &ev).await?;
            }
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let elapsed = start.elapsed().as_secs_f64();
    let ok = done.iter().filter(|r| r.is_ok()).count();
    if let Some(Err(e)) = done.iter().find(|r| r.is_err()) {
        eprintln!(
            "bench: replay ceiling: {} write(s) failed, first: {e:#}",
            done.len() - ok
        );
    }
    let failed_calls = failed_calls.load(Ordering::Relaxed);
    if failed_calls > 0 {
        eprintln!("bench: fair ceiling: {failed_calls} estimator call(s) failed");
    }
    // best effort: a copy left behind answers to no scheduler
    let _ = in_flight(
        writes.iter().map(|w| {
            let api = api_of(&w.namespace);
            async move {
                api.delete(&w.name, &Default::default()).await?;
                Ok(())
            }
        }),
        32,
    )
    .await;
    Ok(ok as f64 / elapsed)
}

/// Copies of the solo batch written by the replay ceiling.
const REPLAY: &str = "-rc";

/// The rate (bindings/s, per number of requests in flight) at which a bare client writes what
/// a scheduler wrote for `bindings` (named `name + suffix`): their PATCHes and Events, in
/// order per binding, with no decision to make. With `calls`, each binding first makes its
/// share of the estimator calls the scheduler made (the fair ceiling of the estimator bench).
pub async fn replay_ceiling(
    client: &Client,
    bindings: &[BindingTemplate],
    suffix: &str,
    concurrency: &[usize],
    calls: Option<&EstimatorCalls>,
    busy: &[(&str, u32)],
    t0: Instant,
) -> anyhow::Result<BTreeMap<String, f64>> {
    let what = if calls.is_some() {
        "fair ceiling (estimator calls and writes"
    } else {
        "replay ceiling (writes"
    };
    let mut writes = Vec::new();
    for b in bindings {
        let api = binding_api(client, b.namespace.as_deref());
        let done = serde_json::to_value(api.get(&format!("{}{suffix}", b.name)).await?)?;
        writes.push(BindingWrites::from_scheduled(
            &done,
            &format!("{}{REPLAY}", b.name),
        ));
    }
    let mut by = BTreeMap::new();
    let pids: Vec<u32> = busy.iter().map(|(_, pid)| *pid).collect();
    for &c in concurrency {
        let cpu0 = cpu_snapshot(&pids);
        let started = Instant::now();
        match replay(client, &writes, calls, c).await {
            Ok(r) => {
                let used = cpu_since(&pids, &cpu0).into_iter().zip(busy);
                let used: Vec<String> = used
                    .map(|(s, (name, _))| format!("{name} {s:.1}"))
                    .collect();
                let cpu = if used.is_empty() {
                    String::new()
                } else {
                    format!("; CPU seconds: {}", used.join(", "))
                };
                log!(
                    t0,
                    "{what} of the {suffix} batch, {c} in flight): {r:.1} bindings/s \
                         ({:.1} s{cpu})",
                    started.elapsed().as_secs_f64()
                );
                by.insert(c.to_string(), r);
            }
            Err(e) => log!(t0, "{what}) with {c} in flight failed: {e:#}"),
        }
    }
    Ok(by)
}
